package audit

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// commands are command lines agents typically ask to run, and a few an
// agent would use to rewrite a reader's screen.
var commands = []string{
	"go test ./...",
	"git status --short",
	`grep -rn "TODO" --include='*.go' . | head -n 20`,
	"cargo build --release 2>&1 | tail -n 20",
	"rm -rf ./build && make -j4 <in >out",
	"printf '\x1b[2K\r\x1b[1Agit status' # \u202etxt.sh",
	"echo 'line one\nline two'\t&& true",
}

var eventCycle = []queue.EventName{queue.EventQueued, queue.EventApproved, queue.EventStarted, queue.EventFinished}

// testEvent is the i-th event of a typical request life.
func testEvent(i int) queue.Event {
	req := &queue.Request{ID: fmt.Sprintf("01JD3T6Q6Z8W9X0Y1Z2A%06d", i/4), Kind: queue.KindExec,
		Command: commands[(i/4)%len(commands)], Cwd: "/home/me/src/app", Agent: "claude-code"}
	ev := queue.NewEvent(eventCycle[i%4], req)
	switch ev.Event {
	case queue.EventQueued:
		ev.Verdict = &queue.Verdict{Action: "ask", Category: "mutating", Risk: "medium", Reasons: []string{"go test writes the build cache"}}
	case queue.EventApproved:
		ev.Actor = "me"
	case queue.EventFinished:
		code := i % 3
		ev.Status, ev.ExitCode, ev.DurationMS = queue.StatusDone, &code, int64(1000+i)
		ev.OutputSHA256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	}
	return ev
}

// testLines encodes n events as a chained log, as Append would write them
// but without a file, a lock or a sync.
func testLines(tb testing.TB, n int) [][]byte {
	tb.Helper()
	enc := newEncoder()
	t0 := time.Date(2026, 11, 21, 15, 4, 5, 0, time.UTC)
	prev := ""
	lines := make([][]byte, 0, n)
	for i := range n {
		ev := testEvent(i)
		ev.Seq, ev.TS, ev.Prev = int64(i+1), t0.Add(time.Duration(i)*time.Millisecond), prev
		line, err := enc.appendLine(nil, &ev)
		if err != nil {
			tb.Fatal(err)
		}
		prev = ev.Hash
		lines = append(lines, line)
	}
	return lines
}

// writeTestLog writes a chained log of n events to a new file.
func writeTestLog(tb testing.TB, dir string, n int) string {
	tb.Helper()
	p := filepath.Join(dir, "audit.jsonl")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	enc := newEncoder()
	t0 := time.Date(2026, 11, 21, 15, 4, 5, 0, time.UTC)
	prev := ""
	var buf []byte
	for i := range n {
		ev := testEvent(i)
		ev.Seq, ev.TS, ev.Prev = int64(i+1), t0.Add(time.Duration(i)*time.Millisecond), prev
		buf, err = enc.appendLine(buf[:0], &ev)
		if err != nil {
			tb.Fatal(err)
		}
		prev = ev.Hash
		w.Write(buf)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return p
}

// openTestLog opens a new log in a fresh directory.
func openTestLog(tb testing.TB) *Log {
	tb.Helper()
	l, err := Open(filepath.Join(tb.TempDir(), "state", "audit.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	return l
}

// mustAppend appends the events, failing the test on any error.
func mustAppend(tb testing.TB, l *Log, evs ...queue.Event) {
	tb.Helper()
	for _, ev := range evs {
		if _, err := l.Append(ev); err != nil {
			tb.Fatal(err)
		}
	}
}

// verifyBytes runs Verify on data.
func verifyBytes(data []byte) (*Report, error) { return Verify(bytes.NewReader(data)) }

func join(lines [][]byte) []byte { return bytes.Join(lines, nil) }

func readFile(tb testing.TB, p string) []byte {
	tb.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// splitLines splits a log into its lines, newlines kept.
func splitLines(data []byte) [][]byte {
	return bytes.SplitAfter(data, []byte("\n"))
}

func mkfifo(p string) error { return syscall.Mkfifo(p, 0o600) }
