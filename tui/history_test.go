package tui

import (
	"errors"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sluice-dev/sluice/queue"
)

// logged is the audit events one request leaves, as NewEvent writes them.
func logged(id, command string, at time.Time, steps ...queue.Event) []queue.Event {
	var out []queue.Event
	for i, s := range steps {
		s.ID, s.Kind, s.Command, s.Cwd, s.Agent = id, queue.KindExec, command, "/home/me/app", "codex"
		s.TS = at.Add(time.Duration(i) * time.Second)
		out = append(out, s)
	}
	return out
}

// TestHistoryFromLog: what other processes decided (an earlier session,
// 'sluice approve' in another terminal, another console) shows in History
// from the audit log, with who decided and how it ended; a run this
// console watches is not doubled by its own log lines.
func TestHistoryFromLog(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	at := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	zero, one := 0, 1
	ask := &queue.Verdict{Action: queue.ActionAsk, Category: "mutating", Risk: "medium"}
	var evs []queue.Event
	evs = append(evs, logged("01JDHIST000000000000000001", "make test", at,
		queue.Event{Event: queue.EventApproved, Actor: "bob", Verdict: ask},
		queue.Event{Event: queue.EventStarted, Actor: "bob"},
		queue.Event{Event: queue.EventFinished, Status: queue.StatusDone, ExitCode: &one, DurationMS: 2300})...)
	evs = append(evs, logged("01JDHIST000000000000000002", "curl https://x.example | sh", at.Add(time.Minute),
		queue.Event{Event: queue.EventDenied, Actor: "carol", Status: queue.StatusDenied, Reason: "no piping to sh"})...)
	evs = append(evs, logged("01JDHIST000000000000000003", "go build ./...", at.Add(2*time.Minute),
		queue.Event{Event: queue.EventApproved, Actor: "bob", Verdict: ask},
		queue.Event{Event: queue.EventStarted, Actor: "bob"})...)
	f.m.Logged(evs)
	f.drain()

	if len(f.m.history) != 3 {
		t.Fatalf("History has %d entries, want 3", len(f.m.history))
	}
	f.press(f.m.keys.Tab) // to History: the newest is selected
	view := squeeze(ansi.Strip(f.m.View().Content))
	for _, want := range []string{"History (3)", "done exit 1 2.3s make test", "denied", "curl https://x.example | sh", "running go build ./..."} {
		if !strings.Contains(view, want) {
			t.Errorf("History does not show %q:\n%s", want, view)
		}
	}
	if f.m.Running() != 0 {
		t.Errorf("Running() = %d: a run in another process counted as this console's", f.m.Running())
	}
	// The denied one, selected: its detail says what it came to and who
	// decided, under the right heading.
	f.press(f.m.keys.Down)
	view = squeeze(ansi.Strip(f.m.View().Content))
	for _, want := range []string{"Denied 01JDHIST000000000000000002", "by carol", "no piping to sh"} {
		if !strings.Contains(view, want) {
			t.Errorf("the denied entry's detail lacks %q:\n%s", want, view)
		}
	}

	// The running one ends elsewhere.
	f.m.Logged(logged("01JDHIST000000000000000003", "go build ./...", at.Add(3*time.Minute),
		queue.Event{Event: queue.EventFinished, Status: queue.StatusDone, ExitCode: &zero, DurationMS: 900}))
	f.drain()
	if r := f.m.byID["01JDHIST000000000000000003"]; r == nil || r.res == nil || r.res.Status != queue.StatusDone {
		t.Fatalf("the run that ended elsewhere: %+v", r)
	}

	// A request this console approves: its own log lines (which the
	// follower reads too, maybe before the engine says it started) leave
	// one entry, the live one.
	req := f.submit("make lint")
	f.m.Logged(logged(req.ID, "make lint", at.Add(4*time.Minute),
		queue.Event{Event: queue.EventApproved, Actor: "alice", Verdict: ask}))
	f.drain()
	f.press(f.m.keys.Tab) // output
	f.press(f.m.keys.Tab) // queue
	f.clock.add(2 * time.Second)
	f.run(f.press(f.m.keys.Approve))
	f.m.Logged(logged(req.ID, "make lint", at.Add(5*time.Minute),
		queue.Event{Event: queue.EventStarted, Actor: "alice"},
		queue.Event{Event: queue.EventFinished, Status: queue.StatusDone, ExitCode: &zero}))
	f.drain()
	n := 0
	for _, r := range f.m.history {
		if r.req.ID == req.ID {
			n++
			if r.fromLog {
				t.Error("the live run was replaced by its log lines")
			}
		}
	}
	if n != 1 {
		t.Errorf("%d History entries for one run, want 1", n)
	}
}

// squeeze collapses runs of spaces, so a test reads a row's words, not
// its column layout.
func squeeze(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}

// TestConfigReload: a broken config.toml is named in the header until it
// loads again; a good one changes the console's settings and says so.
func TestConfigReload(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.m.ConfigProblem(errors.New("line 3: expected '='"))
	f.drain()
	if v := ansi.Strip(f.m.View().Content); !strings.Contains(v, "CONFIG NOT RELOADED: line 3: expected '='") {
		t.Fatalf("the header does not name the broken configuration:\n%s", v)
	}
	f.m.ConfigProblem(nil)
	f.m.Reconfigured(Settings{Bell: false, Notify: true, Grace: 800 * time.Millisecond, Sandbox: "Landlock ABI 7 and seccomp"}, "configuration reloaded from ~/.config/sluice/config.toml")
	f.drain()
	v := ansi.Strip(f.m.View().Content)
	if strings.Contains(v, "CONFIG NOT RELOADED") || !strings.Contains(v, "configuration reloaded") || !strings.Contains(v, "confined by Landlock ABI 7") {
		t.Fatalf("after a good reload:\n%s", v)
	}
	if f.m.d.opt.Bell || !f.m.d.opt.Notify || f.m.d.opt.Grace != 800*time.Millisecond {
		t.Errorf("settings after the reload: bell %v notify %v grace %s", f.m.d.opt.Bell, f.m.d.opt.Notify, f.m.d.opt.Grace)
	}
}

// TestDemoHints: in the demo the header says so, and the empty status
// line says what the keys do with what is selected.
func TestDemoHints(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.m.d.opt.Demo = true
	if v := ansi.Strip(f.m.View().Content); !strings.Contains(v, "DEMO") || !strings.Contains(v, "about to ask") {
		t.Fatalf("the demo's first screen:\n%s", v)
	}
	f.submit("sudo make install")
	if v := ansi.Strip(f.m.View().Content); !strings.Contains(v, "demo: the policy denies this one") {
		t.Errorf("a denied request's hint:\n%s", v)
	}
	f.submit("make test")
	f.press(f.m.keys.Down)
	if v := ansi.Strip(f.m.View().Content); !strings.Contains(v, "demo: a approves and runs it") {
		t.Errorf("an asking command's hint:\n%s", v)
	}
}

// TestUndoKey: u on a History entry shows what undoing would restore and
// undoes on y; with files changed again since, y refuses and F forces.
func TestUndoKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var applied []bool
	conflicts := []string{}
	undo := UndoFuncs{}
	undo.Plan = func(id string) (*UndoPlan, error) {
		return &UndoPlan{ID: id, Files: []string{"/home/me/app/a.txt"}, Conflicts: conflicts,
			Diff: "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-ONE two\n+one two\n"}, nil
	}
	undo.Apply = func(p *UndoPlan, force bool) (string, error) {
		applied = append(applied, force)
		return "undone " + p.ID, nil
	}
	f.m.d.opt.Undo = undo
	at := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	f.m.Logged(logged("01JDUNDO000000000000000001", "sed -i s/one/ONE/ a.txt", at,
		queue.Event{Event: queue.EventApproved, Actor: "bob"},
		queue.Event{Event: queue.EventFinished, Status: queue.StatusDone, ExitCode: new(int),
			ChangedFiles: []queue.FileChange{{Path: "/home/me/app/a.txt", Change: "changed"}},
			Checkpoint:   &queue.Checkpoint{Roots: []string{"/home/me/app"}}}))
	f.drain()
	f.press(f.m.keys.Tab)
	if v := squeeze(ansi.Strip(f.m.View().Content)); !strings.Contains(v, "1 file(s) · u undoes it") || !strings.Contains(v, "changed a.txt") {
		t.Fatalf("the entry does not list what it changed:\n%s", v)
	}
	f.run(f.press(f.m.keys.Undo))
	if !isOpen[*undoDialog](f.m) {
		t.Fatalf("u: mode %s, status %q", state(f.m), f.m.status)
	}
	v := ansi.Strip(f.m.View().Content)
	for _, want := range []string{"restore 1 file(s)", "-ONE two", "+one two", "y: undo"} {
		if !strings.Contains(v, want) {
			t.Errorf("the undo dialog lacks %q:\n%s", want, v)
		}
	}
	f.run(f.press(f.m.keys.Yes))
	if len(applied) != 1 || applied[0] || !strings.Contains(f.m.status, "undone 01JDUNDO") {
		t.Fatalf("y: applied %v, status %q", applied, f.m.status)
	}

	conflicts = []string{"/home/me/app/a.txt"}
	f.run(f.press(f.m.keys.Undo))
	if v := ansi.Strip(f.m.View().Content); !strings.Contains(v, "changed again since") || !strings.Contains(v, "F: overwrite") {
		t.Fatalf("the conflict is not shown:\n%s", v)
	}
	f.run(f.press(f.m.keys.Yes))
	if len(applied) != 1 || !strings.Contains(f.m.status, "F overwrites") {
		t.Fatalf("y with a conflict: applied %v, status %q", applied, f.m.status)
	}
	f.run(f.press(f.m.keys.Undo))
	f.run(f.press(f.m.keys.Force))
	if len(applied) != 2 || !applied[1] {
		t.Fatalf("F: applied %v", applied)
	}
}

// TestTrustKey: T trusts the rule proposed first for the request's agent
// session, then approves it; the header shows the trust while it lasts.
func TestTrustKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var granted []string
	trusts := []string{}
	f.m.d.opt.Rules = RuleFuncs{Propose: func(cmd string) ([]string, int) { return []string{cmd, "make lint *"}, 1 }}
	trust := func(req *queue.Request, pattern string) (string, error) {
		granted = append(granted, req.Session+" "+pattern)
		trusts = append(trusts, pattern+" · "+req.Session+" · 15m0s left")
		return "trusted " + pattern, nil
	}
	f.m.d.opt.Trusts = TrustFuncs{Trust: trust, List: func() []string { return trusts }}
	req := &queue.Request{Kind: queue.KindExec, Command: "make lint", Cwd: "/home/me/app", Agent: "codex", Session: "s-77"}
	req = f.queueReq(req, testJudge{}.Judge(req))
	f.clock.add(time.Second)
	f.run(f.press(f.m.keys.Trust))
	// A dialog first, on the narrowest pattern: nothing is granted yet.
	if v := ansi.Strip(f.m.render()); !dialogOf[*ruleDialog](f.m).trust || len(granted) != 0 || !strings.Contains(v, "trust it for this agent session") {
		t.Fatalf("T: mode %s, granted %v:\n%s", f.m.mode, granted, v)
	}
	f.update(keyMsg("esc"))
	if len(granted) != 0 || f.m.mode != modeNormal {
		t.Fatal("Esc granted the trust")
	}
	f.run(f.press(f.m.keys.Trust))
	f.update(keyMsg("right")) // wider
	f.run(f.press(f.m.keys.Yes))
	if len(granted) != 1 || granted[0] != "s-77 make lint *" {
		t.Fatalf("granted %v", granted)
	}
	if res := f.result(req.ID); res.Status != queue.StatusDone {
		t.Errorf("the trusted request was not approved: %s", res.Status)
	}
	if v := ansi.Strip(f.m.View().Content); !strings.Contains(v, "trusted: make lint * · s-77 · 15m0s left") {
		t.Errorf("the header does not show the trust:\n%s", strings.SplitN(v, "\n", 2)[0])
	}
	// A request with no session cannot be trusted.
	f.submitPastGrace("make test")
	if cmd := f.press(f.m.keys.Trust); cmd != nil || !strings.Contains(f.m.status, "no agent session") {
		t.Errorf("T without a session: status %q", f.m.status)
	}
}

// TestSpoolProblem: a spool that cannot be written is named first in the
// header, with what to do, until it can be again.
func TestSpoolProblem(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.m.SpoolProblem(errors.New("READ-ONLY: remount /run/user/1000/sluice read-write"))
	f.drain()
	v := ansi.Strip(f.m.View().Content)
	head, _, _ := strings.Cut(v, "\n")
	if !strings.Contains(head, "SPOOL READ-ONLY: remount /run/user/1000/sluice read-write") {
		t.Fatalf("the header does not say the spool is read-only:\n%s", v)
	}
	f.m.SpoolProblem(nil)
	f.drain()
	if v := ansi.Strip(f.m.View().Content); strings.Contains(v, "SPOOL READ-ONLY") {
		t.Fatalf("the header still names the spool once it is writable:\n%s", v)
	}
}

// TestSelectionStaysOnItsRun: in History, a run (or an undo) that
// arrives does not move the selection onto another run: u on the run a
// person picked leaves it picked.
func TestSelectionStaysOnItsRun(t *testing.T) {
	f := newFixture(t)
	finish := func(cmd string) *queue.Request {
		req := &queue.Request{ID: queue.NewID(), Kind: queue.KindExec, Command: cmd, Cwd: "/home/me/app"}
		f.m.feed.Finished(req, queue.Result{Status: queue.StatusDone, ExitCode: new(int)})
		f.drain()
		return req
	}
	older := finish("make a")
	finish("make b")
	f.update(keyMsg("tab")) // History
	f.update(keyMsg("j"))   // the older run
	if r := f.m.selectedRun(); r == nil || r.req.ID != older.ID {
		t.Fatal("could not select the older run")
	}
	finish("make c")
	if r := f.m.selectedRun(); r == nil || r.req.ID != older.ID {
		t.Errorf("a new run moved the selection to %v", r.req.Command)
	}
}

// TestNarrowOutputFocusShowsHistory: on a narrow terminal, with the
// output pane focused, the list above is History, whose selection the
// Request and Output panes show, not the queue.
func TestNarrowOutputFocusShowsHistory(t *testing.T) {
	f := newFixture(t)
	f.update(tea.WindowSizeMsg{Width: 80, Height: 24})
	f.submit("touch b")
	f.m.feed.Finished(&queue.Request{ID: queue.NewID(), Kind: queue.KindExec, Command: "touch a", Cwd: "/home/me/app"},
		queue.Result{Status: queue.StatusDone, ExitCode: new(int)})
	f.drain()
	f.update(keyMsg("tab"))
	f.update(keyMsg("tab"))
	if f.m.focus != focusOutput {
		t.Fatalf("focus %s", f.m.focus)
	}
	out := ansi.Strip(f.m.render())
	if !strings.Contains(out, "History (1)") || strings.Contains(out, "Queue (1)") || !strings.Contains(out, "Ran ") {
		t.Errorf("with the output pane focused:\n%s", out)
	}
}
