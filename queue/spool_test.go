package queue

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func newSpool(t *testing.T) *Spool {
	t.Helper()
	sp, err := Open(filepath.Join(t.TempDir(), "spool"))
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

func execReq(cmd string) *Request {
	return &Request{Kind: KindExec, Command: cmd, Cwd: "/home/me/src/app", Agent: "claude-code"}
}

// submit submits an exec request for cmd to sp and returns it.
func submit(t *testing.T, sp *Spool, cmd string) *Request {
	t.Helper()
	req := execReq(cmd)
	mustDo(t, sp.Submit(req))
	return req
}

// claim claims request id on sp now, failing the test if it cannot.
func claim(t *testing.T, sp *Spool, id string) *Claim {
	t.Helper()
	c, err := sp.Claim(id, time.Now())
	mustDo(t, err)
	return c
}

// watchUntil runs a watcher until done returns true for an event, and
// returns all events seen. It fails the test if that takes over 10 s.
func watchUntil(t *testing.T, sp *Spool, done func(WatchEvent) bool) []WatchEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var seen []WatchEvent
	for ev := range sp.Watch(ctx, WatchOptions{}) {
		seen = append(seen, ev)
		if done(ev) {
			return seen
		}
	}
	t.Fatalf("watcher ended before the awaited event; saw %+v", seen)
	return nil
}

func resultOf(t *testing.T, sp *Spool, id string) *Result {
	t.Helper()
	res, err := sp.ReadResult(id)
	if err != nil {
		t.Fatalf("result of %s: %v", id, err)
	}
	return res
}

func TestOpenCreatesPrivateLayout(t *testing.T) {
	t.Parallel()
	sp := newSpool(t)
	for _, sub := range append([]string{""}, subdirs...) {
		fi, err := os.Stat(filepath.Join(sp.Dir(), sub))
		if err != nil {
			t.Fatal(err)
		}
		if !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, want a 0700 directory", sub, fi.Mode())
		}
	}
}

func TestOpenRefusesUnsafeSpool(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		prepare func(t *testing.T, dir string) string
		problem string
		fix     string
	}{
		{"world writable", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "spool")
			mustDo(t, os.Mkdir(p, 0o700))
			mustDo(t, os.Chmod(p, 0o777))
			return p
		}, "writable by group or others", "chmod 700"},
		{"group writable subdir", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "spool")
			mustDo(t, os.MkdirAll(filepath.Join(p, "new"), 0o700))
			mustDo(t, os.Chmod(filepath.Join(p, "new"), 0o770))
			return p
		}, "writable by group or others", "chmod 700 " + "SPOOL/new"},
		{"symlink", func(t *testing.T, dir string) string {
			real := filepath.Join(dir, "real")
			mustDo(t, os.Mkdir(real, 0o700))
			p := filepath.Join(dir, "spool")
			mustDo(t, os.Symlink(real, p))
			return p
		}, "is a symlink", "real directory"},
		{"symlinked subdir", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "spool")
			mustDo(t, os.Mkdir(p, 0o700))
			mustDo(t, os.Mkdir(filepath.Join(dir, "elsewhere"), 0o700))
			mustDo(t, os.Symlink(filepath.Join(dir, "elsewhere"), filepath.Join(p, "new")))
			return p
		}, "is a symlink", "rm "},
		{"a file", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "spool")
			mustDo(t, os.WriteFile(p, nil, 0o600))
			return p
		}, "is not a directory", "mv "},
		{"someone else's", func(t *testing.T, dir string) string {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give a directory away")
			}
			p := filepath.Join(dir, "spool")
			mustDo(t, os.Mkdir(p, 0o700))
			mustDo(t, os.Chown(p, 4242, 4242))
			return p
		}, "owned by uid 4242", "spool of your own"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := tt.prepare(t, t.TempDir())
			_, err := Open(p)
			var pe *PermError
			if !errors.As(err, &pe) {
				t.Fatalf("Open = %v, want a *PermError", err)
			}
			msg := strings.ReplaceAll(err.Error(), p, "SPOOL")
			if !strings.Contains(msg, tt.problem) || !strings.Contains(msg, tt.fix) {
				t.Errorf("message %q should name %q and the fix %q", msg, tt.problem, tt.fix)
			}
		})
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestQuarantine puts each class of bad file in new/ the way a hostile or
// broken writer would, and checks the watcher moves it to bad/ with a
// reason, answers invalid when the name carries an id, and keeps serving.
func TestQuarantine(t *testing.T) {
	t.Parallel()
	valid := func(id string) string {
		return `{"version":1,"id":"` + id + `","kind":"exec","command":"git status"}`
	}
	tests := []struct {
		name    string
		file    string // name in new/
		make    func(t *testing.T, p string)
		reason  string
		invalid bool // an invalid result is written for the file's id
	}{
		{"over 1 MiB", "BIG1.json", func(t *testing.T, p string) {
			note := strings.Repeat("x", MaxRequestSize)
			mustDo(t, os.WriteFile(p, []byte(`{"version":1,"id":"BIG1","kind":"exec","command":"ls","note":"`+note+`"}`), 0o600))
		}, "over the 1048576 byte limit", true},
		{"symlink", "LINK1.json", func(t *testing.T, p string) {
			mustDo(t, os.Symlink("/etc/passwd", p))
		}, "a symlink", true},
		{"symlink to another spool file", "LINK2.json", func(t *testing.T, p string) {
			other := filepath.Join(filepath.Dir(p), "..", "cur", "OTHER.json")
			mustDo(t, os.WriteFile(other, []byte(valid("OTHER")), 0o600))
			mustDo(t, os.Symlink(other, p))
		}, "a symlink", true},
		{"not JSON", "TXT1.json", func(t *testing.T, p string) {
			mustDo(t, os.WriteFile(p, []byte("rm -rf ~\n"), 0o600))
		}, "not JSON", true},
		{"unknown version", "V2.json", func(t *testing.T, p string) {
			mustDo(t, os.WriteFile(p, []byte(`{"version":2,"id":"V2","kind":"exec","command":"ls"}`), 0o600))
		}, "unsupported version 2", true},
		{"missing fields", "MISS1.json", func(t *testing.T, p string) {
			mustDo(t, os.WriteFile(p, []byte(`{"version":1,"id":"MISS1","kind":"write"}`), 0o600))
		}, `needs a "path"`, true},
		{"id does not match the name", "NAME1.json", func(t *testing.T, p string) {
			mustDo(t, os.WriteFile(p, []byte(valid("OTHERNAME")), 0o600))
		}, "does not match the file name", true},
		{"id with ..", "DOTS1.json", func(t *testing.T, p string) {
			mustDo(t, os.WriteFile(p, []byte(valid("../../etc/x")), 0o600))
		}, "is not 1-64", true},
		{"non-UTF-8", "UTF1.json", func(t *testing.T, p string) {
			mustDo(t, os.WriteFile(p, []byte("{\"version\":1,\"id\":\"UTF1\",\"kind\":\"exec\",\"command\":\"ls \xc3\x28\"}"), 0o600))
		}, "UTF-8", true},
		{"directory", "DIR1.json", func(t *testing.T, p string) {
			mustDo(t, os.Mkdir(p, 0o700))
		}, "a directory", true},
		{"FIFO", "FIFO1.json", func(t *testing.T, p string) {
			mustDo(t, syscall.Mkfifo(p, 0o600))
		}, "a FIFO", true},
		{"unreadable", "PERM1.json", func(t *testing.T, p string) {
			if os.Geteuid() == 0 {
				t.Skip("root reads mode 000 files")
			}
			mustDo(t, os.WriteFile(p, []byte(valid("PERM1")), 0o000))
		}, "permission denied", true},
		{"name not an id", "..json", func(t *testing.T, p string) {
			mustDo(t, os.WriteFile(p, []byte(valid("X")), 0o600))
		}, `file name "..json" is not <id>.json`, false},
		{"name without .json", "notes.txt", func(t *testing.T, p string) {
			mustDo(t, os.WriteFile(p, []byte("todo"), 0o600))
		}, `file name "notes.txt"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sp := newSpool(t)
			tt.make(t, sp.path(dirNew, tt.file))
			good := submit(t, sp, "go vet ./...")

			invalidSeen, goodSeen := false, false
			watchUntil(t, sp, func(ev WatchEvent) bool {
				switch {
				case ev.Op == Invalid:
					invalidSeen = true
				case ev.Op == Pending && ev.ID == good.ID:
					goodSeen = true
				}
				return invalidSeen && goodSeen
			})
			if exists(sp.path(dirNew, tt.file)) {
				t.Fatalf("%s is still in new/", tt.file)
			}
			whys, _ := filepath.Glob(filepath.Join(sp.Dir(), dirBad, "*.why"))
			if len(whys) != 1 {
				t.Fatalf("want one .why in bad/, got %v", whys)
			}
			why, _ := os.ReadFile(whys[0])
			if !strings.Contains(string(why), tt.reason) || strings.Count(string(why), "\n") != 1 {
				t.Errorf(".why = %q, want one line saying %q", why, tt.reason)
			}
			id := stemOf(tt.file)
			if tt.invalid {
				res := resultOf(t, sp, id)
				if res.Status != StatusInvalid || !strings.Contains(res.Reason, tt.reason) {
					t.Errorf("result %+v, want invalid saying %q", res, tt.reason)
				}
			} else if outs, _ := filepath.Glob(filepath.Join(sp.Dir(), dirOut, "*.json")); len(outs) != 0 {
				t.Errorf("results written for a file without an id: %v", outs)
			}
		})
	}
}

func TestSymlinkTargetUntouched(t *testing.T) {
	t.Parallel()
	sp := newSpool(t)
	target := filepath.Join(t.TempDir(), "secret")
	mustDo(t, os.WriteFile(target, []byte("do not move me"), 0o600))
	mustDo(t, os.Symlink(target, sp.RequestPath("EVIL1")))
	_, err := sp.Claim("EVIL1", time.Now())
	var inv *InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("Claim = %v, want invalid", err)
	}
	if data, err := os.ReadFile(target); err != nil || string(data) != "do not move me" {
		t.Fatalf("symlink target changed: %q, %v", data, err)
	}
	if fi, err := os.Lstat(sp.path(dirBad, "EVIL1.json")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("bad/EVIL1.json should be the link itself: %v", err)
	}
}

func TestHalfWrittenTmpIgnored(t *testing.T) {
	t.Parallel()
	sp := newSpool(t)
	half := sp.path(dirTmp, "HALF1.json")
	mustDo(t, os.WriteFile(half, []byte(`{"version":1,"id":"HALF1","kind":"ex`), 0o600))
	good := submit(t, sp, "make test")
	evs := watchUntil(t, sp, func(ev WatchEvent) bool { return ev.Op == Pending && ev.ID == good.ID })
	for _, ev := range evs {
		if ev.ID == "HALF1" || ev.Op == Invalid {
			t.Errorf("the half-written file was acted on: %+v", ev)
		}
	}
	if !exists(half) || exists(sp.ResultPath("HALF1")) {
		t.Error("the half-written file was moved or answered")
	}
	if bad, _ := os.ReadDir(sp.path(dirBad, "")); len(bad) != 0 {
		t.Errorf("bad/ holds %d files", len(bad))
	}
}

func TestDuplicateID(t *testing.T) {
	t.Parallel()
	sp := newSpool(t)
	first := submit(t, sp, "go build ./...")
	if err := sp.Submit(&Request{ID: first.ID, Kind: KindExec, Command: "rm -rf ~"}); !errors.Is(err, ErrExists) {
		t.Fatalf("second Submit of a pending id = %v, want ErrExists", err)
	}
	c := claim(t, sp, first.ID)
	mustDo(t, c.Finish(Result{Status: StatusDone, ExitCode: new(int)}))
	if err := sp.Submit(&Request{ID: first.ID, Kind: KindExec, Command: "rm -rf ~"}); !errors.Is(err, ErrExists) {
		t.Fatalf("Submit of an answered id = %v, want ErrExists", err)
	}

	// A writer that skips Submit and drops a file with a used id.
	dup := `{"version":1,"id":"` + first.ID + `","kind":"exec","command":"rm -rf ~"}`
	mustDo(t, os.WriteFile(sp.RequestPath(first.ID), []byte(dup), 0o600))
	if _, err := sp.Claim(first.ID, time.Now()); !errors.Is(err, ErrExists) {
		t.Fatalf("Claim of a reused id = %v, want ErrExists", err)
	}
	if exists(sp.RequestPath(first.ID)) {
		t.Error("the duplicate is still pending")
	}
	if res := resultOf(t, sp, first.ID); res.Status != StatusDone {
		t.Errorf("the first request's result was replaced: %+v", res)
	}
	why, _ := os.ReadFile(sp.path(dirBad, first.ID+".why"))
	if !strings.Contains(string(why), "duplicate id") {
		t.Errorf(".why = %q", why)
	}
}

func TestFinishEveryStatusOnce(t *testing.T) {
	t.Parallel()
	for _, st := range []Status{StatusDone, StatusDenied, StatusTimeout, StatusKilled, StatusExpired,
		StatusInterrupted, StatusInvalid, StatusFailed, StatusDecided} {
		t.Run(string(st), func(t *testing.T) {
			t.Parallel()
			sp := newSpool(t)
			req := submit(t, sp, "go test ./...")
			c := claim(t, sp, req.ID)
			if !exists(sp.path(dirCur, req.ID+".json")) || exists(sp.RequestPath(req.ID)) {
				t.Fatal("a claimed request must be in cur/ and not in new/")
			}
			code := 3
			want := Result{Status: st, Decision: Allow, DecidedBy: ByHuman, Reason: "r", ExitCode: &code, Log: LogRel(req.ID)}
			mustDo(t, c.Finish(want))
			got := resultOf(t, sp, req.ID)
			if got.Status != st || got.ID != req.ID || got.Version != Version || *got.ExitCode != 3 {
				t.Errorf("result %+v", got)
			}
			if err := c.Finish(Result{Status: StatusDenied}); !errors.Is(err, ErrResulted) {
				t.Errorf("second Finish = %v, want ErrResulted", err)
			}
			// Even a second writer that bypasses the claim cannot replace it.
			if err := sp.writeResult(Result{ID: req.ID, Status: StatusDenied}); !errors.Is(err, ErrResulted) {
				t.Errorf("second writeResult = %v, want ErrResulted", err)
			}
			if again := resultOf(t, sp, req.ID); again.Status != st {
				t.Errorf("result changed to %s", again.Status)
			}
			if _, err := sp.Claim(req.ID, time.Now()); !errors.Is(err, ErrResulted) {
				t.Errorf("Claim after the result = %v, want ErrResulted", err)
			}
		})
	}
}

func TestClaimRace(t *testing.T) {
	t.Parallel()
	sp := newSpool(t)
	for range 50 {
		req := submit(t, sp, "make")
		var wins sync.WaitGroup
		var mu sync.Mutex
		won := 0
		for range 4 {
			wins.Go(func() {
				c, err := sp.Claim(req.ID, time.Now())
				if err == nil {
					mu.Lock()
					won++
					mu.Unlock()
					_ = c.Finish(Result{Status: StatusDone, ExitCode: new(int)})
					return
				}
				if !errors.Is(err, ErrBusy) && !errors.Is(err, ErrClaimed) && !errors.Is(err, ErrResulted) && !errors.Is(err, ErrNotFound) {
					t.Errorf("losing Claim = %v", err)
				}
			})
		}
		wins.Wait()
		if won != 1 {
			t.Fatalf("%d claimers won request %s, want exactly 1", won, req.ID)
		}
	}
}

func TestExpired(t *testing.T) {
	t.Parallel()
	sp := newSpool(t)
	old := execReq("npm publish")
	old.CreatedAt = time.Now().Add(-time.Hour)
	old.ExpiresAt = time.Now().Add(-time.Minute)
	mustDo(t, sp.Submit(old))
	watchUntil(t, sp, func(ev WatchEvent) bool { return ev.Op == Expired && ev.ID == old.ID })
	if res := resultOf(t, sp, old.ID); res.Status != StatusExpired || res.Decision != Deny {
		t.Fatalf("result %+v, want expired/deny", res)
	}

	// A person acting on it after its time does not get to run it.
	late := execReq("npm publish")
	late.ExpiresAt = time.Now().Add(time.Minute)
	mustDo(t, sp.Submit(late))
	if _, err := sp.Claim(late.ID, time.Now().Add(2*time.Minute)); !errors.Is(err, ErrExpired) {
		t.Fatalf("Claim after expiry = %v, want ErrExpired", err)
	}
	if res := resultOf(t, sp, late.ID); res.Status != StatusExpired {
		t.Fatalf("result %+v, want expired", res)
	}
}

func TestRecoverInterrupted(t *testing.T) {
	t.Parallel()
	sp := newSpool(t)
	live, dead := execReq("sleep 600"), execReq("go test ./...")
	mustDo(t, sp.Submit(live))
	mustDo(t, sp.Submit(dead))
	liveClaim := claim(t, sp, live.ID)
	deadClaim := claim(t, sp, dead.ID)
	deadClaim.Close() // its actor died: the lock is gone, no result

	ids, err := sp.Recover()
	mustDo(t, err)
	if len(ids) != 1 || ids[0] != dead.ID {
		t.Fatalf("Recover = %v, want only %s", ids, dead.ID)
	}
	if res := resultOf(t, sp, dead.ID); res.Status != StatusInterrupted {
		t.Errorf("result %+v, want interrupted", res)
	}
	if _, err := sp.ReadResult(live.ID); !errors.Is(err, ErrNoResult) {
		t.Errorf("a live claim was answered: %v", err)
	}
	if ids, _ := sp.Recover(); len(ids) != 0 {
		t.Errorf("second Recover answered %v", ids)
	}
	mustDo(t, liveClaim.Finish(Result{Status: StatusDone, ExitCode: new(int)}))

	// A watcher started later does the same on its own.
	again := submit(t, sp, "make lint")
	c := claim(t, sp, again.ID)
	c.Close()
	watchUntil(t, sp, func(ev WatchEvent) bool { return ev.Op == Interrupted && ev.ID == again.ID })
}

func TestHalfDoneClaimNotPendingAgain(t *testing.T) {
	t.Parallel()
	sp := newSpool(t)
	req := submit(t, sp, "terraform apply")
	// An actor killed between the claim's link and unlink leaves the one
	// file in both new/ and cur/.
	mustDo(t, os.Link(sp.RequestPath(req.ID), sp.path(dirCur, req.ID+".json")))
	if _, err := sp.Claim(req.ID, time.Now()); !errors.Is(err, ErrClaimed) {
		t.Fatalf("Claim = %v, want ErrClaimed", err)
	}
	if exists(sp.RequestPath(req.ID)) {
		t.Error("the half-claimed request is still pending")
	}
	ids, _ := sp.Recover()
	if len(ids) != 1 {
		t.Fatalf("Recover = %v", ids)
	}
}

func TestReplacedAfterShown(t *testing.T) {
	t.Parallel()
	sp := newSpool(t)
	req := submit(t, sp, "git status")
	shown, err := sp.peek(req.ID + ".json")
	mustDo(t, err)
	// The agent swaps the file for another command with the same id.
	swap := `{"version":1,"id":"` + req.ID + `","kind":"exec","command":"git push --force"}`
	tmp := sp.path(dirTmp, "swap")
	mustDo(t, os.WriteFile(tmp, []byte(swap), 0o600))
	mustDo(t, os.Rename(tmp, sp.RequestPath(req.ID)))
	c := claim(t, sp, req.ID)
	defer c.Close()
	if c.Request.Same(shown) {
		t.Fatal("the swapped request compares the same as the one shown")
	}
	if c.Request.Command != "git push --force" {
		t.Fatalf("claimed %q, want what the file holds now", c.Request.Command)
	}
	again, _ := sp.peek(req.ID + ".json")
	if again != nil {
		t.Fatal("still pending after the claim")
	}
}

func TestWakeFIFO(t *testing.T) {
	t.Parallel()
	sp := newSpool(t)
	req := execReq("go test ./...")
	req.ID = NewID()
	w, err := sp.NewWaiter(req.ID)
	mustDo(t, err)
	defer w.Close()
	if fi, err := os.Lstat(sp.WakePath(req.ID)); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("no FIFO at out/%s.wake: %v", req.ID, err)
	}
	mustDo(t, sp.Submit(req))
	got := make(chan *Result, 1)
	go func() {
		// Far longer than the test can take: only the wake-up returns early.
		res, _ := w.Wait(time.Hour)
		got <- res
	}()
	c := claim(t, sp, req.ID)
	mustDo(t, c.Finish(Result{Status: StatusDenied, Decision: Deny, DecidedBy: ByHuman}))
	select {
	case res := <-got:
		if res == nil || res.Status != StatusDenied {
			t.Fatalf("woken with %+v", res)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the waiter was not woken by the result")
	}
	if exists(sp.WakePath(req.ID)) {
		t.Error("the actor left the FIFO behind")
	}
}

func TestWakeWithoutReaderDoesNotBlock(t *testing.T) {
	t.Parallel()
	sp := newSpool(t)
	req := submit(t, sp, "true")
	c := claim(t, sp, req.ID)
	mustDo(t, syscall.Mkfifo(sp.WakePath(req.ID), 0o600)) // a writer that died while it ran
	mustDo(t, c.Finish(Result{Status: StatusDone, ExitCode: new(int)}))
	if exists(sp.WakePath(req.ID)) {
		t.Error("FIFO not removed")
	}

	// Dead before anyone claimed it: the claim answers it expired, and
	// the answer does not block either.
	req = submit(t, sp, "true")
	mustDo(t, syscall.Mkfifo(sp.WakePath(req.ID), 0o600))
	old := time.Now().Add(-time.Minute) // made before the writer's grace
	mustDo(t, os.Chtimes(sp.WakePath(req.ID), old, old))
	if _, err := sp.Claim(req.ID, time.Now()); !errors.Is(err, ErrExpired) {
		t.Fatalf("claim of a dead writer's request: %v, want ErrExpired", err)
	}
	if exists(sp.WakePath(req.ID)) {
		t.Error("FIFO not removed")
	}
}

func TestWakePathNotFIFOLeftAlone(t *testing.T) {
	t.Parallel()
	sp := newSpool(t)
	req := submit(t, sp, "true")
	mustDo(t, os.WriteFile(sp.WakePath(req.ID), []byte("keep"), 0o600))
	c := claim(t, sp, req.ID)
	mustDo(t, c.Finish(Result{Status: StatusDone, ExitCode: new(int)}))
	if data, _ := os.ReadFile(sp.WakePath(req.ID)); string(data) != "keep" {
		t.Errorf("a regular file at the wake path was written to: %q", data)
	}
}

func TestWatchSeesArrivalsAndDepartures(t *testing.T) {
	t.Parallel()
	sp := newSpool(t)
	before := submit(t, sp, "ls")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	events := sp.Watch(ctx, WatchOptions{})
	next := func() WatchEvent {
		t.Helper()
		ev, ok := <-events
		if !ok {
			t.Fatal("watcher closed early")
		}
		return ev
	}
	if ev := next(); ev.Op != Pending || ev.ID != before.ID || ev.Request.Command != "ls" {
		t.Fatalf("first event %+v", ev)
	}
	after := submit(t, sp, "git log -n 3")
	if ev := next(); ev.Op != Pending || ev.ID != after.ID {
		t.Fatalf("event %+v, want the new request", ev)
	}
	c := claim(t, sp, before.ID)
	defer c.Close()
	if ev := next(); ev.Op != Gone || ev.ID != before.ID {
		t.Fatalf("event %+v, want %s gone", ev, before.ID)
	}
	cancel()
	for range events {
	}
}

func TestWatchPollingFallback(t *testing.T) {
	t.Parallel()
	sp := newSpool(t)
	// Where the filesystem gives no events (NFS), the timed rescan alone
	// must find arrivals: drive a watcher with no fsnotify behind it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w := &watcher{s: sp, opt: WatchOptions{Now: time.Now}, out: make(chan WatchEvent, 8),
		pending: map[string]pendingFile{}, finished: map[string]bool{}, ctx: ctx}
	w.rescan()
	req := submit(t, sp, "make")
	w.rescan() // what the timer does where no events come
	select {
	case ev := <-w.out:
		if ev.Op != Pending || ev.ID != req.ID {
			t.Fatalf("event %+v", ev)
		}
	default:
		t.Fatal("rescan did not report the new request")
	}
}

// TestRecoverAfterListWhileForking: List's probe of a claim's lock, and a
// child forked elsewhere in the process that inherits it until exec, hold
// the lock for a moment; Recover must not mistake that for a live actor.
func TestRecoverAfterListWhileForking(t *testing.T) {
	t.Parallel()
	sp := newSpool(t)
	stop := make(chan struct{})
	forking := make(chan struct{})
	go func() {
		defer close(forking)
		for {
			select {
			case <-stop:
				return
			default:
				_ = exec.Command("/bin/true").Run()
			}
		}
	}()
	defer func() { close(stop); <-forking }()
	for range 300 {
		req := submit(t, sp, "go test ./...")
		c := claim(t, sp, req.ID)
		c.Close() // its actor died
		if _, err := sp.List(); err != nil {
			t.Fatal(err)
		}
		ids, err := sp.Recover()
		mustDo(t, err)
		if len(ids) != 1 || ids[0] != req.ID {
			t.Fatalf("Recover = %v, want the orphan %s", ids, req.ID)
		}
	}
}

// TestDefaultDirAgrees: without XDG_RUNTIME_DIR the default spool is
// /run/user/UID/sluice when that directory is the user's, where a console
// started with XDG_RUNTIME_DIR (which is /run/user/UID) has it, so that
// an agent started without it meets the console; otherwise the state
// directory.
func TestDefaultDirAgrees(t *testing.T) {
	base := t.TempDir()
	old := runUserBase
	runUserBase = base
	t.Cleanup(func() { runUserBase = old })
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	uid := os.Getuid()
	mine := filepath.Join(base, strconv.Itoa(uid))
	t.Setenv("XDG_RUNTIME_DIR", "")
	if d, _ := DefaultDir(); d != filepath.Join(state, "sluice", "spool") {
		t.Errorf("no %s: %s, want the state directory", mine, d)
	}
	if err := os.Mkdir(mine, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{"", mine} {
		t.Setenv("XDG_RUNTIME_DIR", env)
		if d, _ := DefaultDir(); d != filepath.Join(mine, "sluice") {
			t.Errorf("XDG_RUNTIME_DIR=%q: %s, want %s/sluice", env, d, mine)
		}
	}
	t.Setenv("XDG_RUNTIME_DIR", "")
	// Not the user's own: a directory others may write, a symlink.
	if err := os.Chmod(mine, 0o777); err != nil {
		t.Fatal(err)
	}
	if d, _ := DefaultDir(); d != filepath.Join(state, "sluice", "spool") {
		t.Errorf("world-writable %s: %s, want the state directory", mine, d)
	}
	if err := os.Remove(mine); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), mine); err != nil {
		t.Fatal(err)
	}
	if d, _ := DefaultDir(); d != filepath.Join(state, "sluice", "spool") {
		t.Errorf("symlinked %s: %s, want the state directory", mine, d)
	}
}

// TestEmptyResultIsNone: a result file an operating-system crash left
// empty (results are not synced when the audit log holds the step) reads
// as no result, not as a broken answer.
func TestEmptyResultIsNone(t *testing.T) {
	t.Parallel()
	sp := newSpool(t)
	req := submit(t, sp, "true")
	mustDo(t, os.WriteFile(sp.ResultPath(req.ID), nil, 0o600))
	if _, err := sp.ReadResult(req.ID); !errors.Is(err, ErrNoResult) || !errors.Is(err, ErrEmptyResult) {
		t.Fatalf("empty result: %v, want ErrEmptyResult (an ErrNoResult)", err)
	}
}

// TestEmptyResultEndsTheWait: a writer whose result file is empty (and
// so will never be written) stops waiting once its request expires,
// rather than wait for ever.
func TestEmptyResultEndsTheWait(t *testing.T) {
	t.Parallel()
	sp := newSpool(t)
	req := execReq("make")
	req.ID, req.ExpiresAt = NewID(), time.Now().Add(50*time.Millisecond)
	w, err := sp.NewWaiter(req.ID)
	mustDo(t, err)
	defer w.Close()
	mustDo(t, sp.Submit(req))
	mustDo(t, os.WriteFile(sp.ResultPath(req.ID), nil, 0o600)) // a hostile or crashed writer of out/
	done := make(chan error, 1)
	go func() {
		_, err := sp.await(context.Background(), w, req, SendOptions{})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrEmptyResult) {
			t.Fatalf("await: %v, want ErrEmptyResult", err)
		}
	case <-time.After(20 * time.Second): // a hang guard, not a timing
		t.Fatal("the writer still waits on an empty result 20 s after its request expired")
	}
}

// A backlog found at start (an engine that was down during a flood) is
// settled several files at once: every request is still reported once and
// in the directory's order, bad files are quarantined, expired requests
// and those whose writer is gone are answered expired, as one at a time.
func TestWatchBacklog(t *testing.T) {
	t.Parallel()
	sp := newSpool(t)
	want := map[string]WatchOp{}
	for i := range 300 {
		req := execReq(fmt.Sprintf("echo %d", i))
		if i%5 == 1 {
			req.CreatedAt = time.Now().Add(-2 * time.Minute)
			req.ExpiresAt = time.Now().Add(-time.Minute)
		}
		mustDo(t, sp.Submit(req))
		switch i % 5 {
		case 1:
			want[req.ID] = Expired
		case 2:
			mustDo(t, syscall.Mkfifo(sp.WakePath(req.ID), 0o600))
			old := time.Now().Add(-time.Minute)
			mustDo(t, os.Chtimes(sp.WakePath(req.ID), old, old))
			want[req.ID] = Expired // its writer is gone
		default:
			want[req.ID] = Pending
		}
		if i%5 == 3 {
			bad := NewID()
			mustDo(t, os.WriteFile(filepath.Join(sp.Dir(), "new", bad+".json"), []byte(`{"id":"`+bad+`","kind":"exec"`), 0o600))
			want[bad] = Invalid
		}
	}
	dir, err := os.Open(filepath.Join(sp.Dir(), "new"))
	mustDo(t, err)
	entries, err := dir.ReadDir(-1) // unsorted, as the rescan reads it
	dir.Close()
	mustDo(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w := &watcher{s: sp, opt: WatchOptions{Now: time.Now}, out: make(chan WatchEvent, len(want)+1),
		pending: map[string]pendingFile{}, finished: map[string]bool{}, ctx: ctx}
	w.rescan()
	close(w.out)
	var order []string
	for ev := range w.out {
		op, ok := want[ev.ID]
		if !ok || op != ev.Op {
			t.Fatalf("event %v for %s, want %v", ev.Op, ev.ID, op)
		}
		delete(want, ev.ID)
		order = append(order, ev.ID)
	}
	if len(want) != 0 {
		t.Fatalf("%d requests not reported", len(want))
	}
	var dirOrder []string
	for _, e := range entries {
		dirOrder = append(dirOrder, stemOf(e.Name()))
	}
	if !slices.Equal(order, dirOrder) {
		t.Error("events not in the directory's order")
	}
	if n := len(w.pending); n != 180 {
		t.Errorf("%d requests left pending, want 180", n)
	}
	left, err := os.ReadDir(filepath.Join(sp.Dir(), "new"))
	mustDo(t, err)
	if len(left) != 180 {
		t.Errorf("%d files left in new/, want the 180 pending", len(left))
	}
}

// A watcher stopped in the middle of a rescan's batch reports nothing gone
// that is still in new/: the files it had not settled again keep their
// place (an engine shutting down must not take them for withdrawn).
func TestWatchCancelledMidBatch(t *testing.T) {
	sp := newSpool(t)
	for range 200 {
		mustDo(t, sp.Submit(execReq("echo hi")))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var calls atomic.Int64
	var armed atomic.Bool
	now := func() time.Time {
		if armed.Load() && calls.Add(1) == 2 { // rescan's Now, then lookAll's
			cancel()
		}
		return time.Now()
	}
	w := &watcher{s: sp, opt: WatchOptions{Now: now}, out: make(chan WatchEvent, 1000),
		pending: map[string]pendingFile{}, finished: map[string]bool{}, ctx: ctx}
	w.rescan()
	for len(w.out) > 0 {
		<-w.out
	}
	if len(w.pending) != 200 {
		t.Fatalf("%d pending", len(w.pending))
	}
	// every file touched: its stamp differs, the content does not
	later := time.Now().Add(time.Second)
	ents, _ := os.ReadDir(filepath.Join(sp.Dir(), "new"))
	for _, e := range ents {
		mustDo(t, os.Chtimes(filepath.Join(sp.Dir(), "new", e.Name()), later, later))
	}
	armed.Store(true)
	w.rescan()
	close(w.out)
	gone := 0
	for ev := range w.out {
		if ev.Op == Gone && exists(sp.path(dirNew, ev.ID+".json")) {
			gone++
		}
	}
	if gone > 0 {
		t.Errorf("%d requests still in new/ reported Gone after ctx ended mid-batch", gone)
	}
}

// ledger is a Recorder that holds what it recorded and says the last run
// event of a request, as the audit log does (RunLedger).
type ledger struct {
	memRecorder
}

func (l *ledger) LastRun(req *Request) (*Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.events) - 1; i >= 0; i-- {
		ev := l.events[i]
		switch ev.Event {
		case EventStarted, EventFinished, EventTimeout, EventKilled, EventInterrupted:
			if ev.ID == req.ID {
				return &ev, nil
			}
		}
	}
	return nil, nil
}

// deadActor is a spool whose actor died holding three claims: one never
// started, one started and not ended, one ended (exit code code, decided
// by actor) whose result was lost; the audit log (the ledger) says so.
func deadActor(t *testing.T, code int, actor string) (sp *Spool, l *ledger, never, started, ended *Request) {
	t.Helper()
	sp = newSpool(t)
	l = &ledger{}
	sp.Recorder = l
	never, started, ended = execReq("make lint"), execReq("terraform apply"), execReq("go test ./...")
	for _, r := range []*Request{never, started, ended} {
		mustDo(t, sp.Submit(r))
		c := claim(t, sp, r.ID)
		c.Close() // its actor died
	}
	mustDo(t, l.Record(Event{ID: started.ID, Event: EventStarted}))
	mustDo(t, l.Record(Event{ID: ended.ID, Event: EventStarted}))
	mustDo(t, l.Record(Event{ID: ended.ID, Event: EventFinished, Status: StatusDone, ExitCode: &code, Actor: actor}))
	return sp, l, never, started, ended
}

// TestRecoverAnswersFromTheLog: an orphaned claim is answered as the
// audit log has it: interrupted only when the run never started; stopped
// when it started and did not end (never "not run"); and as it ended,
// exit code and all, when only the result was lost; one audit line for
// each fact, none for what the log already holds.
func TestRecoverAnswersFromTheLog(t *testing.T) {
	t.Parallel()
	sp, l, never, started, ended := deadActor(t, 3, "alice")
	before := len(l.events)

	ids, err := sp.Recover()
	mustDo(t, err)
	if len(ids) != 3 {
		t.Fatalf("Recover answered %v, want all three", ids)
	}
	if res := resultOf(t, sp, never.ID); res.Status != StatusInterrupted {
		t.Errorf("never started: %s, want interrupted", res.Status)
	}
	if res := resultOf(t, sp, started.ID); res.Status != StatusStopped || !strings.Contains(res.Reason, "check its effects") {
		t.Errorf("started: %s %q, want stopped", res.Status, res.Reason)
	}
	res := resultOf(t, sp, ended.ID)
	if res.Status != StatusDone || res.ExitCode == nil || *res.ExitCode != 3 || res.DecidedBy != ByHuman {
		t.Errorf("ended: %+v, want done, exit 3, by a person", res)
	}
	var noted []string
	for _, ev := range l.events[before:] {
		noted = append(noted, string(ev.Event)+" "+ev.ID+" "+string(ev.Status))
	}
	want := []string{"interrupted " + never.ID + " interrupted", "interrupted " + started.ID + " stopped"}
	slices.Sort(noted)
	slices.Sort(want)
	if !slices.Equal(noted, want) {
		t.Errorf("recorded %q, want %q", noted, want)
	}
}

// TestRecoverStopsOrphansFirst: a recovery that answers a run that
// started "stopped" first kills what the dead actor's runs left running
// (StopOrphans), before the answer is recorded; one that answers a run
// that never started, or one that ended, kills nothing.
func TestRecoverStopsOrphansFirst(t *testing.T) {
	t.Parallel()
	sp, l, never, started, ended := deadActor(t, 0, "")
	var order []string
	sp.StopOrphans = func() { order = append(order, fmt.Sprintf("kill after %d lines", len(l.events))) }
	for _, r := range []*Request{never, ended} {
		if !sp.RecoverID(r.ID) {
			t.Fatalf("%s not recovered", r.Command)
		}
	}
	if len(order) != 0 {
		t.Fatalf("recovering runs that never started or ended killed: %q", order)
	}
	before := len(l.events)
	if !sp.RecoverID(started.ID) {
		t.Fatal("the started run not recovered")
	}
	if want := fmt.Sprintf("kill after %d lines", before); !slices.Equal(order, []string{want}) || len(l.events) != before+1 {
		t.Errorf("the started run's recovery: %q, %d lines after %d; want the kill once, before its line", order, len(l.events), before)
	}
}

// TestTellWriter: an actor that cannot write a result yet tells the
// waiting writer why through its FIFO (which needs no space), once, with
// a newline in the text flattened; the FIFO stays for the wake that comes
// with the result.
func TestTellWriter(t *testing.T) {
	t.Parallel()
	sp := newSpool(t)
	req := submit(t, sp, "make deploy")
	w, err := sp.NewWaiter(req.ID)
	mustDo(t, err)
	defer w.Close()
	sp.TellWriter(req.ID, "no space\nleft")
	if _, err := w.Wait(time.Second); !errors.Is(err, ErrNoResult) {
		t.Fatalf("Wait = %v, want no result yet", err)
	}
	if n := w.Notice(); n != "no space left" {
		t.Errorf("Notice = %q, want the actor's text", n)
	}
	if n := w.Notice(); n != "" {
		t.Errorf("a notice was taken twice: %q", n)
	}
	c := claim(t, sp, req.ID)
	mustDo(t, c.Finish(Result{Status: StatusDone, ExitCode: new(int)}))
	if res, err := w.Wait(10 * time.Second); err != nil || res.Status != StatusDone {
		t.Errorf("after the notice, the result: %v %v", res, err)
	}
}
