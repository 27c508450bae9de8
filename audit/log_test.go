package audit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

func TestAppendChainsAndSyncs(t *testing.T) {
	t.Parallel()
	l := openTestLog(t)
	var written []queue.Event
	for i := range 9 {
		ev, err := l.Append(testEvent(i))
		if err != nil {
			t.Fatal(err)
		}
		written = append(written, ev)
	}
	data := readFile(t, l.Path())
	lines := splitLines(data)
	if len(lines) != 10 || len(lines[9]) != 0 {
		t.Fatalf("want 9 lines, each ending in a newline; got %q", data)
	}
	prev := ""
	for i, line := range lines[:9] {
		ev, err := DecodeLine(line)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if ev.Seq != int64(i+1) || ev.Prev != prev || ev.Hash != written[i].Hash || ev.TS.Location() != time.UTC {
			t.Fatalf("line %d: seq %d prev %.8s hash %.8s ts %v", i+1, ev.Seq, ev.Prev, ev.Hash, ev.TS)
		}
		want := testEvent(i)
		if ev.Event != want.Event || ev.Command != want.Command || ev.ID != want.ID {
			t.Fatalf("line %d holds %+v, want %+v", i+1, ev, want)
		}
		prev = ev.Hash
	}
	rep, err := VerifyFile(l.Path())
	if err != nil || rep.Events != 9 || rep.Head != written[8].Hash {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	// Commands are data: control characters are JSON-escaped, so each
	// event stays one line whatever its command holds.
	if bytes.ContainsAny(data[:len(data)-1], "\x1b\r\t") || bytes.Count(data, []byte("\n")) != 9 {
		t.Errorf("raw control characters in the log:\n%q", data)
	}
}

func TestAppendFillsTheChainFields(t *testing.T) {
	t.Parallel()
	l := openTestLog(t)
	ev := testEvent(0)
	ev.Seq, ev.Prev, ev.Hash, ev.TS = 99, "forged", "forged", time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC)
	got, err := l.Append(ev)
	if err != nil {
		t.Fatal(err)
	}
	if got.Seq != 1 || got.Prev != "" || len(got.Hash) != 64 || time.Since(got.TS) > time.Hour {
		t.Errorf("Append kept the caller's chain fields: %+v", got)
	}
	if _, err := l.Append(queue.Event{ID: "01JD3T6Q6Z8W9X0Y1Z2A3B4C5D"}); err == nil || !strings.HasPrefix(err.Error(), "audit: ") {
		t.Errorf("Append of an event without a name = %v, want an audit: error", err)
	}
	// An invalid request's id is recorded as it is: it is data.
	if got, err := l.Append(queue.Event{Event: queue.EventInvalid, ID: "../../etc/passwd\x1b[2J"}); err != nil || got.Seq != 2 {
		t.Errorf("Append of an invalid request's event = %+v, %v", got, err)
	}
	l.Close()
	if _, err := l.Append(testEvent(1)); err == nil {
		t.Error("Append after Close succeeded")
	}
}

func TestOpenModes(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a", "b")
	l, err := Open(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	mustAppend(t, l, testEvent(0))
	for p, want := range map[string]os.FileMode{dir: 0o700, l.Path(): 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %04o, want %04o", p, fi.Mode().Perm(), want)
		}
	}
}

func TestOpenRefusesUnsafeLogs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	loose := filepath.Join(dir, "loose.jsonl")
	os.WriteFile(loose, nil, 0o600)
	os.Chmod(loose, 0o666)
	target := filepath.Join(dir, "target.jsonl")
	os.WriteFile(target, nil, 0o600)
	link := filepath.Join(dir, "link.jsonl")
	os.Symlink(target, link)
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := mkfifo(fifo); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "open")
	os.Mkdir(open, 0o700)
	os.Chmod(open, 0o777)
	for _, tc := range []struct{ path, problem string }{
		{loose, "is writable by group or others (mode 0666); fix it with: chmod 600 "},
		{link, "is a symlink"},
		{fifo, "is not a regular file"},
		{filepath.Join(open, "audit.jsonl"), "is writable by group or others (mode 0777), who could replace the log; fix it with: chmod 700 "},
	} {
		_, err := Open(tc.path)
		var pe *PermError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.problem) {
			t.Errorf("Open(%s) = %v, want a *PermError saying %q", filepath.Base(tc.path), err, tc.problem)
		}
	}
}

// TestAppendRepairsATornTail: the bytes a crash left are kept, a newline
// is added, an audit_repaired line names them, and the chain goes on from
// the last whole event.
func TestAppendRepairsATornTail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		torn  string
		lines int
	}{
		{"no newline", `{"seq":4,"ts":"2026-11-21T15:04:05Z","id":"01JD3T`, 1},
		{"unparsable line", "\x00\x00\x00\x00\x00\x00\n", 1},
		{"torn repair after a torn line", `{"seq":4,"ts":"2026` + "\n" + `{"seq":4,"ts":"2026-11-21T15:04:05Z","event":"audit_rep`, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := openTestLog(t)
			mustAppend(t, l, testEvent(0), testEvent(1), testEvent(2))
			before := readFile(t, l.Path())
			torn := tc.torn
			appendRaw(t, l.Path(), torn)
			if _, err := VerifyFile(l.Path()); !isBreak(err, 4, Torn) {
				t.Fatalf("verify before the repair: %v; want line 4 torn", err)
			}
			got, err := l.Append(testEvent(3))
			if err != nil {
				t.Fatal(err)
			}
			if got.Seq != 5 {
				t.Errorf("the event after the repair has seq %d, want 5", got.Seq)
			}
			data := readFile(t, l.Path())
			if !bytes.HasPrefix(data, append(bytes.Clone(before), torn...)) {
				t.Fatal("the repair changed bytes before its own")
			}
			rep, err := VerifyFile(l.Path())
			if err != nil {
				t.Fatalf("verify after the repair: %v", err)
			}
			if rep.Events != 5 || len(rep.Repaired) != 1 || rep.Repaired[0].Line != 4 || rep.Repaired[0].Lines != int64(tc.lines) {
				t.Fatalf("report %+v", rep)
			}
			r := rep.Repaired[0]
			wantBytes := int64(len(torn))
			if !strings.HasSuffix(torn, "\n") {
				wantBytes++
			}
			if r.Offset != int64(len(before)) || r.Bytes != wantBytes {
				t.Errorf("repair names %d bytes at %d, want %d at %d", r.Bytes, r.Offset, wantBytes, len(before))
			}
			lines := splitLines(data)
			ev, err := DecodeLine(lines[len(lines)-3])
			if err != nil || ev.Event != queue.EventAuditRepaired || ev.Seq != 4 || ev.Actor == "" ||
				!strings.Contains(ev.Reason, fmt.Sprintf("%d bytes at byte %d", wantBytes, len(before))) {
				t.Errorf("repair line %+v, %v", ev, err)
			}
			// And the log goes on as usual.
			mustAppend(t, l, testEvent(4))
			if rep, err := VerifyFile(l.Path()); err != nil || rep.Events != 6 {
				t.Errorf("verify: %+v %v", rep, err)
			}
		})
	}
}

// TestAppendCompletesALineCutAtItsNewline: a line that lacks only its
// newline is a whole event; the next append adds the newline and chains
// from it, with nothing to repair.
func TestAppendCompletesALineCutAtItsNewline(t *testing.T) {
	t.Parallel()
	l := openTestLog(t)
	mustAppend(t, l, testEvent(0))
	ev, err := l.Append(testEvent(1))
	if err != nil {
		t.Fatal(err)
	}
	data := readFile(t, l.Path())
	os.WriteFile(l.Path(), data[:len(data)-1], 0o600) // as if the write stopped before its newline
	if _, err := VerifyFile(l.Path()); !isBreak(err, 2, Torn) {
		t.Fatalf("verify: %v; want line 2 torn", err)
	}
	got, err := l.Append(testEvent(2))
	if err != nil {
		t.Fatal(err)
	}
	if got.Seq != 3 || got.Prev != ev.Hash {
		t.Errorf("appended seq %d prev %.8s; want 3 after %.8s", got.Seq, got.Prev, ev.Hash)
	}
	if rep, err := VerifyFile(l.Path()); err != nil || rep.Events != 3 || len(rep.Repaired) != 0 {
		t.Errorf("verify: %+v %v", rep, err)
	}
}

// TestAppendRefusesAFileThatIsNotALog: more junk at the end than any crash
// leaves is not repaired.
func TestAppendRefusesAFileThatIsNotALog(t *testing.T) {
	t.Parallel()
	l := openTestLog(t)
	mustAppend(t, l, testEvent(0))
	appendRaw(t, l.Path(), strings.Repeat("not an event\n", maxTornLines+1))
	size := len(readFile(t, l.Path()))
	_, err := l.Append(testEvent(1))
	if !errors.Is(err, ErrNotLog) || !strings.Contains(err.Error(), l.Path()) {
		t.Fatalf("Append = %v, want ErrNotLog naming the file", err)
	}
	if len(readFile(t, l.Path())) != size {
		t.Error("Append wrote to a file that is not a log")
	}
}

// TestAppendAfterTampering goes on appending (refusing would let anyone
// who can edit the log stop every decision), and Verify still finds the
// edit.
func TestAppendAfterTampering(t *testing.T) {
	t.Parallel()
	l := openTestLog(t)
	mustAppend(t, l, testEvent(0), testEvent(1), testEvent(2))
	data := readFile(t, l.Path())
	data = bytes.Replace(data, []byte("go test"), []byte("go vet "), 1)
	os.WriteFile(l.Path(), data, 0o600)
	mustAppend(t, l, testEvent(3))
	if _, err := VerifyFile(l.Path()); !isBreak(err, 1, Edited) {
		t.Fatalf("verify: %v; want line 1 edited", err)
	}
}

// TestAppendFollowsARotatedLog: a log moved aside while a Log holds it
// open is left alone, and appends go to the new file at the path.
func TestAppendFollowsARotatedLog(t *testing.T) {
	t.Parallel()
	l := openTestLog(t)
	mustAppend(t, l, testEvent(0), testEvent(1))
	old := l.Path() + ".1"
	if err := os.Rename(l.Path(), old); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, testEvent(2))
	if rep, err := VerifyFile(old); err != nil || rep.Events != 2 {
		t.Errorf("rotated log: %+v %v", rep, err)
	}
	if rep, err := VerifyFile(l.Path()); err != nil || rep.Events != 1 || rep.LastSeq != 1 {
		t.Errorf("new log: %+v %v", rep, err)
	}
}

func TestAppendConcurrentGoroutines(t *testing.T) {
	t.Parallel()
	l := openTestLog(t)
	other, err := Open(l.Path()) // a second Log on the same file: flock serialises them
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			log := l
			if g%2 == 1 {
				log = other
			}
			for i := range 25 {
				if _, err := log.Append(testEvent(g*25 + i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	rep, err := VerifyFile(l.Path())
	if err != nil || rep.Events != 200 || rep.LastSeq != 200 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}

func TestDecodeLine(t *testing.T) {
	t.Parallel()
	line := testLines(t, 4)[3]
	ev, err := DecodeLine(line)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Event != queue.EventFinished || ev.ExitCode == nil || *ev.ExitCode != 0 || ev.Seq != 4 {
		t.Errorf("decoded %+v", ev)
	}
	s := strings.TrimSuffix(string(line), "\n")
	for _, bad := range []string{
		"", "{}", "null", s[:len(s)-1], s + " ", " " + s,
		strings.Replace(s, `{"seq":4,`, `{"seq":4,"seq":2,`, 1),
		strings.Replace(s, `{"seq":4,`, `{"seq":04,`, 1),
		strings.Replace(s, `{"seq":4,`, `{"seq":-4,`, 1),
		strings.Replace(s, `"event":"finished",`, ``, 1),
		strings.Replace(s, `"hash":"`, `"hash":"A`, 1)[:len(s)],
		strings.Replace(s, `"exit_code":0`, `"exit_code":"0"`, 1),
	} {
		if _, err := DecodeLine([]byte(bad)); err == nil {
			t.Errorf("DecodeLine accepted %s", bad)
		}
	}
}

func isBreak(err error, line int64, kind Break) bool {
	var ce *ChainError
	return errors.As(err, &ce) && ce.Line == line && ce.Kind == kind
}

func appendRaw(tb testing.TB, p, s string) {
	tb.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		tb.Fatal(err)
	}
}
