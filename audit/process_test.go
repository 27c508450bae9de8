package audit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// A child process is the test binary re-executed to play one role against
// a log.
const (
	envRole = "AUDIT_TEST_ROLE"
	envLog  = "AUDIT_TEST_LOG"
	envN    = "AUDIT_TEST_N"
)

var roles = map[string]func() int{
	"appender":       roleAppender,
	"crash-appender": roleCrashAppender,
	"torn-appender":  roleTornAppender,
}

func TestMain(m *testing.M) {
	if name := os.Getenv(envRole); name != "" {
		role, ok := roles[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "audit test: unknown role %q\n", name)
			os.Exit(2)
		}
		os.Exit(role())
	}
	os.Exit(m.Run())
}

// hangGuard bounds every wait on a child. It guards against a hang; it is
// not a speed requirement.
const hangGuard = 2 * time.Minute

// child is the test binary running one role.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *bytes.Buffer
	done   chan error
}

func startRole(tb testing.TB, role, log string, env ...string) *child {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envRole+"="+role, envLog+"="+log, "GORACE=atexit_sleep_ms=0")
	cmd.Env = append(cmd.Env, env...)
	c := &child{cmd: cmd, lines: make(chan string, 16), stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	var err error
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
		c.done <- cmd.Wait()
	}()
	tb.Cleanup(func() {
		cmd.Process.Kill()
		c.wait()
	})
	return c
}

// expect waits for the child to print want.
func (c *child) expect(tb testing.TB, want string) {
	tb.Helper()
	guard := time.After(hangGuard)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				tb.Fatalf("child exited (%v) before printing %q; stderr:\n%s", c.wait(), want, c.stderr)
			}
			if line == want {
				return
			}
		case <-guard:
			tb.Fatalf("child did not print %q within %s", want, hangGuard)
		}
	}
}

// wait waits for the child to exit and returns Wait's error. Safe to call
// more than once.
func (c *child) wait() error {
	for range c.lines {
	}
	err, ok := <-c.done
	if ok {
		close(c.done)
	}
	return err
}

// roleAppender appends AUDIT_TEST_N events once its stdin closes, so that
// every appender starts at once, and says "done". Event i of process P has
// agent P and command "step i".
func roleAppender() int {
	l, err := Open(os.Getenv(envLog))
	if err != nil {
		return fail(err)
	}
	n, _ := strconv.Atoi(os.Getenv(envN))
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	agent := "p" + strconv.Itoa(os.Getpid())
	for i := range n {
		ev := queue.Event{ID: queue.NewID(), Event: queue.EventQueued, Agent: agent, Kind: queue.KindExec,
			Command: fmt.Sprintf("step %d", i), Cwd: "/home/me/src/app"}
		if _, err := l.Append(ev); err != nil {
			return fail(err)
		}
	}
	fmt.Println("done")
	return 0
}

// roleCrashAppender appends until it is killed, each line in a few writes
// (as a kernel may do with a large line), so that a kill can land inside a
// line.
func roleCrashAppender() int {
	testHookWrite = func(f *os.File, p []byte) error {
		for len(p) > 0 {
			n := min(len(p), 1+rand.IntN(len(p)))
			if _, err := f.Write(p[:n]); err != nil {
				return err
			}
			p = p[n:]
		}
		return nil
	}
	l, err := Open(os.Getenv(envLog))
	if err != nil {
		return fail(err)
	}
	for i := 0; ; i++ {
		if _, err := l.Append(testEvent(i)); err != nil {
			return fail(err)
		}
		if i == 0 {
			fmt.Println("ready")
		}
	}
}

// roleTornAppender writes the first half of one line, says "torn", and
// waits to be killed: a crash in the middle of an append, on cue.
func roleTornAppender() int {
	testHookWrite = func(f *os.File, p []byte) error {
		if _, err := f.Write(p[:len(p)/2]); err != nil {
			return err
		}
		fmt.Println("torn")
		select {}
	}
	l, err := Open(os.Getenv(envLog))
	if err != nil {
		return fail(err)
	}
	_, err = l.Append(testEvent(3))
	return fail(fmt.Errorf("the append returned (%v)", err))
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, err)
	return 1
}

// TestConcurrentProcesses: four processes append 500 events each at once;
// the log holds 2,000 lines with seq 1..2000, a valid chain, and each
// process's events in the order it appended them.
func TestConcurrentProcesses(t *testing.T) {
	t.Parallel()
	const procs, each = 4, 500
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	var kids []*child
	for range procs {
		c := startRole(t, "appender", log, envN+"="+strconv.Itoa(each))
		c.expect(t, "ready")
		kids = append(kids, c)
	}
	for _, c := range kids {
		c.stdin.Close()
	}
	for _, c := range kids {
		if err := c.wait(); err != nil {
			t.Fatalf("appender: %v\n%s", err, c.stderr)
		}
	}
	rep, err := VerifyFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Lines != procs*each || rep.Events != procs*each || rep.LastSeq != procs*each {
		t.Fatalf("report %+v, want %d lines with seq 1..%d", rep, procs*each, procs*each)
	}
	next := map[string]int{} // the step each process is expected at next
	for i, line := range splitLines(readFile(t, log))[:procs*each] {
		ev, err := DecodeLine(line)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Seq != int64(i+1) {
			t.Fatalf("line %d has seq %d", i+1, ev.Seq)
		}
		if want := fmt.Sprintf("step %d", next[ev.Agent]); ev.Command != want {
			t.Fatalf("line %d: %s appended %q, want %q", i+1, ev.Agent, ev.Command, want)
		}
		next[ev.Agent]++
	}
	if len(next) != procs {
		t.Fatalf("events from %d processes, want %d", len(next), procs)
	}
	for agent, n := range next {
		if n != each {
			t.Errorf("%s appended %d events, want %d", agent, n, each)
		}
	}
}

// TestCrashMidAppend: a process killed with SIGKILL in the middle of a
// line leaves a torn tail, which Verify reports as such (not as
// tampering); the next append records the repair and the chain goes on.
func TestCrashMidAppend(t *testing.T) {
	t.Parallel()
	l := openTestLog(t)
	mustAppend(t, l, testEvent(0), testEvent(1), testEvent(2))
	c := startRole(t, "torn-appender", l.Path())
	c.expect(t, "torn")
	c.cmd.Process.Signal(syscall.SIGKILL)
	c.wait()

	_, err := VerifyFile(l.Path())
	if !isBreak(err, 4, Torn) {
		t.Fatalf("verify after the crash: %v; want line 4 torn", err)
	}
	ev, err := l.Append(testEvent(4))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := VerifyFile(l.Path())
	if err != nil {
		t.Fatalf("verify after the next append: %v", err)
	}
	if rep.Events != 5 || ev.Seq != 5 || len(rep.Repaired) != 1 || rep.Repaired[0].Line != 4 {
		t.Fatalf("report %+v, appended seq %d", rep, ev.Seq)
	}
	lines := splitLines(readFile(t, l.Path()))
	repair, err := DecodeLine(lines[4])
	if err != nil || repair.Event != queue.EventAuditRepaired || repair.Seq != 4 {
		t.Fatalf("line 5: %+v %v; want the audit_repaired event", repair, err)
	}
}

// TestCrashLoop: a process appending in a loop is killed at a random
// moment, several times over; after each kill the log verifies or reports
// only a torn tail, and appends continue.
func TestCrashLoop(t *testing.T) {
	t.Parallel()
	l := openTestLog(t)
	rounds := 8
	if testing.Short() {
		rounds = 3
	}
	torn, events := 0, int64(0)
	for round := range rounds {
		c := startRole(t, "crash-appender", l.Path())
		c.expect(t, "ready")
		time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond) // lets it run a while; any length will do
		c.cmd.Process.Signal(syscall.SIGKILL)
		c.wait()
		_, err := VerifyFile(l.Path())
		if err != nil {
			var ce *ChainError
			if !errors.As(err, &ce) || ce.Kind != Torn {
				t.Fatalf("round %d: verify after the kill: %v; want no break or a torn tail", round, err)
			}
			torn++
		}
		if _, err := l.Append(testEvent(round)); err != nil {
			t.Fatalf("round %d: append after the kill: %v", round, err)
		}
		rep, err := VerifyFile(l.Path())
		if err != nil {
			t.Fatalf("round %d: verify after the append: %v", round, err)
		}
		if rep.Events <= events || len(rep.Repaired) > torn {
			t.Fatalf("round %d: report %+v after %d events and %d torn tails", round, rep, events, torn)
		}
		events = rep.Events
	}
	t.Logf("%d of %d kills left a torn tail", torn, rounds)
}
