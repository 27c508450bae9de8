package queue

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The environment of a child process: the test binary re-executed to play
// one role against a spool.
const (
	envRole  = "SLUICE_TEST_ROLE"
	envSpool = "SLUICE_TEST_SPOOL"
	envArg   = "SLUICE_TEST_ARG"  // role-specific: a count, or a file to record in
	envID    = "SLUICE_TEST_ID"   // the request a role acts on
	envFile  = "SLUICE_TEST_FILE" // a file a role appends to
)

// roles are the programs a child process can run; each returns its exit
// code.
var roles = map[string]func() int{
	"writer":         roleWriter,
	"claimer":        roleClaimer,
	"crash-claimer":  roleCrashClaimer,
	"ingest-watcher": roleIngestWatcher,
}

func TestMain(m *testing.M) {
	if name := os.Getenv(envRole); name != "" {
		role, ok := roles[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "queue test: unknown role %q\n", name)
			os.Exit(2)
		}
		os.Exit(role())
	}
	os.Exit(m.Run())
}

// hangGuard bounds every wait on a child. It is a guard against a hang, not
// a speed requirement: on a healthy machine every wait ends far sooner.
const hangGuard = 60 * time.Second

// lockedBuffer is a bytes.Buffer safe to read while a child writes to it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// child is the test binary running one role.
type child struct {
	role   string
	cmd    *exec.Cmd
	lines  chan string // stdout, line by line; closed at EOF
	stderr *lockedBuffer
	stdin  *os.File      // write end of the child's stdin
	exited chan struct{} // closed once Wait has returned
	err    error         // Wait's error, valid after exited
}

// startRole starts the test binary as role with the given extra
// environment (KEY=value). The child is killed when the test ends, if it is
// still running.
func startRole(tb testing.TB, role string, env ...string) *child {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envRole+"="+role)
	cmd.Env = append(cmd.Env, env...)
	outR, outW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	c := &child{role: role, cmd: cmd, lines: make(chan string, 1<<14),
		stderr: &lockedBuffer{}, stdin: inW, exited: make(chan struct{})}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, c.stderr
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", role, err)
	}
	outW.Close()
	inR.Close()
	go func() {
		defer close(c.lines)
		defer outR.Close()
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	go func() {
		c.err = cmd.Wait()
		close(c.exited)
	}()
	tb.Cleanup(func() {
		select {
		case <-c.exited:
		default:
			_ = cmd.Process.Kill()
			<-c.exited
		}
		c.stdin.Close()
		for range c.lines {
		}
	})
	return c
}

// expect reads stdout lines until one equals want.
func (c *child) expect(tb testing.TB, want string) {
	tb.Helper()
	guard := time.NewTimer(hangGuard)
	defer guard.Stop()
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				<-c.exited
				tb.Fatalf("%s ended (%v) before printing %q; stderr:\n%s", c.role, c.err, want, c.stderr)
			}
			if line == want {
				return
			}
		case <-guard.C:
			tb.Fatalf("%s did not print %q within %s; stderr:\n%s", c.role, want, hangGuard, c.stderr)
		}
	}
}

// next returns the next stdout line, or false if none came within d or
// stdout ended.
func (c *child) next(d time.Duration) (string, bool) {
	guard := time.NewTimer(d)
	defer guard.Stop()
	select {
	case line, ok := <-c.lines:
		return line, ok
	case <-guard.C:
		return "", false
	}
}

// wait waits for the child to exit and returns the stdout lines not yet
// read. It fails the test if the child does not exit 0.
func (c *child) wait(tb testing.TB) []string {
	tb.Helper()
	var lines []string
	guard := time.NewTimer(hangGuard)
	defer guard.Stop()
	for {
		select {
		case line, ok := <-c.lines:
			if ok {
				lines = append(lines, line)
				continue
			}
			<-c.exited
			if c.err != nil {
				tb.Fatalf("%s: %v; stderr:\n%s", c.role, c.err, c.stderr)
			}
			return lines
		case <-guard.C:
			tb.Fatalf("%s did not exit within %s; stderr:\n%s", c.role, hangGuard, c.stderr)
		}
	}
}

// signal sends sig to the child.
func (c *child) signal(tb testing.TB, sig os.Signal) {
	tb.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		tb.Fatalf("signal %s: %v", c.role, err)
	}
}

// openTestSpool opens a new spool in a fresh temporary directory. The spool
// is a subdirectory Open creates, so its mode is 0700 whatever the umask.
func openTestSpool(tb testing.TB) *Spool {
	tb.Helper()
	s, err := Open(filepath.Join(tb.TempDir(), "spool"))
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// names lists the entries of one spool subdirectory.
func names(tb testing.TB, s *Spool, sub string) []string {
	tb.Helper()
	entries, err := os.ReadDir(s.path(sub, ""))
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.Name()
	}
	return out
}

// readLines reads a file of one id per line.
func readLines(tb testing.TB, p string) []string {
	tb.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		tb.Fatal(err)
	}
	return strings.Fields(string(data))
}

// appendLine appends line to the file p, as one write.
func appendLine(p, line string) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// childFail reports a child's failure on stderr and returns its exit code.
func childFail(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	return 1
}

// agentCommands are command lines agents typically ask to run.
var agentCommands = []string{
	"go test ./...",
	"go vet ./... && staticcheck ./...",
	"git status --short",
	"git diff --stat HEAD~1",
	"npm run lint -- --fix",
	`grep -rn "TODO" --include='*.go' .`,
	"cargo build --release 2>&1 | tail -n 20",
	"make -j4 build",
	"python -m pytest -x -q tests/",
	"ls -la /tmp && rm -rf ./build",
}

// roleWriter submits SLUICE_TEST_ARG exec requests and prints each id.
func roleWriter() int {
	s, n, err := roleSpoolCount()
	if err != nil {
		return childFail("writer: %v", err)
	}
	out := bufio.NewWriter(os.Stdout)
	session := strconv.Itoa(os.Getpid())
	for i := range n {
		req := &Request{Kind: KindExec, Command: agentCommands[i%len(agentCommands)],
			Cwd: "/home/me/src/app", TimeoutS: 300, Env: map[string]string{"GOFLAGS": "-count=1"},
			Agent: "claude-code", Session: session, Note: fmt.Sprintf("step %d", i)}
		if err := s.Submit(req); err != nil {
			return childFail("writer: submit %d: %v", i, err)
		}
		fmt.Fprintln(out, req.ID)
	}
	if err := out.Flush(); err != nil {
		return childFail("writer: %v", err)
	}
	return 0
}

// roleSpoolCount opens a role's spool (SLUICE_TEST_SPOOL) and reads the
// count it is given (SLUICE_TEST_ARG).
func roleSpoolCount() (*Spool, int, error) {
	s, err := Open(os.Getenv(envSpool))
	if err != nil {
		return nil, 0, err
	}
	n, err := strconv.Atoi(os.Getenv(envArg))
	if err != nil {
		return nil, 0, fmt.Errorf("count: %w", err)
	}
	return s, n, nil
}

// watchUntilTerm watches s until the role gets SIGTERM, and prints
// "ready" once it is watching.
func watchUntilTerm(s *Spool) (<-chan WatchEvent, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	events := s.Watch(ctx, WatchOptions{})
	fmt.Println("ready")
	return events, stop
}

// pending sorts a watch event for a watcher that acts on new requests:
// true for Pending; false for Gone, nothing to do; false and an error for
// any other.
func pending(ev WatchEvent) (bool, error) {
	switch ev.Op {
	case Pending:
		return true, nil
	case Gone:
		return false, nil
	}
	return false, fmt.Errorf("unexpected event %s %s: %v", ev.Op, ev.ID, ev.Err)
}

// roleClaimer watches the spool and answers every pending request it wins,
// recording the id of each claim it won in the file SLUICE_TEST_ARG. It
// prints "ready" once it is watching and stops on SIGTERM. Losing a race
// to the other claimer is expected; any other error, or any watch event
// but Pending and Gone, makes it exit 1.
func roleClaimer() int {
	s, err := Open(os.Getenv(envSpool))
	if err != nil {
		return childFail("claimer: %v", err)
	}
	rec, err := os.OpenFile(os.Getenv(envArg), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return childFail("claimer: %v", err)
	}
	events, stop := watchUntilTerm(s)
	defer stop()
	failures := 0
	for ev := range events {
		act, err := pending(ev)
		if err != nil {
			failures++
			fmt.Fprintf(os.Stderr, "claimer: %v\n", err)
		}
		if !act {
			continue
		}
		c, err := s.Claim(ev.ID, time.Now())
		switch {
		case err == nil:
		case errors.Is(err, ErrNotFound), errors.Is(err, ErrClaimed),
			errors.Is(err, ErrResulted), errors.Is(err, ErrBusy):
			continue // the other claimer won
		default:
			failures++
			fmt.Fprintf(os.Stderr, "claimer: claim %s: %v\n", ev.ID, err)
			continue
		}
		if _, err := fmt.Fprintln(rec, ev.ID); err != nil {
			failures++
			fmt.Fprintf(os.Stderr, "claimer: record %s: %v\n", ev.ID, err)
		}
		zero := 0
		if err := c.Finish(Result{Status: StatusDone, Decision: Allow, DecidedBy: ByPolicy, ExitCode: &zero}); err != nil {
			failures++
			fmt.Fprintf(os.Stderr, "claimer: finish %s: %v\n", ev.ID, err)
		}
	}
	if err := rec.Close(); err != nil {
		return childFail("claimer: %v", err)
	}
	if failures > 0 {
		return childFail("claimer: %d failures", failures)
	}
	return 0
}

// TestConcurrentWritersAndClaimers runs 20 writer processes against two
// competing claimer processes and checks that every request is claimed by
// exactly one of them and answered exactly once.
func TestConcurrentWritersAndClaimers(t *testing.T) {
	t.Parallel()
	const writers, perWriter = 20, 50
	const total = writers * perWriter
	s := openTestSpool(t)
	recDir := t.TempDir()

	var claimers [2]*child
	recs := make([]string, len(claimers))
	for i := range claimers {
		recs[i] = filepath.Join(recDir, fmt.Sprintf("claimer%d.ids", i))
		claimers[i] = startRole(t, "claimer", envSpool+"="+s.Dir(), envArg+"="+recs[i])
	}
	for _, c := range claimers {
		c.expect(t, "ready")
	}

	start := time.Now()
	ws := make([]*child, writers)
	for i := range ws {
		ws[i] = startRole(t, "writer", envSpool+"="+s.Dir(), envArg+"="+strconv.Itoa(perWriter))
	}
	submitted := make(map[string]bool, total)
	for _, w := range ws {
		for _, id := range w.wait(t) {
			if submitted[id] {
				t.Fatalf("id %s submitted twice", id)
			}
			submitted[id] = true
		}
	}
	if len(submitted) != total {
		t.Fatalf("writers submitted %d requests, want %d", len(submitted), total)
	}

	t.Logf("%d writers submitted %d requests in %s", writers, total, time.Since(start).Round(time.Millisecond))

	// Wait for the answers. The deadline only guards against a lost
	// request hanging the test.
	deadline := time.Now().Add(hangGuard)
	for {
		n := len(names(t, s, dirOut))
		if n >= total {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d results after %s; new/ holds %d, cur/ holds %d",
				n, total, hangGuard, len(names(t, s, dirNew)), len(names(t, s, dirCur)))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("all %d results in %s", total, time.Since(start).Round(time.Millisecond))
	for _, c := range claimers {
		c.signal(t, syscall.SIGTERM)
	}
	for _, c := range claimers {
		c.wait(t)
	}

	// Every result file is a done result for a submitted id: as many
	// result files as ids means each id was answered exactly once.
	out := names(t, s, dirOut)
	if len(out) != total {
		t.Errorf("out/ holds %d files, want %d results (no .tmp, .wake or .log)", len(out), total)
	}
	for _, name := range out {
		id, ok := strings.CutSuffix(name, ".json")
		if !ok || !submitted[id] {
			t.Errorf("out/%s is not the result of a submitted request", name)
			continue
		}
		res, err := s.ReadResult(id)
		if err != nil {
			t.Errorf("result %s: %v", id, err)
			continue
		}
		if res.ID != id || res.Status != StatusDone || res.Decision != Allow ||
			res.DecidedBy != ByPolicy || res.ExitCode == nil || *res.ExitCode != 0 {
			t.Errorf("result %s = %+v, want done/allow/policy exit 0", id, res)
		}
	}

	// Each id was claimed by exactly one claimer, once.
	claimedBy := make(map[string]int, total)
	for i, rec := range recs {
		ids := readLines(t, rec)
		t.Logf("claimer %d answered %d requests", i, len(ids))
		for _, id := range ids {
			if prev, dup := claimedBy[id]; dup {
				t.Errorf("id %s claimed twice: by claimer %d and claimer %d", id, prev, i)
			}
			claimedBy[id] = i
		}
	}
	for id := range submitted {
		if _, ok := claimedBy[id]; !ok {
			t.Errorf("id %s was never claimed", id)
		}
	}
	if len(claimedBy) != total {
		t.Errorf("%d distinct ids claimed, want %d", len(claimedBy), total)
	}

	for _, sub := range []string{dirNew, dirTmp, dirBad} {
		if left := names(t, s, sub); len(left) != 0 {
			t.Errorf("%s/ holds %d files, want none: %v", sub, len(left), left[:min(len(left), 5)])
		}
	}
	if n := len(names(t, s, dirCur)); n != total {
		t.Errorf("cur/ holds %d claimed requests, want %d", n, total)
	}
	if list, err := s.List(); err != nil || len(list) != 0 {
		t.Errorf("List() = %d entries, %v; want none", len(list), err)
	}
}

// roleCrashClaimer claims request SLUICE_TEST_ID, appends its id to the
// marker file SLUICE_TEST_FILE (as if it started the command), prints
// "claimed" and holds the claim until it is killed. Its stdin reaching EOF
// (the test ended without killing it) makes it exit 1.
func roleCrashClaimer() int {
	s, err := Open(os.Getenv(envSpool))
	if err != nil {
		return childFail("crash-claimer: %v", err)
	}
	id := os.Getenv(envID)
	c, err := s.Claim(id, time.Now())
	if err != nil {
		return childFail("crash-claimer: claim %s: %v", id, err)
	}
	if err := appendLine(os.Getenv(envFile), id); err != nil {
		return childFail("crash-claimer: %v", err)
	}
	fmt.Println("claimed")
	var buf [1]byte
	_, _ = os.Stdin.Read(buf[:])
	runtime.KeepAlive(c)
	return childFail("crash-claimer: not killed")
}

// runIfClaimed is what a restarted actor does with request id: claim it
// and, only if the claim succeeds, run it (append to marker) and answer.
func runIfClaimed(t *testing.T, s *Spool, id, marker string) error {
	t.Helper()
	c, err := s.Claim(id, time.Now())
	if err != nil {
		return err
	}
	if err := appendLine(marker, id); err != nil {
		t.Fatal(err)
	}
	zero := 0
	if err := c.Finish(Result{Status: StatusDone, Decision: Allow, DecidedBy: ByPolicy, ExitCode: &zero}); err != nil {
		t.Errorf("finish %s: %v", id, err)
	}
	return nil
}

// listState returns the state List gives id, or "" if it lists no such id.
func listState(t *testing.T, s *Spool, id string) State {
	t.Helper()
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list {
		if e.ID == id {
			return e.State
		}
	}
	return ""
}

// TestCrashWhileHoldingClaim kills an actor process that holds a claim and
// checks that the next console answers the request interrupted, never
// runs it again, and recovers it only once.
//
// It is not parallel: List takes a shared lock on the orphan for a moment,
// and a child forked by a parallel test meanwhile inherits that lock until
// it execs. A one-shot Recover takes such a lock for a live actor and skips
// the orphan (Watch's periodic rescan recovers it later), so the test
// would be flaky.
func TestCrashWhileHoldingClaim(t *testing.T) {
	tests := []struct {
		name    string
		recover func(t *testing.T, s *Spool, id string)
	}{
		{"Recover", func(t *testing.T, s *Spool, id string) {
			t.Helper()
			ids, err := s.Recover()
			if err != nil || !slices.Equal(ids, []string{id}) {
				t.Fatalf("Recover() = %v, %v; want [%s]", ids, err, id)
			}
		}},
		{"Watch", func(t *testing.T, s *Spool, id string) {
			t.Helper()
			ctx, cancel := context.WithCancel(context.Background())
			events := s.Watch(ctx, WatchOptions{})
			defer func() {
				cancel()
				for range events {
				}
			}()
			guard := time.NewTimer(hangGuard)
			defer guard.Stop()
			for {
				select {
				case ev := <-events:
					switch {
					case ev.Op == Interrupted && ev.ID == id:
						return
					case ev.Op == Pending && ev.ID == id:
						t.Fatalf("watch reported the killed actor's request %s pending again", id)
					case ev.Op == Problem || ev.Op == Invalid:
						t.Fatalf("watch: %s %s: %v", ev.Op, ev.ID, ev.Err)
					}
				case <-guard.C:
					t.Fatalf("watch reported no Interrupted event for %s within %s", id, hangGuard)
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTestSpool(t)
			marker := filepath.Join(t.TempDir(), "ran")
			req := &Request{Kind: KindExec, Command: "go test ./...", Cwd: "/home/me/src/app", Agent: "claude-code"}
			if err := s.Submit(req); err != nil {
				t.Fatal(err)
			}
			id := req.ID

			actor := startRole(t, "crash-claimer", envSpool+"="+s.Dir(), envID+"="+id, envFile+"="+marker)
			actor.expect(t, "claimed")

			// While the actor lives its claim stands: nobody else gets it,
			// and recovery leaves it alone.
			if st := listState(t, s, id); st != StateRunning {
				t.Errorf("List state while the actor lives = %q, want %q", st, StateRunning)
			}
			if err := runIfClaimed(t, s, id, marker); !errors.Is(err, ErrClaimed) {
				t.Errorf("Claim while the actor lives = %v, want ErrClaimed", err)
			}
			if ids, err := s.Recover(); err != nil || len(ids) != 0 {
				t.Errorf("Recover while the actor lives = %v, %v; want nothing", ids, err)
			}
			if _, err := s.ReadResult(id); !errors.Is(err, ErrNoResult) {
				t.Fatalf("result while the actor lives: %v, want ErrNoResult", err)
			}

			actor.signal(t, syscall.SIGKILL)
			<-actor.exited
			var exitErr *exec.ExitError
			if !errors.As(actor.err, &exitErr) || exitErr.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("actor ended with %v, want killed by SIGKILL; stderr:\n%s", actor.err, actor.stderr)
			}
			if st := listState(t, s, id); st != StateOrphaned {
				t.Errorf("List state after the kill = %q, want %q", st, StateOrphaned)
			}

			tt.recover(t, s, id) // the restarted console

			res, err := s.ReadResult(id)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != StatusInterrupted || res.Ran() {
				t.Errorf("result = %+v, want status interrupted", res)
			}
			first, err := os.ReadFile(s.ResultPath(id))
			if err != nil {
				t.Fatal(err)
			}
			if err := runIfClaimed(t, s, id, marker); !errors.Is(err, ErrResulted) {
				t.Errorf("Claim after recovery = %v, want ErrResulted", err)
			}
			if ran := readLines(t, marker); !slices.Equal(ran, []string{id}) {
				t.Errorf("the request ran %d times (%v), want once", len(ran), ran)
			}
			if ids, err := s.Recover(); err != nil || len(ids) != 0 {
				t.Errorf("second Recover() = %v, %v; want nothing", ids, err)
			}
			if again, err := os.ReadFile(s.ResultPath(id)); err != nil || !bytes.Equal(again, first) {
				t.Errorf("the result changed after the second Recover: %s (%v)", again, err)
			}
			if st := listState(t, s, id); st != "" {
				t.Errorf("List state after recovery = %q, want not listed", st)
			}
			for _, sub := range []string{dirNew, dirTmp, dirBad} {
				if left := names(t, s, sub); len(left) != 0 {
					t.Errorf("%s/ holds %v, want nothing", sub, left)
				}
			}
		})
	}
}
