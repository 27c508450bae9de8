package queue

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// wordJudge allows commands starting with "ls", denies "sudo", asks
// about the rest.
type wordJudge struct{}

func (wordJudge) Judge(r *Request) Verdict {
	switch {
	case strings.HasPrefix(r.Command, "ls"):
		return Verdict{Action: "allow", Category: "read_only", Risk: "low"}
	case strings.HasPrefix(r.Command, "sudo"):
		return Verdict{Action: "deny", Category: "privileged", Risk: "critical", Reasons: []string{"sudo runs as another user"}}
	}
	return Verdict{Action: "ask", Category: "mutating", Risk: "medium"}
}

// blockRunner "runs" a command by printing it, then waits for ctx when
// the command is "sleep".
type blockRunner struct{}

func (blockRunner) Run(ctx context.Context, r *Request, opt RunOptions) (Result, string) {
	out := opt.Output
	if out != nil {
		out([]byte("ran: " + r.Command))
	}
	if r.Command == "sleep" {
		<-ctx.Done()
		return Result{Status: StatusKilled}, ""
	}
	return Result{Status: StatusDone, ExitCode: new(int)}, ""
}

// memRecorder is a Recorder that holds what it recorded.
type memRecorder struct {
	mu     sync.Mutex
	events []Event
}

func (m *memRecorder) Record(ev Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, ev)
	return nil
}

func (m *memRecorder) find(id string, name EventName) (Event, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ev := range m.events {
		if ev.ID == id && ev.Event == name {
			return ev, true
		}
	}
	return Event{}, false
}

// chanObserver turns observer calls into lines on a channel.
type chanObserver struct{ ch chan string }

func (o chanObserver) Pending(r *Request, v Verdict) {
	o.ch <- "pending " + r.ID + " " + string(v.Action)
}
func (o chanObserver) Gone(id string, op WatchOp) { o.ch <- "gone " + id + " " + op.String() }
func (o chanObserver) Started(r *Request, _ Verdict, by Decider) func([]byte) {
	o.ch <- "started " + r.ID + " " + string(by)
	return func(p []byte) { o.ch <- "output " + r.ID + " " + string(p) }
}
func (o chanObserver) Finished(r *Request, res Result) {
	o.ch <- "finished " + r.ID + " " + string(res.Status)
}

// expectLine waits for the observer to have said want, in any order
// relative to other lines (seen keeps what earlier waits read past).
func expectLine(t *testing.T, ch <-chan string, seen map[string]bool, want string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for !seen[want] {
		select {
		case got := <-ch:
			seen[got] = true
		case <-timeout:
			t.Fatalf("no %q within 10s; saw %v", want, seen)
		}
	}
}

func TestEngineObserverEditKillDeny(t *testing.T) {
	t.Parallel()
	sp := newSpool(t)
	rec := &memRecorder{}
	obs := chanObserver{ch: make(chan string, 100)}
	seen := map[string]bool{}
	e := &Engine{Spool: sp, Judge: wordJudge{}, Runner: blockRunner{}, Recorder: rec, Observer: obs}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error)
	go func() { served <- e.Serve(ctx) }()

	auto, ask, bad := execReq("ls -la"), execReq("rm -rf build"), execReq("sudo ls")
	for _, r := range []*Request{auto, ask, bad} {
		mustDo(t, sp.Submit(r))
	}
	expectLine(t, obs.ch, seen, "started "+auto.ID+" policy")
	expectLine(t, obs.ch, seen, "finished "+auto.ID+" done")
	expectLine(t, obs.ch, seen, "pending "+ask.ID+" ask")

	// A person edits the command before approving: the edited command is
	// judged and run, the audit keeps both, and the result names it.
	var out strings.Builder
	res, err := e.ApproveAs(ctx, ask.ID, Approval{Actor: "alice", Command: "ls build", Output: func(p []byte) { out.Write(p) }})
	mustDo(t, err)
	if res.Status != StatusDone || res.Command != "ls build" || out.String() != "ran: ls build" {
		t.Fatalf("edited approve: %+v, output %q", res, out.String())
	}
	if got := resultOf(t, sp, ask.ID); got.Command != "ls build" || got.DecidedBy != ByHuman {
		t.Errorf("result file %+v, want command %q decided by a person", got, "ls build")
	}
	if ev, ok := rec.find(ask.ID, EventApproved); !ok || ev.Command != "ls build" || ev.EditedFrom != "rm -rf build" || ev.Actor != "alice" {
		t.Errorf("approved event %+v, want command edited from the original, by alice", ev)
	}
	// Every line names the spool it came through: one audit log may
	// serve several, and a console's History shows its own.
	for _, name := range []EventName{EventQueued, EventApproved, EventStarted, EventFinished} {
		if ev, ok := rec.find(ask.ID, name); !ok || ev.Spool != sp.Dir() {
			t.Errorf("%s: spool %q, want %q", name, ev.Spool, sp.Dir())
		}
	}

	// An edit cannot turn a request into something the policy denies.
	ask2 := submit(t, sp, "make deploy")
	expectLine(t, obs.ch, seen, "pending "+ask2.ID+" ask")
	if _, err := e.ApproveAs(ctx, ask2.ID, Approval{Actor: "alice", Command: "sudo make deploy"}); !errors.Is(err, ErrPolicyDenies) {
		t.Fatalf("approving an edit the policy denies = %v, want ErrPolicyDenies", err)
	}

	// Kill stops a person's run; Deny refuses with the reason.
	long, no := execReq("sleep"), execReq("git push --force")
	mustDo(t, sp.Submit(long))
	mustDo(t, sp.Submit(no))
	expectLine(t, obs.ch, seen, "pending "+no.ID+" ask")
	done := make(chan Result)
	go func() {
		res, _ := e.Approve(ctx, long.ID, "alice", nil)
		done <- res
	}()
	expectLine(t, obs.ch, seen, "started "+long.ID+" human")
	// Approved by alice, stopped by bob (a console quitting, or x): the
	// audit line names bob.
	for e.KillAllAs("bob") == 0 {
		time.Sleep(time.Millisecond)
	}
	if res := <-done; res.Status != StatusKilled || res.Reason != "killed by bob" {
		t.Errorf("killed run answered %s (%q)", res.Status, res.Reason)
	}
	if ev, ok := rec.find(long.ID, EventKilled); !ok || ev.Actor != "bob" {
		t.Errorf("killed event %+v, want bob as its actor", ev)
	}
	if e.Kill(long.ID) {
		t.Error("Kill of a finished run reported true")
	}
	res, err = e.Deny(no.ID, "alice", "not on a Friday")
	mustDo(t, err)
	if res.Status != StatusDenied || resultOf(t, sp, no.ID).Reason != "not on a Friday" {
		t.Errorf("deny: %+v", res)
	}
	if ev, ok := rec.find(no.ID, EventDenied); !ok || ev.Actor != "alice" {
		t.Errorf("denied event %+v", ev)
	}
	expectLine(t, obs.ch, seen, "gone "+no.ID+" gone")
	cancel()
	<-served
}

func TestServingWhileServe(t *testing.T) {
	t.Parallel()
	sp := newSpool(t)
	if sp.Serving() {
		t.Fatal("Serving before any engine started")
	}
	e := &Engine{Spool: sp, Judge: wordJudge{}, Runner: blockRunner{}, Recorder: &memRecorder{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- e.Serve(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for !sp.Serving() {
		if time.Now().After(deadline) {
			t.Fatal("Serving false while an engine serves")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	// A child another test forks in this process holds a copy of the
	// lock's descriptor until it execs: allow it a moment.
	for deadline := time.Now().Add(10 * time.Second); sp.Serving(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Serving after the engine stopped")
		}
	}
}

// slowJudge holds its verdict on "slow" lines until released.
type slowJudge struct{ release chan struct{} }

func (j slowJudge) Judge(r *Request) Verdict {
	if strings.HasPrefix(r.Command, "slow") {
		<-j.release
	}
	return wordJudge{}.Judge(r)
}

// TestJudgingDoesNotHoldOthers: a request whose verdict takes long does
// not delay the requests that come after it; and a request that leaves
// new/ while it is judged is not acted on.
func TestJudgingDoesNotHoldOthers(t *testing.T) {
	t.Parallel()
	sp := newSpool(t)
	obs := chanObserver{ch: make(chan string, 100)}
	seen := map[string]bool{}
	j := slowJudge{release: make(chan struct{})}
	e := &Engine{Spool: sp, Judge: j, Runner: blockRunner{}, Recorder: &memRecorder{}, Observer: obs}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error)
	go func() { served <- e.Serve(ctx) }()

	slow, fast := execReq("slow ls"), execReq("ls -la")
	mustDo(t, sp.Submit(slow))
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		e.judgeMu.Lock()
		judging := e.judging[slow.ID]
		e.judgeMu.Unlock()
		if judging {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slow request was never judged")
		}
	}
	mustDo(t, sp.Submit(fast))
	expectLine(t, obs.ch, seen, "finished "+fast.ID+" done")

	// The slow one is withdrawn while it is judged: released, its verdict
	// (ask) is not acted on, and the person never sees it.
	if c, err := sp.Claim(slow.ID, time.Now()); err == nil {
		mustDo(t, c.Finish(Result{Status: StatusExpired, Decision: Deny, DecidedBy: ByHuman, Reason: "withdrawn"}))
	} else {
		t.Fatal(err)
	}
	expectLine(t, obs.ch, seen, "gone "+slow.ID+" gone")
	close(j.release)
	cancel()
	if err := <-served; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	close(obs.ch)
	for l := range obs.ch {
		if strings.HasPrefix(l, "pending "+slow.ID) {
			t.Fatalf("a request that left new/ while judged was shown: %q", l)
		}
	}
}

// failingRecorder fails the first fail queued records (a full disk),
// then records.
type failingRecorder struct {
	memRecorder
	fail int
}

func (f *failingRecorder) Record(ev Event) error {
	f.mu.Lock()
	if ev.Event == EventQueued && f.fail > 0 {
		f.fail--
		f.mu.Unlock()
		return errors.New("no space left on device")
	}
	f.mu.Unlock()
	return f.memRecorder.Record(ev)
}

// TestEngineAskSurvivesAuditFailure: an ask whose queued line could not
// be recorded is not shown then, and is shown once the log takes it: it
// does not wait unseen in new/ until it expires.
func TestEngineAskSurvivesAuditFailure(t *testing.T) {
	t.Parallel()
	sp := newSpool(t)
	rec := &failingRecorder{fail: 2}
	obs := chanObserver{ch: make(chan string, 100)}
	e := &Engine{Spool: sp, Judge: wordJudge{}, Runner: blockRunner{}, Recorder: rec, Observer: obs}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.Serve(ctx)
	ask := submit(t, sp, "make deploy")
	expectLine(t, obs.ch, map[string]bool{}, "pending "+ask.ID+" ask")
	if _, ok := rec.find(ask.ID, EventQueued); !ok {
		t.Error("shown without its queued line")
	}
}

// TestServePresentOnceItCan: an engine that cannot mark itself present
// on the spool as it starts (serving.lock cannot be opened: a read-only
// spool, here a directory in its place) says why, serves anyway, and is
// present once it can be: writers that must not wait in vain (hooks,
// the MCP server) would otherwise withdraw what it serves.
func TestServePresentOnceItCan(t *testing.T) {
	t.Parallel()
	sp := newSpool(t)
	lock := filepath.Join(sp.Dir(), servingFile)
	if err := os.Mkdir(lock, 0o700); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logged []string
	e := &Engine{Spool: sp, Judge: wordJudge{}, Runner: blockRunner{}, Recorder: &memRecorder{},
		Logf: func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			logged = append(logged, fmt.Sprintf(format, args...))
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	said := func(text string) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range logged {
			if strings.Contains(l, text) {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(10 * time.Second); !said("serving lock"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the engine did not say why it is not present: %q", logged)
		}
	}
	if sp.Serving() {
		t.Fatal("present with no serving.lock")
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); !sp.Serving(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the engine never marked itself present once it could")
		}
	}
}
