package tui

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sluice-dev/sluice/queue"
)

// testFleet records the decisions a fleet console sends, and refuses the
// ones it is told to.
type testFleet struct {
	mu      sync.Mutex
	sent    []string         // "approve b1/ID", "approve b1/ID for the run", "deny b2/ID: reason"
	shown   []*queue.Request // the values the decisions were made on
	refuse  error
	linkOK  bool
	linkTxt string
}

func (f *testFleet) Approve(_ context.Context, shown *queue.Request, scope queue.Scope) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuse != nil {
		return f.refuse
	}
	what := "approve " + shown.ID
	if scope != "" && scope != queue.ScopeOnce {
		what += " for the " + string(scope)
	}
	f.sent, f.shown = append(f.sent, what), append(f.shown, shown)
	return nil
}

func (f *testFleet) Deny(_ context.Context, shown *queue.Request, reason string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent, f.shown = append(f.sent, "deny "+shown.ID+": "+reason), append(f.shown, shown)
	return nil
}

func (f *testFleet) Link() (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.linkTxt, f.linkOK
}

func newFleetFixture(t *testing.T) (*fixture, *testFleet) {
	t.Helper()
	fl := &testFleet{linkOK: true, linkTxt: "nats://hub.example:4222"}
	c := &clock{t: time.Now()}
	m := New(Options{Fleet: fl, Actor: "alice", Now: c.now})
	f := &fixture{t: t, m: m, clock: c}
	f.update(tea.WindowSizeMsg{Width: 120, Height: 30})
	return f, fl
}

// arrive hands the console a request waiting on box, as the hub link
// does.
func (f *fixture) arrive(box, cmd string) *queue.Request {
	f.t.Helper()
	req := &queue.Request{ID: box + "/" + queue.NewID(), Kind: queue.KindExec, Command: cmd, Cwd: "/home/dev/app", Agent: "claude-code", CreatedAt: time.Now()}
	f.m.Observer().Pending(req, testJudge{}.Judge(req))
	f.drain()
	return req
}

// The fleet console shows each request's box, decides with the same keys
// through the hub on the very request shown, and keeps the row until its
// box acts.
func TestFleetDecides(t *testing.T) {
	t.Parallel()
	f, fl := newFleetFixture(t)
	r1 := f.arrive("build-1", "make deploy")
	r2 := f.arrive("laptop", "rm -rf build")
	screen := ansi.Strip(f.m.render())
	for _, want := range []string{"hub nats://hub.example:4222", "build-1 claude-code make deploy", "laptop claude-code rm -rf build", "box      build-1"} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
	f.clock.add(time.Second)
	f.run(f.press(f.m.keys.Approve))
	if len(fl.sent) != 1 || fl.sent[0] != "approve "+r1.ID || fl.shown[0] != r1 {
		t.Fatalf("sent %v, want the approval of the request shown", fl.sent)
	}
	if !strings.Contains(f.m.status, "at the hub: build-1 carries it out") {
		t.Errorf("status %q", f.m.status)
	}
	// Pressed again before the box acted: nothing more is sent.
	f.run(f.press(f.m.keys.Approve))
	if len(fl.sent) != 1 {
		t.Fatalf("a second press sent %v", fl.sent)
	}
	if !strings.Contains(ansi.Strip(f.m.render()), "approved, waiting for its box") {
		t.Error("the decided row does not say it waits for its box")
	}
	// The box ran it: its output and outcome come through the observer.
	f.m.Observer().Gone(r1.ID, queue.Gone)
	w := f.m.Observer().Started(r1, testJudge{}.Judge(r1), queue.ByHuman)
	w([]byte("deployed to build-1\r\n"))
	f.m.Observer().Finished(r1, queue.Result{ID: r1.ID, Status: queue.StatusDone, ExitCode: new(int), DecidedBy: queue.ByHuman})
	f.m.Logged([]queue.Event{{ID: r1.ID, Event: queue.EventApproved, Actor: "alice@c1"}})
	time.Sleep(50 * time.Millisecond) // the pacer hands output to the screen
	f.drain()
	f.clock.add(time.Second)
	f.run(f.press(f.m.keys.Deny))
	f.typeText("not on my laptop")
	f.run(f.update(keyMsg("enter")))
	if len(fl.sent) != 2 || fl.sent[1] != "deny "+r2.ID+": not on my laptop" {
		t.Fatalf("sent %v", fl.sent)
	}
	f.update(keyMsg("tab"))
	screen = ansi.Strip(f.m.render())
	if !strings.Contains(screen, "done  exit 0 0.0s build-1 make deploy") || !strings.Contains(screen, "deployed to build-1") {
		t.Errorf("History or output of the box's run missing:\n%s", screen)
	}
	f.update(keyMsg("down"))
	if screen = ansi.Strip(f.m.render()); !strings.Contains(screen, "done exit 0 · by alice@c1") && !strings.Contains(screen, "done  exit 0 · by alice@c1") {
		t.Errorf("the run's detail does not name who approved it:\n%s", screen)
	}
}

// What only a box's own console can do is refused with a reason, and its
// keys are not offered; quitting asks nothing (the runs go on on their
// boxes).
func TestFleetLocalOnlyKeys(t *testing.T) {
	t.Parallel()
	f, fl := newFleetFixture(t)
	f.arrive("b1", "npm publish")
	f.clock.add(time.Second)
	for _, b := range []struct {
		name string
		k    string
	}{{"edit", f.m.keys.Edit.Keys()[0]}, {"rule", f.m.keys.ApproveRule.Keys()[0]}, {"trust", f.m.keys.Trust.Keys()[0]}, {"unconfined", f.m.keys.ApproveUnconfined.Keys()[0]}} {
		f.run(f.update(keyMsg(b.k)))
		if f.m.mode != modeNormal || f.m.dlg != nil || !strings.Contains(f.m.status, "made on b1 itself") {
			t.Errorf("%s: mode %v, status %q", b.name, state(f.m), f.m.status)
		}
	}
	if len(fl.sent) != 0 {
		t.Fatalf("sent %v", fl.sent)
	}
	help := ansi.Strip(f.m.helpLine())
	if strings.Contains(help, "edit") || strings.Contains(help, "kill") {
		t.Errorf("help line offers what a fleet console cannot do: %q", help)
	}
	r := f.arrive("b1", "sleep 100")
	f.m.Observer().Gone(r.ID, queue.Gone)
	f.m.Observer().Started(r, testJudge{}.Judge(r), queue.ByHuman)
	f.drain()
	f.run(f.press(f.m.keys.Kill))
	if !strings.Contains(f.m.status, "runs on b1: stop it there") {
		t.Errorf("kill: status %q", f.m.status)
	}
	if cmd := f.press(f.m.keys.Quit); cmd == nil || isOpen[quitDialog](f.m) {
		t.Error("quitting a fleet console asked to kill runs it does not hold")
	}
}

// A refused decision (another console first) is said, and the request can
// still be looked at; @BOX filters one box.
func TestFleetRefusedAndFilter(t *testing.T) {
	t.Parallel()
	f, fl := newFleetFixture(t)
	f.arrive("b1", "make test")
	r2 := f.arrive("b2", "make test")
	f.clock.add(time.Second)
	fl.refuse = errors.New("already decided: deny by bob@c2 at 2026-11-25 10:00:00")
	f.run(f.press(f.m.keys.Approve))
	if !f.m.statusErr || !strings.Contains(f.m.status, "already decided: deny by bob@c2") {
		t.Errorf("status %q", f.m.status)
	}
	f.run(f.press(f.m.keys.Filter))
	f.typeText("@b2")
	f.run(f.update(keyMsg("enter")))
	if v := f.m.visible(); len(v) != 1 || v[0].req != r2 {
		t.Fatalf("@b2 shows %d requests", len(v))
	}
	fl.mu.Lock()
	fl.linkOK, fl.linkTxt = false, "lost the hub: EOF; retrying"
	fl.mu.Unlock()
	f.m.LinkChanged()
	f.drain()
	if s := ansi.Strip(f.m.render()); !strings.Contains(s, "HUB UNREACHABLE: lost the hub") {
		t.Errorf("header does not say the hub is down:\n%s", s)
	}
}

// A batch over the hub: each marked request is approved as shown, on its
// own box.
func TestFleetBatch(t *testing.T) {
	t.Parallel()
	f, fl := newFleetFixture(t)
	r1 := f.arrive("b1", "make test")
	r2 := f.arrive("b2", "make test")
	f.clock.add(time.Second)
	f.run(f.press(f.m.keys.Mark))
	f.update(keyMsg("down"))
	f.clock.add(time.Second)
	f.run(f.press(f.m.keys.Mark))
	f.run(f.press(f.m.keys.Approve))
	if !isOpen[batchDialog](f.m) {
		t.Fatalf("mode %v, want the batch confirmation", state(f.m))
	}
	f.run(f.press(f.m.keys.Yes))
	fl.mu.Lock()
	defer fl.mu.Unlock()
	got := strings.Join(fl.sent, ",")
	if len(fl.sent) != 2 || !strings.Contains(got, "approve "+r1.ID) || !strings.Contains(got, "approve "+r2.ID) {
		t.Fatalf("sent %v", fl.sent)
	}
}

// TestAgeFromCreatedAt: a request's age counts from its created_at, not
// from when this console learned of it (a fleet console after a hub
// restart learns of requests made minutes before), and a created_at in
// the future counts from now.
func TestAgeFromCreatedAt(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	now := f.clock.now()
	old := &queue.Request{ID: queue.NewID(), Kind: queue.KindExec, Command: "make deploy", Cwd: "/srv/app", Agent: "codex",
		CreatedAt: now.Add(-7 * time.Minute)}
	future := &queue.Request{ID: queue.NewID(), Kind: queue.KindExec, Command: "make lint", Cwd: "/srv/app", Agent: "codex",
		CreatedAt: now.Add(time.Hour)}
	f.m.Observer().Pending(old, testJudge{}.Judge(old))
	f.m.Observer().Pending(future, testJudge{}.Judge(future))
	f.drain()
	v := ansi.Strip(f.m.View().Content)
	var deploy, lint string
	for _, l := range strings.Split(v, "\n") {
		switch {
		case strings.Contains(l, "make deploy") && deploy == "":
			deploy = l
		case strings.Contains(l, "make lint") && lint == "":
			lint = l
		}
	}
	if !strings.Contains(deploy, " 7m ") {
		t.Errorf("a request made 7 minutes ago: %q, want age 7m", deploy)
	}
	if !strings.Contains(lint, " 0s ") {
		t.Errorf("a request dated in the future: %q, want age 0s", lint)
	}
}
