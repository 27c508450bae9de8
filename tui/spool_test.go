package tui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sluice-dev/sluice/queue"
)

// TestSpoolShown: the console says which spool it watches, in its header
// and, while nothing waits, how an agent reaches it; a filter that hides
// everything says so rather than "nothing waits for you".
func TestSpoolShown(t *testing.T) {
	f := newFixture(t)
	f.m.d.opt.Spool = "~/.local/state/sluice/spool"
	for _, size := range [][2]int{{140, 30}, {80, 24}, {60, 20}} {
		f.update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		out := ansi.Strip(f.m.render())
		for _, want := range []string{"nothing waits for you", "Watching ~/.local/state/sluice/spool", "sluice run -- CMD", "sluice install claude|codex|gemini"} {
			if !strings.Contains(out, want) {
				t.Errorf("%dx%d: the screen does not say %q:\n%s", size[0], size[1], want, out)
			}
		}
		if size[0] >= 120 && !strings.Contains(out, "spool ~/.local/state/sluice/spool") {
			t.Errorf("%dx%d: the header does not name the spool", size[0], size[1])
		}
	}
}

// TestFilterHidesAll: a filter that hides every pending request says so.
func TestFilterHidesAll(t *testing.T) {
	f := newFixture(t)
	r := &queue.Request{ID: "01JD3T6Q6Z8W9X0Y1Z2A3B4C5D", Kind: queue.KindExec, Command: "make test", Cwd: "/tmp"}
	f.update(engineMsg{events: []any{requestPending{req: r, verdict: queue.Verdict{Action: "ask"}, at: time.Now()}}})
	f.m.filter = "nomatch"
	lines := f.m.queueLines(60, 10)
	if len(lines) != 1 || !strings.Contains(ansi.Strip(lines[0]), "nothing matches the filter (1 pending; Esc clears it)") {
		t.Fatalf("got %q", lines)
	}
	// Esc does what it says, also after the filter was set with Enter.
	f.update(keyMsg("esc"))
	if f.m.filter != "" || f.m.current() == nil {
		t.Fatalf("Esc left the filter %q", f.m.filter)
	}
}

// TestFilterTyped: / opens a prompt, Enter keeps the filter, Esc clears it.
func TestFilterTyped(t *testing.T) {
	f := newFixture(t)
	f.submit("make test")
	f.submit("git status")
	f.press(f.m.keys.Filter)
	if v := ansi.Strip(f.m.View().Content); !strings.Contains(v, "filter: ") {
		t.Fatalf("no filter prompt:\n%s", v)
	}
	f.typeText("git")
	f.press(f.m.keys.Submit)
	if len(f.m.visible()) != 1 || f.m.mode != modeNormal {
		t.Fatalf("after Enter: %d visible, mode %s", len(f.m.visible()), f.m.mode)
	}
	f.update(keyMsg("esc"))
	if len(f.m.visible()) != 2 {
		t.Errorf("Esc after Enter left %d of 2 visible", len(f.m.visible()))
	}
}

// TestOutcomeText: the status line says what a decision came to, once.
func TestOutcomeText(t *testing.T) {
	zero, seven := 0, 7
	for _, tt := range []struct {
		verb string
		res  queue.Result
		want string
	}{
		{"denied", queue.Result{Status: queue.StatusDecided, Decision: queue.Deny}, "denied X"},
		{"denied", queue.Result{Status: queue.StatusDenied, Decision: queue.Deny}, "denied X"},
		{"approved", queue.Result{Status: queue.StatusDecided, Decision: queue.Allow}, "approved X: the agent runs it"},
		{"approved", queue.Result{Status: queue.StatusDone, ExitCode: &zero}, "approved X: ran, exit 0"},
		{"approved", queue.Result{Status: queue.StatusDone, ExitCode: &seven}, "approved X: ran, exit 7"},
		{"approved", queue.Result{Status: queue.StatusTimeout}, "approved X: timeout"},
	} {
		if got := outcomeText(tt.verb, "X", queue.KindExec, tt.res); got != tt.want {
			t.Errorf("%s %+v: got %q, want %q", tt.verb, tt.res, got, tt.want)
		}
	}
	if got := outcomeText("approved", "X", queue.KindEdit, queue.Result{Status: queue.StatusDone, ExitCode: new(int)}); got != "approved X: the change is made" {
		t.Errorf("an edit applied: %q", got)
	}
}

// TestPolicyProblemShown: a policy edit that does not load is said in the
// header while the last good policy stays in force.
func TestPolicyProblemShown(t *testing.T) {
	f := newFixture(t)
	problem := "policy.toml: line 3: expected value (the last good policy is in force)"
	f.m.d.opt.Rules = RuleFuncs{Problem: func() string { return problem }}
	f.update(tea.WindowSizeMsg{Width: 140, Height: 30})
	if out := ansi.Strip(f.m.render()); !strings.Contains(out, "POLICY NOT RELOADED: policy.toml: line 3") {
		t.Fatalf("the header does not say the policy did not reload:\n%s", out)
	}
	problem = "policy.toml: line 3: expected value (every request asks until it is fixed)"
	if out := ansi.Strip(f.m.render()); !strings.Contains(out, "POLICY DOES NOT LOAD: policy.toml: line 3") {
		t.Fatalf("the header does not say the policy does not load:\n%s", out)
	}
}

// TestHeaderWarningsFirst: at 80 columns, with the spool's path and the
// confinement to show too, the header keeps the warning and cuts the
// decorations; ? shows the warning whole.
func TestHeaderWarningsFirst(t *testing.T) {
	f := newFixture(t)
	f.m.d.opt.Spool = "~/.local/state/sluice/spool"
	f.m.d.opt.Sandbox = "Landlock ABI 7 and seccomp, namespaces for runs that write"
	f.m.d.opt.Rules = RuleFuncs{Problem: func() string {
		return "/home/me/.config/sluice/policy.toml: line 12: unknown key \"rule.comand\" (the last good policy is in force)"
	}}
	f.update(tea.WindowSizeMsg{Width: 80, Height: 24})
	header := strings.SplitN(ansi.Strip(f.m.render()), "\n", 2)[0]
	if !strings.Contains(header, "POLICY NOT RELOADED: /home/me/") || strings.Contains(header, "spool") {
		t.Errorf("the header at 80 columns: %q, want the warning before the decorations", header)
	}
	f.update(keyMsg("?"))
	if out := ansi.Strip(f.m.render()); !strings.Contains(strings.Join(strings.Fields(out), " "), "(the last good policy is in force)") {
		t.Errorf("? does not show the whole warning:\n%s", out)
	}
}

// TestQueueOldestFirst: requests judged out of order (the engine judges
// several at once) still queue oldest first, and the selection stays on
// the request it was on.
func TestQueueOldestFirst(t *testing.T) {
	f := newFixture(t)
	at := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	mk := func(id string, age time.Duration) requestPending {
		return requestPending{req: &queue.Request{ID: id, Kind: queue.KindExec, Command: "make " + id, Cwd: "/tmp", CreatedAt: at.Add(-age)},
			verdict: queue.Verdict{Action: "ask"}, at: at}
	}
	f.update(engineMsg{events: []any{mk("01JDC", time.Second)}})
	f.update(engineMsg{events: []any{mk("01JDA", 3*time.Second), mk("01JDB", 2*time.Second)}})
	var got []string
	for _, it := range f.m.pending {
		got = append(got, it.req.ID)
	}
	if strings.Join(got, " ") != "01JDA 01JDB 01JDC" {
		t.Errorf("queue %v, want oldest first", got)
	}
	if it := f.m.current(); it == nil || it.req.ID != "01JDC" {
		t.Errorf("the selection moved to %v", it)
	}
}

// TestHeaderShared: the header says when another engine serves the spool.
func TestHeaderShared(t *testing.T) {
	f := newFixture(t)
	f.m.d.opt.Spool, f.m.d.opt.Shared = "/run/user/1000/sluice", true
	f.update(tea.WindowSizeMsg{Width: 140, Height: 30})
	if out := ansi.Strip(f.m.render()); !strings.Contains(out, "spool /run/user/1000/sluice (shared with another engine)") {
		t.Fatalf("header:\n%s", strings.SplitN(out, "\n", 2)[0])
	}
}

// TestCheckpointNoteBeforeApproval: a request that, approved, would run
// unchecked (not in a git project) says so before approval, not only in
// its result.
func TestCheckpointNoteBeforeApproval(t *testing.T) {
	f := newFixture(t)
	f.m.d.opt.Undo = UndoFuncs{Note: func(req *queue.Request, v queue.Verdict) string {
		if strings.HasPrefix(req.Command, "touch") {
			return "none: not in a git project, so what it changes is not listed and cannot be undone"
		}
		return ""
	}}
	f.update(tea.WindowSizeMsg{Width: 100, Height: 30})
	f.submit("touch notes.txt")
	if out := ansi.Strip(f.m.render()); !strings.Contains(out, "checkpt  none: not in a git project") {
		t.Errorf("the request does not say it will not be checkpointed:\n%s", out)
	}
}
