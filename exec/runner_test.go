//go:build unix

package exec

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/goleak"

	"github.com/sluice-dev/sluice/exec/sandbox"
	"github.com/sluice-dev/sluice/queue"
)

// runHelperEnv makes the test binary act as a helper process (os/exec's
// TestHelperProcess pattern, done in TestMain so no test framework output
// mixes with the helper's).
const runHelperEnv = "SLUICE_EXEC_RUN_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(runHelperEnv) != "" {
		os.Exit(runHelper(os.Args[1:]))
	}
	// Run as sluice-box (a link to this binary, network_test.go's), it
	// is the helper.
	if filepath.Base(os.Args[0]) == "sluice-box" {
		sandbox.BoxExit(os.Args[1:])
	}
	// A run cgroup that still holds zombies (a fork bomb's, until init
	// reaps them) is removed by a goroutine of its own once they are gone;
	// it may outlive the test that made it.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/sluice-dev/sluice/exec/sandbox.(*Cgroup).closeWhenIdle"))
}

// runHelper implements "stream N": write N bytes of runStream to stdout.
func runHelper(args []string) int {
	if len(args) != 2 || args[0] != "stream" {
		fmt.Fprintln(os.Stderr, "helper: usage: stream N")
		return 2
	}
	n, err := strconv.ParseInt(args[1], 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2
	}
	if err := writeStream(os.Stdout, n); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	return 0
}

// writeStream writes n deterministic pseudo-random bytes (every byte value
// occurs) to w.
func writeStream(w interface{ Write([]byte) (int, error) }, n int64) error {
	src := rand.NewChaCha8([32]byte{'s', 'l', 'u', 'i', 'c', 'e'})
	buf := make([]byte, 64<<10)
	for n > 0 {
		b := buf[:min(int64(len(buf)), n)]
		_, _ = src.Read(b)
		if _, err := w.Write(b); err != nil {
			return err
		}
		n -= int64(len(b))
	}
	return nil
}

// streamCommand is a shell command that writes n bytes of the stream.
func streamCommand(t testing.TB, n int64) (cmd string, env map[string]string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("'%s' stream %d", exe, n), map[string]string{runHelperEnv: "1"}
}

var runSeq atomic.Int64

// execReq is an exec request running cmd in a fresh temporary directory.
func execReq(t testing.TB, cmd string) *queue.Request {
	t.Helper()
	return &queue.Request{
		Version: queue.Version,
		ID:      fmt.Sprintf("r%d-%d", os.Getpid(), runSeq.Add(1)),
		Kind:    queue.KindExec,
		Command: cmd,
		Cwd:     t.TempDir(),
	}
}

func testRunner() *Runner {
	return &Runner{BaseEnv: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}}
}

type runOut struct {
	res queue.Result
	sum string
	log []byte
}

// run runs req with its log in a temporary directory and fails the test
// if Run takes longer than limit (a hang guard, not a speed assertion).
func run(ctx context.Context, t testing.TB, r *Runner, req *queue.Request, opt Options, limit time.Duration) runOut {
	t.Helper()
	if opt.LogPath == "" {
		opt.LogPath = filepath.Join(t.TempDir(), req.ID+".log")
	}
	done := make(chan runOut, 1)
	go func() {
		res, sum := r.Run(ctx, req, opt)
		done <- runOut{res: res, sum: sum}
	}()
	var out runOut
	select {
	case out = <-done:
	case <-time.After(limit):
		t.Fatalf("Run(%q) did not return within %s", req.Command, limit)
	}
	// Read the log unless it is big (the large-output test checks its own).
	if fi, err := os.Stat(opt.LogPath); err == nil && fi.Size() <= 1<<20 {
		log, err := os.ReadFile(opt.LogPath)
		if err != nil {
			t.Fatal(err)
		}
		out.log = log
	}
	return out
}

func sum256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// checkRan asserts the fields every run that started fills.
func checkRan(t *testing.T, req *queue.Request, o runOut) {
	t.Helper()
	r := o.res
	if r.ID != req.ID || r.Version != queue.Version {
		t.Errorf("id/version = %q/%d", r.ID, r.Version)
	}
	if r.ExitCode == nil {
		t.Fatalf("no exit code: %+v", r)
	}
	if r.Log != queue.LogRel(req.ID) {
		t.Errorf("Log = %q, want %q", r.Log, queue.LogRel(req.ID))
	}
	if r.OutputBytes != int64(len(o.log)) {
		t.Errorf("OutputBytes = %d, log holds %d", r.OutputBytes, len(o.log))
	}
	if o.sum != sum256(o.log) {
		t.Errorf("sha256 = %s, log's is %s", o.sum, sum256(o.log))
	}
	if !utf8.ValidString(r.OutputTail) || len(r.OutputTail) > TailSize {
		t.Errorf("tail: %d bytes, valid %v", len(r.OutputTail), utf8.ValidString(r.OutputTail))
	}
	if r.StartedAt.IsZero() || r.FinishedAt.Before(r.StartedAt) || r.DurationMS < 0 {
		t.Errorf("times: %v %v %d", r.StartedAt, r.FinishedAt, r.DurationMS)
	}
}

func TestRunExitCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cmd  string
		code int
	}{
		{"true", 0},
		{"exit 3", 3},
		{"no-such-command-sluice-test", 127},
		{"kill -KILL $$", 128 + 9},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			t.Parallel()
			req := execReq(t, tc.cmd)
			o := run(t.Context(), t, testRunner(), req, Options{}, 10*time.Second)
			checkRan(t, req, o)
			if o.res.Status != queue.StatusDone || *o.res.ExitCode != tc.code {
				t.Errorf("status %s exit %d, want done %d (%q)", o.res.Status, *o.res.ExitCode, tc.code, o.log)
			}
		})
	}
}

func TestRunStdoutAndStderr(t *testing.T) {
	t.Parallel()
	req := execReq(t, `echo to-stdout; echo to-stderr >&2; [ -t 1 ] && [ -t 2 ] && echo both-ttys`)
	o := run(t.Context(), t, testRunner(), req, Options{}, 10*time.Second)
	checkRan(t, req, o)
	if want := "to-stdout\nto-stderr\nboth-ttys\n"; string(o.log) != want {
		t.Errorf("log = %q, want %q", o.log, want)
	}
	if o.res.OutputTail != string(o.log) {
		t.Errorf("tail = %q", o.res.OutputTail)
	}
}

func TestRunBinaryOutputExact(t *testing.T) {
	t.Parallel()
	var want []byte
	var cmd strings.Builder
	cmd.WriteString("printf '")
	for b := 0; b < 256; b++ {
		want = append(want, byte(b))
		fmt.Fprintf(&cmd, `\%03o`, b)
	}
	cmd.WriteString("'; printf 'no newline'")
	want = append(want, "no newline"...)

	req := execReq(t, cmd.String())
	o := run(t.Context(), t, testRunner(), req, Options{}, 10*time.Second)
	checkRan(t, req, o)
	if !bytes.Equal(o.log, want) {
		t.Errorf("log differs:\n got %q\nwant %q", o.log, want)
	}
	if !strings.HasSuffix(o.res.OutputTail, "no newline") {
		t.Errorf("tail = %q", o.res.OutputTail)
	}
}

func TestRunAppendsToLog(t *testing.T) {
	t.Parallel()
	logPath := filepath.Join(t.TempDir(), "x.log")
	if err := os.WriteFile(logPath, []byte("earlier\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	req := execReq(t, "printf now")
	o := run(t.Context(), t, testRunner(), req, Options{LogPath: logPath}, 10*time.Second)
	if string(o.log) != "earlier\nnow" || o.sum != sum256([]byte("now")) || o.res.OutputBytes != 3 {
		t.Errorf("log %q, sum %s, bytes %d", o.log, o.sum, o.res.OutputBytes)
	}
	if fi, err := os.Stat(logPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("log mode: %v %v", fi.Mode(), err)
	}
}

// TestRunNoFDLeak runs the paths that open and close descriptors (a
// normal run, a subscriber, a cancel, a refused cwd) and counts this
// process's open descriptors around them. It is not parallel, so nothing
// else opens files meanwhile; goroutines are checked by goleak in TestMain.
func TestRunNoFDLeak(t *testing.T) {
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd")
		}
		return len(ents)
	}
	once := func(r *Runner) {
		run(t.Context(), t, r, execReq(t, "echo hi"), Options{Output: func([]byte) {}}, 10*time.Second)
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		run(ctx, t, r, execReq(t, "exec sleep 1000"), Options{}, 10*time.Second)
		bad := execReq(t, "true")
		bad.Cwd = "/nonexistent/sluice"
		run(t.Context(), t, r, bad, Options{}, 10*time.Second)
	}
	runner := func() *Runner {
		r := testRunner()
		r.Grace = 100 * time.Millisecond
		return r
	}
	// A first runner warms up lazily opened descriptors (the runtime's
	// poller); the runner's own (the cgroups it keeps for reuse, as many
	// as runs overlapped) go with Close.
	warm := runner()
	once(warm)
	_ = warm.Close()
	before := fds()
	r := runner()
	for i := 0; i < 3; i++ {
		once(r)
	}
	_ = r.Close()
	// A cgroup whose run was killed is removed in the background once
	// its zombies are reaped, reading its files meanwhile: a descriptor
	// that goes away was not leaked.
	after := fds()
	for deadline := time.Now().Add(5 * time.Second); after != before && time.Now().Before(deadline); after = fds() {
		time.Sleep(20 * time.Millisecond)
	}
	if after != before {
		t.Errorf("open descriptors: %d before, %d after", before, after)
	}
}

// markerAlive lists live processes whose command line holds marker.
func markerAlive(t *testing.T, marker string) []string {
	t.Helper()
	var found []string
	if runtime.GOOS == "linux" {
		paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil || !bytes.Contains(b, []byte(marker)) {
				continue
			}
			if strings.TrimSuffix(strings.TrimPrefix(p, "/proc/"), "/cmdline") == strconv.Itoa(os.Getpid()) {
				continue
			}
			found = append(found, p+": "+string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
		}
		return found
	}
	out, err := osexec.Command("ps", "-axo", "command").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, marker) && !strings.Contains(l, "ps -axo") {
			found = append(found, l)
		}
	}
	return found
}

// killMarker SIGKILLs processes whose command line holds marker (cleanup
// for daemons the runner is documented not to kill).
func killMarker(marker string) {
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(b, []byte(marker)) {
			continue
		}
		pid, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(p, "/proc/"), "/cmdline"))
		if pid > 1 && pid != os.Getpid() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// newMarker is a unique number that sleep(1) accepts as an extra
// duration, so it can ride in a sleep's argv.
func newMarker() string {
	return fmt.Sprintf("0.000%d%06d", time.Now().UnixNano()%1e9, runSeq.Add(1))
}

func TestRunTimeoutKillsGroup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, script string }{
		// Everyone ignores SIGTERM, so only SIGKILL after the grace ends it.
		{"all-ignore-term", `trap '' TERM
sleep 1000 MARK &
sleep 1000 MARK &
sh -c 'sleep 1000 MARK; :' &
echo started
wait`},
		// The leader dies on SIGTERM; its background children ignore it and
		// (and the SIGHUP the leader's exit sends) are stragglers in the group.
		{"stragglers", `(trap '' TERM HUP; sleep 1000 MARK; :) &
(trap '' TERM HUP; exec sleep 1000 MARK) &
echo started
exec sleep 1000 MARK`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			marker := newMarker()
			req := execReq(t, strings.ReplaceAll(tc.script, "MARK", marker))
			req.TimeoutS = 1
			r := testRunner()
			r.Grace = 300 * time.Millisecond
			t.Cleanup(func() { killMarker(marker) })
			o := run(t.Context(), t, r, req, Options{}, 15*time.Second)
			checkRan(t, req, o)
			if o.res.Status != queue.StatusTimeout || o.res.Reason == "" {
				t.Errorf("status %s reason %q, want timeout", o.res.Status, o.res.Reason)
			}
			if !bytes.Contains(o.log, []byte("started")) {
				t.Errorf("log = %q", o.log)
			}
			if alive := markerAlive(t, marker); len(alive) > 0 {
				t.Errorf("alive after Run returned:\n%s", strings.Join(alive, "\n"))
			}
		})
	}
}

// cgroupsWork reports whether this machine gives runs a cgroup.
func cgroupsWork(t *testing.T) bool {
	t.Helper()
	g, err := sandbox.NewCgroup("probe-"+newMarker(), 0)
	if err != nil {
		t.Logf("no cgroup here: %v", err)
		return false
	}
	_ = g.Close()
	return true
}

func TestRunSetsidGrandchildHoldsPTY(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, daemon string }{
		{"quiet", `exec sleep 1000 MARK`},
		// Keeps writing to the pty: reading stops at the drain bound.
		{"chatty", `while :; do echo tick MARK; sleep 0.01; done`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			marker := newMarker()
			// The fifo makes the parent wait until the daemon is in its own
			// session, out of reach of the SIGHUP the parent's exit sends.
			script := `mkfifo up; setsid sh -c 'echo > up; ` + tc.daemon + `' MARK & read x < up; echo parent-done`
			req := execReq(t, strings.ReplaceAll(script, "MARK", marker))
			t.Cleanup(func() { killMarker(marker) })
			o := run(t.Context(), t, testRunner(), req, Options{}, 10*time.Second)
			checkRan(t, req, o)
			if o.res.Status != queue.StatusDone || *o.res.ExitCode != 0 {
				t.Errorf("status %s exit %d (%q)", o.res.Status, *o.res.ExitCode, o.res.Reason)
			}
			if !bytes.Contains(o.log, []byte("parent-done\n")) {
				t.Errorf("log = %q", o.log)
			}
			// With a cgroup the run takes the daemon with it; without one
			// (no delegation) the daemon escapes, but Run still returns.
			alive := markerAlive(t, marker)
			if cgroupsWork(t) && len(alive) > 0 {
				t.Errorf("the daemon outlived its run:\n%s", strings.Join(alive, "\n"))
			}
			t.Logf("returned %d ms after start", o.res.DurationMS)
		})
	}
}

func TestRunCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var mu sync.Mutex
	var seen []byte
	opt := Options{Output: func(p []byte) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, p...)
		if bytes.Contains(seen, []byte("ready")) {
			cancel()
		}
	}}
	req := execReq(t, "echo ready; exec sleep 1000")
	r := testRunner()
	r.Grace = 500 * time.Millisecond
	o := run(ctx, t, r, req, opt, 10*time.Second)
	checkRan(t, req, o)
	if o.res.Status != queue.StatusKilled || *o.res.ExitCode != 128+int(syscall.SIGTERM) {
		t.Errorf("status %s exit %d, want killed %d", o.res.Status, *o.res.ExitCode, 128+int(syscall.SIGTERM))
	}
}

func TestRunCancelledBeforeStart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	req := execReq(t, "touch ran")
	o := run(ctx, t, testRunner(), req, Options{}, 10*time.Second)
	if o.res.Status != queue.StatusKilled || o.res.ExitCode != nil {
		t.Errorf("got %+v", o.res)
	}
	if _, err := os.Stat(filepath.Join(req.Cwd, "ran")); err == nil {
		t.Error("the command ran")
	}
}

func TestRunCwd(t *testing.T) {
	t.Parallel()
	jail := t.TempDir()
	outside := t.TempDir()
	inside := filepath.Join(jail, "sub")
	file := filepath.Join(jail, "file")
	escape := filepath.Join(jail, "escape")
	for _, err := range []error{
		os.Mkdir(inside, 0o700),
		os.WriteFile(file, nil, 0o600),
		os.Symlink(outside, escape),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, cwd string
		jail      []string
		reason    string // "" means it runs
	}{
		{"inside", inside, []string{jail}, ""},
		{"no-jail", outside, nil, ""},
		{"missing", filepath.Join(jail, "nope"), []string{jail}, "does not exist"},
		{"not-dir", file, []string{jail}, "not a directory"},
		{"outside", outside, []string{jail}, "outside the jail"},
		{"symlink-escape", escape, []string{jail}, "outside the jail"},
		{"relative", "sub", []string{jail}, "not an absolute path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := execReq(t, `printf %s "$PWD"; touch "$PWD/ran"`)
			req.Cwd = tc.cwd
			o := run(t.Context(), t, testRunner(), req, Options{Jail: tc.jail}, 10*time.Second)
			if tc.reason == "" {
				checkRan(t, req, o)
				want, _ := filepath.EvalSymlinks(tc.cwd)
				if o.res.Status != queue.StatusDone || string(o.log) != want {
					t.Errorf("status %s, pwd %q, want %q", o.res.Status, o.log, want)
				}
				return
			}
			if o.res.Status != queue.StatusFailed || !strings.HasPrefix(o.res.Reason, "exec: ") || !strings.Contains(o.res.Reason, tc.reason) {
				t.Errorf("status %s reason %q, want failed %q", o.res.Status, o.res.Reason, tc.reason)
			}
			if o.res.ExitCode != nil || o.res.Log != "" {
				t.Errorf("failed result has exit code or log: %+v", o.res)
			}
		})
	}
}

func TestRunRefusesOtherKinds(t *testing.T) {
	t.Parallel()
	req := execReq(t, "true")
	req.Kind = queue.KindWrite
	o := run(t.Context(), t, testRunner(), req, Options{}, 10*time.Second)
	if o.res.Status != queue.StatusFailed || !strings.Contains(o.res.Reason, "not exec") {
		t.Errorf("got %+v", o.res)
	}
}

func TestRunResize(t *testing.T) {
	t.Parallel()
	r := testRunner()
	req := execReq(t, `stty size; echo ready; i=0
while [ "$(stty size)" != "30 100" ] && [ $i -lt 400 ]; do sleep 0.02; i=$((i+1)); done
stty size`)
	var once sync.Once
	var mu sync.Mutex
	var seen []byte
	opt := Options{Output: func(p []byte) {
		mu.Lock()
		seen = append(seen, p...)
		ready := bytes.Contains(seen, []byte("ready"))
		mu.Unlock()
		if ready {
			once.Do(func() { r.Resize(req.ID, 30, 100) })
		}
	}}
	r.Resize("not-running", 1, 1) // no-op
	o := run(t.Context(), t, r, req, opt, 15*time.Second)
	checkRan(t, req, o)
	if want := "24 80\nready\n30 100\n"; string(o.log) != want {
		t.Errorf("log = %q, want %q", o.log, want)
	}
	r.Resize(req.ID, 1, 1) // finished: no-op
}

func TestRunOutputSubscriber(t *testing.T) {
	t.Parallel()
	var got []byte
	req := execReq(t, "for i in 1 2 3; do echo line $i; done")
	o := run(t.Context(), t, testRunner(), req, Options{Output: func(p []byte) { got = append(got, p...) }}, 10*time.Second)
	checkRan(t, req, o)
	// Run returns after the last Output call, so got is complete and
	// (for output smaller than the buffer) nothing was skipped.
	if !bytes.Equal(got, o.log) {
		t.Errorf("subscriber got %q, log %q", got, o.log)
	}
}

// TestRunLargeOutput pushes a large pseudo-random binary stream through the
// pty: the log must hold it byte for byte, and a subscriber that is stuck
// must neither hold the run back nor see anything but the newest output.
// SLUICE_BIG=1 (without -short) makes it 1 GB.
func TestRunLargeOutput(t *testing.T) {
	size := int64(64 << 20)
	if !testing.Short() && os.Getenv("SLUICE_BIG") == "1" {
		size = 1 << 30
	}
	want := sha256.New()
	if err := writeStream(want, size); err != nil {
		t.Fatal(err)
	}
	wantSum := hex.EncodeToString(want.Sum(nil))
	var before syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)

	check := func(t *testing.T, o runOut, logPath string) {
		t.Helper()
		fi, err := os.Stat(logPath)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() != size || o.res.OutputBytes != size {
			t.Errorf("log %d bytes, OutputBytes %d, want %d", fi.Size(), o.res.OutputBytes, size)
		}
		if o.sum != wantSum || fileSum(t, logPath) != wantSum {
			t.Errorf("sha256 %s, log file's %s, want %s", o.sum, fileSum(t, logPath), wantSum)
		}
		if o.res.Status != queue.StatusDone || *o.res.ExitCode != 0 {
			t.Errorf("status %s exit %d: %s", o.res.Status, *o.res.ExitCode, o.res.Reason)
		}
	}
	cmd, env := streamCommand(t, size)
	limit := 60*time.Second + time.Duration(size/(1<<20))*time.Second // hang guard only

	t.Run("no-subscriber", func(t *testing.T) {
		req := execReq(t, cmd)
		req.Env = env
		logPath := filepath.Join(t.TempDir(), "out.log")
		o := run(t.Context(), t, testRunner(), req, Options{LogPath: logPath}, limit)
		check(t, o, logPath)
		t.Logf("%d MiB in %d ms", size>>20, o.res.DurationMS)
	})

	t.Run("stuck-subscriber", func(t *testing.T) {
		req := execReq(t, cmd)
		req.Env = env
		logPath := filepath.Join(t.TempDir(), "out.log")
		var calls int
		var delivered int64
		var last []byte
		opt := Options{LogPath: logPath, Output: func(p []byte) {
			if calls == 0 {
				// Stuck until the whole stream is in the log: proves the
				// reader never waits for the subscriber.
				for {
					fi, err := os.Stat(logPath)
					if err == nil && fi.Size() == size {
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
			} else {
				time.Sleep(2 * time.Millisecond) // and slow afterwards
			}
			calls++
			delivered += int64(len(p))
			last = append(last[:0], p...)
		}}
		o := run(t.Context(), t, testRunner(), req, opt, limit)
		check(t, o, logPath)
		if delivered >= size || delivered == 0 {
			t.Errorf("subscriber got %d of %d bytes; want it to skip ahead", delivered, size)
		}
		// What it saw last is the end of the output.
		f, err := os.Open(logPath)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		end := make([]byte, len(last))
		if _, err := f.ReadAt(end, size-int64(len(last))); err != nil || !bytes.Equal(end, last) {
			t.Errorf("last delivery (%d bytes) is not the end of the log (%v)", len(last), err)
		}
		t.Logf("%d MiB in %d ms; subscriber: %d calls, %d bytes", size>>20, o.res.DurationMS, calls, delivered)
	})

	var after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	grew := (after.Maxrss - before.Maxrss) * maxrssUnit
	t.Logf("peak RSS %d MiB -> %d MiB", before.Maxrss*maxrssUnit>>20, after.Maxrss*maxrssUnit>>20)
	if grew > 100<<20 {
		t.Errorf("peak RSS grew by %d MiB while streaming %d MiB", grew>>20, size>>20)
	}
}

// maxrssUnit converts Rusage.Maxrss to bytes (KiB on Linux, bytes on BSDs).
var maxrssUnit = func() int64 {
	if runtime.GOOS == "linux" {
		return 1024
	}
	return 1
}()

func fileSum(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := f.WriteTo(h); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestTailText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 3, "llo"},
		{"aé", 1, ""},              // the window holds half of é: dropped
		{"aéb", 2, "b"},            // likewise
		{"x\xffy", 10, "x\uFFFDy"}, // invalid byte replaced
		{"\xff\xff\xff\xff", 4, "\uFFFD"},
		{"ab\xff", 3, "\uFFFD"}, // replacement made it too long: trimmed at a rune start
	} {
		got := tailText([]byte(tc.in), tc.max)
		if got != tc.want || !utf8.ValidString(got) || len(got) > tc.max {
			t.Errorf("tailText(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

func TestTailRing(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	// Many rings, each written in pieces of up to 2.6 times its size:
	// the write that fills a growing ring (exactly, past it, or with more
	// than it holds at once) comes at a different point in each.
	for r := 0; r < 200; r++ {
		tr := tailRing{size: 100}
		var all []byte
		for i := 0; i < 40; i++ {
			p := make([]byte, rng.IntN(1+[]int{30, 110, 260}[r%3]))
			for j := range p {
				p[j] = byte(rng.IntN(256))
			}
			tr.write(p)
			all = append(all, p...)
			want := all[max(0, len(all)-100):]
			if got := tr.bytes(); !bytes.Equal(got, want) {
				t.Fatalf("ring %d after %d writes (%d bytes): got %d bytes, want %d", r, i+1, len(all), len(got), len(want))
			}
			if len(all) < 100 && cap(tr.buf) > 2*len(all)+8 {
				t.Fatalf("ring %d holds %d bytes in a buffer of %d: it should grow with what it holds", r, len(all), cap(tr.buf))
			}
		}
	}
}

func TestFanoutSkipsAhead(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var got [][]byte
	f := newFanout(func(p []byte) {
		if len(got) == 0 {
			<-release
		}
		got = append(got, append([]byte(nil), p...))
	})
	var all []byte
	for i := 0; len(all) < 3*fanoutSize; i++ {
		p := []byte(fmt.Sprintf("chunk %d;", i))
		f.write(p)
		all = append(all, p...)
	}
	close(release)
	f.close()
	if len(got) < 2 {
		t.Fatalf("%d deliveries, want the stuck one and the rest", len(got))
	}
	rest := bytes.Join(got[1:], nil)
	if len(rest) > fanoutSize || !bytes.HasSuffix(all, rest) {
		t.Errorf("after the stuck call got %d bytes, want at most %d ending the stream", len(rest), fanoutSize)
	}
}

// TestReconfigure: a reloaded configuration reaches the runs that start
// after it: a name added to the allow-list passes the variable to the next
// command, a secret pattern added keeps it away again, and a shorter
// default timeout stops it.
func TestReconfigure(t *testing.T) {
	t.Parallel()
	r := testRunner()
	r.BaseEnv = append(r.BaseEnv, "DEPLOY_KEY=hunter2")
	ctx := context.Background()
	out := run(ctx, t, r, execReq(t, `echo "key=$DEPLOY_KEY"`), Options{}, 30*time.Second)
	if bytes.Contains(out.log, []byte("hunter2")) {
		t.Fatalf("before the reload the variable should not pass (not on the allow-list): %q", out.log)
	}
	r.Reconfigure(Settings{EnvAllow: []string{"DEPLOY_*"}})
	out = run(ctx, t, r, execReq(t, `echo "key=$DEPLOY_KEY"`), Options{}, 30*time.Second)
	if !bytes.Contains(out.log, []byte("key=hunter2")) {
		t.Fatalf("after DEPLOY_* was allowed the run does not see the variable: %q", out.log)
	}
	r.Reconfigure(Settings{EnvAllow: []string{"DEPLOY_*"}, SecretPatterns: []string{"DEPLOY_*"}, DefaultTimeout: 300 * time.Millisecond})
	out = run(ctx, t, r, execReq(t, `echo "key=$DEPLOY_KEY"`), Options{}, 30*time.Second)
	if bytes.Contains(out.log, []byte("hunter2")) {
		t.Errorf("after the secret pattern DEPLOY_* was added the run still sees the secret: %q", out.log)
	}
	out = run(ctx, t, r, execReq(t, "sleep 30"), Options{}, 30*time.Second)
	if out.res.Status != queue.StatusTimeout {
		t.Errorf("after default_timeout = 300ms, sleep 30 ended %s, want timeout", out.res.Status)
	}
}

// TestPipeMode: a run without a terminal gets pipes: stdout and stderr
// merged in the order written, no terminal on any of the three, stdin at
// end of file; the exit code and the log as with a pty.
func TestPipeMode(t *testing.T) {
	t.Parallel()
	r := testRunner()
	cmd := `echo out1; echo err1 >&2; echo out2; [ -t 0 ] || echo "stdin: not a terminal"; [ -t 1 ] || echo "stdout: not a terminal"; cat; echo "stdin ended"; exit 3`
	out := run(context.Background(), t, r, execReq(t, cmd), Options{Pipe: true}, 30*time.Second)
	want := "out1\nerr1\nout2\nstdin: not a terminal\nstdout: not a terminal\nstdin ended\n"
	if string(out.log) != want {
		t.Errorf("log %q, want %q", out.log, want)
	}
	if out.res.ExitCode == nil || *out.res.ExitCode != 3 || out.res.Status != queue.StatusDone {
		t.Errorf("result %+v", out.res)
	}
	// The same under a pty: \n becomes a terminal's line, the output a
	// terminal's.
	out = run(context.Background(), t, r, execReq(t, `[ -t 1 ] && echo "a terminal"`), Options{}, 30*time.Second)
	if !bytes.Contains(out.log, []byte("a terminal")) {
		t.Errorf("without Pipe the run lost its terminal: %q", out.log)
	}
}
