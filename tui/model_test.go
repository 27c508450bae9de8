package tui

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sluice-dev/sluice/queue"
)

// Fakes for the engine's edges; the engine itself and the spool are real.

// testJudge asks about everything except "sudo" (deny) and "ls" (allow).
type testJudge struct{}

func (testJudge) Judge(r *queue.Request) queue.Verdict {
	switch {
	case strings.HasPrefix(r.Command, "sudo"):
		return queue.Verdict{Action: "deny", Category: "privileged", Risk: "critical", Reasons: []string{"sudo runs the command as another user"},
			Parts: []queue.Part{{Command: r.Command, Category: "privileged", Action: "deny", Rule: "builtin: privileged → deny"}}}
	case strings.HasPrefix(r.Command, "ls"):
		return queue.Verdict{Action: "allow", Category: "read_only", Risk: "low", Profile: "read_only"}
	}
	return queue.Verdict{Action: "ask", Category: "mutating", Risk: "medium", Profile: "mutating",
		Parts: []queue.Part{{Command: r.Command, Category: "mutating", Action: "ask", Rule: "default: mutating → ask"}}}
}

// holderID is the run "turn" waits for.
const holderID = "01JDH7D3RRW0000000HQ1DER5X"

// testRunner prints the command; "sleep" runs until killed; "turn" waits
// for its turn behind holderID until a person lets it go ahead.
type testRunner struct{}

func (testRunner) Run(ctx context.Context, r *queue.Request, opt queue.RunOptions) (queue.Result, string) {
	out := opt.Output
	if out != nil {
		out([]byte("ran: " + r.Command + "\r\n"))
	}
	sandbox := opt.Verdict.Profile
	if opt.Unconfined {
		sandbox = queue.Unconfined
	}
	if r.Command == "turn" {
		opt.Waiting(holderID)
		select {
		case <-opt.GoAhead:
		case <-ctx.Done():
			return queue.Result{Status: queue.StatusKilled, Reason: "killed while it waited"}, ""
		}
		opt.Waiting("")
		return queue.Result{Status: queue.StatusDone, ExitCode: new(int), Sandbox: sandbox,
			ChangedFiles: []queue.FileChange{{Path: "/home/me/app/b.txt", Change: "created"}},
			Checkpoint:   &queue.Checkpoint{Roots: []string{"/home/me/app"}, Overlapped: []string{holderID}}}, ""
	}
	if r.Command == "sleep" {
		<-ctx.Done()
		return queue.Result{Status: queue.StatusKilled, ExitCode: new(int), Sandbox: sandbox}, ""
	}
	return queue.Result{Status: queue.StatusDone, ExitCode: new(int), Sandbox: sandbox}, ""
}

type nopRecorder struct{}

func (nopRecorder) Record(queue.Event) error { return nil }

// clock is a settable Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type fixture struct {
	t     *testing.T
	m     *Model
	sp    *queue.Spool
	clock *clock
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	sp, err := queue.Open(t.TempDir() + "/spool")
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Now()}
	eng := &queue.Engine{Spool: sp, Judge: testJudge{}, Runner: testRunner{}, Recorder: nopRecorder{}, Now: time.Now}
	m := New(Options{Engine: eng, Actor: "alice", Now: c.now})
	f := &fixture{t: t, m: m, sp: sp, clock: c}
	f.update(tea.WindowSizeMsg{Width: 100, Height: 30})
	return f
}

// update sends msg and returns the command.
func (f *fixture) update(msg tea.Msg) tea.Cmd {
	f.t.Helper()
	_, cmd := f.m.Update(msg)
	return cmd
}

// press sends the first key of binding b.
func (f *fixture) press(b key.Binding) tea.Cmd {
	f.t.Helper()
	k := keyMsg(b.Keys()[0])
	if !key.Matches(k, b) {
		f.t.Fatalf("key %q does not match its binding", b.Keys()[0])
	}
	return f.update(k)
}

func (f *fixture) typeText(s string) {
	for _, r := range s {
		f.update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

func keyMsg(name string) tea.KeyPressMsg {
	switch name {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "pgup":
		return tea.KeyPressMsg{Code: tea.KeyPgUp}
	case "pgdown":
		return tea.KeyPressMsg{Code: tea.KeyPgDown}
	}
	r := []rune(name)[0]
	return tea.KeyPressMsg{Code: r, Text: name}
}

// submit queues a request and feeds the console its pending event, as
// the engine's watcher would.
func (f *fixture) submit(cmd string) *queue.Request {
	f.t.Helper()
	req := &queue.Request{Kind: queue.KindExec, Command: cmd, Cwd: "/home/me/app", Agent: "claude-code"}
	return f.queueReq(req, testJudge{}.Judge(req))
}

// queueReq queues req and feeds the console its pending event with
// verdict v, as the engine's watcher would: the console is shown the
// request as read from its file, which it returns.
func (f *fixture) queueReq(req *queue.Request, v queue.Verdict) *queue.Request {
	f.t.Helper()
	if err := f.sp.Submit(req); err != nil {
		f.t.Fatal(err)
	}
	list, err := f.sp.List()
	if err != nil {
		f.t.Fatal(err)
	}
	for _, e := range list {
		if e.ID == req.ID {
			req = e.Request
		}
	}
	f.m.feed.Pending(req, v)
	f.drain()
	return req
}

// submitPastGrace submits an exec request for cmd and lets its grace
// period pass: approve keys act on it.
func (f *fixture) submitPastGrace(cmd string) *queue.Request {
	f.t.Helper()
	req := f.submit(cmd)
	f.clock.add(time.Second)
	return req
}

// drain hands the console what its feed holds.
func (f *fixture) drain() {
	f.t.Helper()
	f.m.feed.mu.Lock()
	n := len(f.m.feed.events)
	f.m.feed.mu.Unlock()
	if n == 0 {
		return
	}
	f.update(f.m.feed.next())
}

// run executes cmd (and the commands it batches) synchronously and feeds
// back the messages it returns, ignoring the feed's blocking wait.
func (f *fixture) run(cmd tea.Cmd) {
	f.t.Helper()
	if cmd == nil {
		return
	}
	msg := cmd()
	switch msg := msg.(type) {
	case nil:
	case tea.BatchMsg:
		for _, c := range msg {
			f.run(c)
		}
	case recheckedMsg, ruleAddedMsg, trustedMsg, hostRuleAddedMsg:
		// These lead on to the approval itself.
		f.drain()
		f.run(f.update(msg))
	default:
		f.drain()
		f.update(msg)
	}
	f.drain()
}

func (f *fixture) result(id string) *queue.Result {
	f.t.Helper()
	res, err := f.sp.ReadResult(id)
	if err != nil {
		f.t.Fatalf("result of %s: %v", id, err)
	}
	return res
}

func TestApproveWaitsForGrace(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	req := f.submit("rm -rf build")
	if cmd := f.press(f.m.keys.Approve); cmd != nil {
		t.Fatal("approve during the grace period returned a command")
	}
	if !strings.Contains(f.m.status, "approve keys wait") {
		t.Errorf("status %q does not say approve waits", f.m.status)
	}
	if !strings.Contains(f.m.render(), "approve keys wait") {
		t.Error("the remaining grace is not shown")
	}
	f.clock.add(500 * time.Millisecond)
	cmd := f.press(f.m.keys.Approve)
	if cmd == nil {
		t.Fatal("approve after the grace period did nothing")
	}
	f.run(cmd)
	if res := f.result(req.ID); res.Status != queue.StatusDone || res.DecidedBy != queue.ByHuman {
		t.Errorf("result %+v, want done by a person", res)
	}
	if len(f.m.pending) != 0 || len(f.m.history) != 1 {
		t.Errorf("queue %d, history %d; want 0 and 1", len(f.m.pending), len(f.m.history))
	}
}

// TestApproveUnconfinedAsksFirst: U runs one request without its
// confinement, only after a dialog that says what that means; anything but
// y keeps it pending.
func TestApproveUnconfinedAsksFirst(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.m.d.opt.Sandbox = "Landlock ABI 7 and seccomp"
	req := f.submitPastGrace("make deploy")
	if !strings.Contains(f.m.render(), "confined: writes in the project, no network") {
		t.Errorf("the request does not show its confinement:\n%s", f.m.render())
	}
	if cmd := f.press(f.m.keys.ApproveUnconfined); cmd != nil || !isOpen[*unconfinedDialog](f.m) {
		t.Fatalf("U: mode %s, cmd %v; want the confirmation and no command", state(f.m), cmd != nil)
	}
	if v := f.m.render(); !strings.Contains(v, "Run UNCONFINED?") || !strings.Contains(v, "read your secrets") {
		t.Errorf("the dialog does not say what running unconfined means:\n%s", v)
	}
	if cmd := f.press(f.m.keys.No); cmd != nil || len(f.m.pending) != 1 {
		t.Fatalf("Esc approved it (cmd %v, pending %d)", cmd != nil, len(f.m.pending))
	}
	f.press(f.m.keys.ApproveUnconfined)
	f.run(f.press(f.m.keys.Yes))
	res := f.result(req.ID)
	if res.Status != queue.StatusDone || res.Sandbox != queue.Unconfined {
		t.Errorf("result %s, sandbox %q; want done and unconfined", res.Status, res.Sandbox)
	}
	f.press(f.m.keys.Tab)
	if v := f.m.render(); !strings.Contains(v, "UNCONFINED") {
		t.Errorf("History does not mark the run unconfined:\n%s", v)
	}
}

func TestNewRequestRestartsGrace(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.submitPastGrace("make deploy")
	f.submit("git push") // arrives just before the keystroke
	if cmd := f.press(f.m.keys.Approve); cmd != nil {
		t.Fatal("approve right after a new request arrived returned a command")
	}
	// A flood of arrivals cannot hold approval off forever.
	for range 20 {
		f.clock.add(100 * time.Millisecond)
		f.submit("npm install left-pad")
	}
	if f.m.graceLeft() > 0 {
		t.Errorf("grace still %s after 2s of arrivals; the cap is 1.5s", f.m.graceLeft())
	}
}

func TestDenyWithReason(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	req := f.submit("git push --force")
	// Deny needs no grace: saying no is always safe.
	f.press(f.m.keys.Deny)
	if !isOpen[*denyDialog](f.m) {
		t.Fatalf("mode %s after deny, want the deny dialog", state(f.m))
	}
	f.typeText("not on a Friday")
	f.run(f.press(f.m.keys.Submit))
	if res := f.result(req.ID); res.Status != queue.StatusDenied || res.Reason != "not on a Friday" {
		t.Errorf("result %+v, want denied with the reason", res)
	}
}

func TestEscInDialogMeansNo(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	req := f.submit("git push --force")
	f.press(f.m.keys.Deny)
	f.typeText("oops")
	if cmd := f.update(keyMsg("esc")); cmd != nil {
		f.run(cmd)
	}
	if f.m.mode != modeNormal || len(f.m.pending) != 1 {
		t.Fatalf("after Esc: mode %s, %d pending", f.m.mode, len(f.m.pending))
	}
	if _, err := f.sp.ReadResult(req.ID); !errors.Is(err, queue.ErrNoResult) {
		t.Errorf("Esc answered the request: %v", err)
	}
}

func TestEditReJudgesThenApproves(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	req := f.submitPastGrace("rm -rf build")
	f.press(f.m.keys.Edit)
	if d := dialogOf[*editDialog](f.m); d == nil || d.input.Value() != "rm -rf build" {
		t.Fatalf("mode %s", state(f.m))
	}
	dialogOf[*editDialog](f.m).input.SetValue("sudo rm -rf build")
	f.run(f.press(f.m.keys.Submit))
	if d := dialogOf[*confirmEditDialog](f.m); d == nil || d.verdict.Action != queue.ActionDeny {
		t.Fatalf("edited to sudo: mode %s, want the deny shown", state(f.m))
	}
	if v := f.m.View().Content; !strings.Contains(v, "sudo rm -rf build") || !strings.Contains(v, "builtin: privileged") {
		t.Errorf("the dialog does not show the edited command's parts:\n%s", v)
	}
	if cmd := f.press(f.m.keys.Yes); cmd != nil {
		t.Fatal("a denied edit could be approved")
	}
	f.press(f.m.keys.Edit)
	dialogOf[*editDialog](f.m).input.SetValue("rm -rf build/cache")
	f.run(f.press(f.m.keys.Submit))
	if d := dialogOf[*confirmEditDialog](f.m); d == nil || d.verdict.Action != queue.ActionAsk {
		t.Fatalf("mode %s, want the edit to ask", state(f.m))
	}
	f.run(f.press(f.m.keys.Yes))
	res := f.result(req.ID)
	if res.Status != queue.StatusDone || res.Command != "rm -rf build/cache" {
		t.Errorf("result %+v, want the edited command run", res)
	}
}

func TestPolicyDenyCannotBeApproved(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.submitPastGrace("sudo reboot")
	if cmd := f.press(f.m.keys.Approve); cmd != nil {
		t.Fatal("approving a request the policy denies returned a command")
	}
}

func TestKillAndQuitWhileRunning(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	req := f.submitPastGrace("sleep")
	approve := f.press(f.m.keys.Approve)
	done := make(chan tea.Msg)
	go func() { done <- approve() }()
	// The run starts: the feed says so.
	for f.m.Running() == 0 {
		select {
		case msg := <-done:
			t.Fatalf("approve ended before the run started: %+v", msg)
		case <-time.After(5 * time.Millisecond):
		}
		f.drain()
	}
	if f.m.shownRun() == nil || f.m.shownRun().req.ID != req.ID {
		t.Fatal("the output pane does not show the running command")
	}
	if cmd := f.press(f.m.keys.Quit); cmd != nil || !isOpen[quitDialog](f.m) {
		t.Fatalf("quit while running: mode %s, want a question", f.m.mode)
	}
	f.press(f.m.keys.No)
	if f.m.mode != modeNormal || f.m.quitting {
		t.Fatal("answering no still quits")
	}
	// x asks first; anything but y leaves the run alone.
	if cmd := f.press(f.m.keys.Kill); cmd != nil || !isOpen[*killDialog](f.m) {
		t.Fatalf("x while running: mode %s, want a question", f.m.mode)
	}
	if !strings.Contains(ansi.Strip(f.m.View().Content), "Kill "+shortID(req.ID)+"?") {
		t.Errorf("the kill dialog does not name the run:\n%s", ansi.Strip(f.m.View().Content))
	}
	f.press(f.m.keys.No)
	if f.m.Running() != 1 || f.m.mode != modeNormal {
		t.Fatal("answering no killed the run")
	}
	f.press(f.m.keys.Kill)
	f.run(f.press(f.m.keys.Yes))
	f.update(<-done)
	f.drain()
	if res := f.result(req.ID); res.Status != queue.StatusKilled {
		t.Errorf("result %s, want killed", res.Status)
	}
	if f.m.Running() != 0 {
		t.Error("still running after kill")
	}
	cmd := f.press(f.m.keys.Quit)
	if cmd == nil {
		t.Fatal("quit with nothing running returned no command")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Error("quit does not quit")
	}
}

// TestWaitingRunGoesAhead: an approved run that waits for its turn behind
// another run in the same project shows as waiting, for which run, and p
// lets it go ahead; its result then names the run it overlapped.
func TestWaitingRunGoesAhead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.update(tea.WindowSizeMsg{Width: 120, Height: 50})
	req := f.submitPastGrace("turn")
	if cmd := f.press(f.m.keys.GoAhead); cmd != nil || !f.m.statusErr {
		t.Error("p with nothing waiting did something, or said nothing")
	}
	approve := f.press(f.m.keys.Approve)
	done := make(chan tea.Msg)
	go func() { done <- approve() }()
	for r := f.m.shownRun(); r == nil || r.waitsFor == ""; r = f.m.shownRun() {
		select {
		case msg := <-done:
			t.Fatalf("approve ended before the run waited: %+v", msg)
		case <-time.After(5 * time.Millisecond):
		}
		f.drain()
	}
	f.press(f.m.keys.Tab) // History
	view := ansi.Strip(f.m.View().Content)
	for _, want := range []string{"waiting  for " + shortID(holderID), "Waiting", "waits    for " + holderID} {
		if !strings.Contains(view, want) {
			t.Errorf("the console does not show %q:\n%s", want, view)
		}
	}
	if !strings.Contains(f.m.status, "p lets it go ahead") {
		t.Errorf("status %q does not say how to let it go ahead", f.m.status)
	}
	f.run(f.press(f.m.keys.GoAhead))
	f.update(<-done)
	f.drain()
	if res := f.result(req.ID); res.Status != queue.StatusDone {
		t.Fatalf("result %s %s, want done", res.Status, res.Reason)
	}
	view = ansi.Strip(f.m.View().Content)
	if !strings.Contains(view, "overlap") || !strings.Contains(view, "ran at the same time as "+holderID) {
		t.Errorf("the finished run does not name the run it overlapped:\n%s", view)
	}
}

// TestResultWaitsShown: a run ended whose result cannot be written (a
// full spool) is not shown as running: the pane and status say it ended
// and that its agent still waits.
func TestResultWaitsShown(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	req := &queue.Request{Version: queue.Version, ID: queue.NewID(), Kind: queue.KindExec, Command: "make build", Cwd: "/home/me/app"}
	f.m.feed.Started(req, queue.Verdict{Action: queue.ActionAsk, Profile: "mutating"}, queue.ByHuman)
	f.drain()
	if r := f.m.shownRun(); r == nil || r.state() != "running" {
		t.Fatal("the run does not show")
	}
	f.m.feed.ResultWaits(req.ID, "no space left on device")
	f.drain()
	view := ansi.Strip(f.m.View().Content)
	for _, want := range []string{"Output · ended, its result not yet written · make build", "its agent keeps waiting"} {
		if !strings.Contains(view, want) {
			t.Errorf("the console does not show %q:\n%s", want, view)
		}
	}
	if strings.Contains(view, "Output · running") {
		t.Errorf("a run that ended still shows as running:\n%s", view)
	}
}

func TestHiddenCharactersFlaggedAndEscaped(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.submit("git commit -m \"fix\"\u202e ;rm -rf ~ #\x1b[2J")
	view := f.m.render()
	if !strings.Contains(view, "hidden characters") {
		t.Error("no hidden characters flag")
	}
	if strings.Contains(view, "\u202e") || strings.Contains(view, "\x1b[2J") {
		t.Error("the raw bidi override or escape reached the screen")
	}
	if !strings.Contains(view, `\u{202e}`) || !strings.Contains(view, `\x1b`) {
		t.Error("the escapes are not shown")
	}
}

// A file request's diff is computed again right before approving; if the
// file changed since the person saw it, the new diff is shown and nothing
// is approved until they look again.
func TestFileChangedSinceShownAsksAgain(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	diff := "--- a/NOTES.md\n+++ b/NOTES.md\n@@ -0,0 +1 @@\n+hello\n"
	var mu sync.Mutex
	f.m.d.opt.Preview = PreviewFunc(func(*queue.Request) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		return diff, nil
	})
	req := f.queueReq(&queue.Request{Kind: queue.KindWrite, Path: "/home/me/app/NOTES.md", Content: "hello\n", Cwd: "/home/me/app", Agent: "claude-code"},
		queue.Verdict{Action: "ask", Category: "mutating", Risk: "medium"})
	f.run(f.m.previewCmd(req)) // what Update asked for when the request arrived
	if it := f.m.current(); it == nil || !it.diffOK || it.diff != diff {
		t.Fatalf("preview not shown: %+v", it)
	}
	mu.Lock()
	diff = "--- a/NOTES.md\n+++ b/NOTES.md\n@@ -1 +1 @@\n-someone else's notes\n+hello\n"
	mu.Unlock()
	f.clock.add(time.Second)
	f.run(f.press(f.m.keys.Approve))
	if _, err := f.sp.ReadResult(req.ID); !errors.Is(err, queue.ErrNoResult) {
		t.Fatalf("approved although the file changed: %v", err)
	}
	if it := f.m.current(); it == nil || !strings.Contains(it.diff, "someone else") || !f.m.statusErr {
		t.Fatalf("the new diff is not shown: %+v, status %q", it, f.m.status)
	}
	if cmd := f.press(f.m.keys.Approve); cmd != nil {
		t.Fatal("approve right after the diff changed was not held by the grace period")
	}
	f.clock.add(time.Second)
	f.run(f.press(f.m.keys.Approve))
	if res := f.result(req.ID); res.Status != queue.StatusDone {
		t.Errorf("second approve: %s, want done", res.Status)
	}
}

func TestApproveAndRememberRule(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var added []string
	var rules RuleFuncs
	rules.Propose = func(cmd string) ([]string, int) {
		if cmd != "make lint" {
			return nil, 0
		}
		return []string{"make lint", "make lint *"}, 0
	}
	rules.Count = func(p string) (int, error) { return len(p), nil }
	rules.Text = func(req *queue.Request, pattern string, scope RuleScope) string {
		return "[[rule]]\naction = \"allow\"\ncommand = \"" + pattern + "\"\n# " + scope.String()
	}
	rules.Add = func(req *queue.Request, pattern string, scope RuleScope) (string, error) {
		added = append(added, pattern+" <- "+req.Command+" @ "+scope.String())
		return "~/.config/sluice/policy.toml", nil
	}
	f.m.d.opt.Rules = rules
	req := f.submitPastGrace("make lint")
	f.run(f.press(f.m.keys.ApproveRule))
	v := ansi.Strip(f.m.render())
	// It opens narrow: the exact command, in this project.
	if d := dialogOf[*ruleDialog](f.m); d == nil || d.trust || !strings.Contains(v, `command = "make lint"`) || !strings.Contains(v, "matched 9 past") ||
		!strings.Contains(v, "# this project") {
		t.Fatalf("mode %s rule %+v: the exact rule for this project and its count are not shown:\n%s", state(f.m), f.m.dlg, v)
	}
	// Wider, then the next scope: the text follows.
	f.update(keyMsg("right"))
	f.update(keyMsg("s"))
	if v := ansi.Strip(f.m.render()); !strings.Contains(v, `command = "make lint *"`) || !strings.Contains(v, "# everywhere") {
		t.Fatalf("after widening and scoping:\n%s", v)
	}
	// Esc: no rule, not approved.
	f.update(keyMsg("esc"))
	if len(added) != 0 || f.m.mode != modeNormal {
		t.Fatal("Esc added the rule")
	}
	f.run(f.press(f.m.keys.ApproveRule))
	f.run(f.press(f.m.keys.Yes))
	if len(added) != 1 || added[0] != "make lint <- make lint @ this project" {
		t.Fatalf("rules added: %v", added)
	}
	if res := f.result(req.ID); res.Status != queue.StatusDone {
		t.Errorf("result %s, want done", res.Status)
	}
}

// TestTakenByAnotherConsole: a request another console approved first
// leaves this console's queue; a approve pressed just after is told who
// took it, not "no pending request selected".
func TestTakenByAnotherConsole(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	req := f.submitPastGrace("make deploy")
	// The other console claims it: it leaves this queue, and the audit
	// log says who approved it.
	f.m.feed.Gone(req.ID, queue.Gone)
	f.m.Logged([]queue.Event{{ID: req.ID, Event: queue.EventApproved, Actor: "bob@laptop", Kind: queue.KindExec, Command: "make deploy"}})
	f.drain()
	f.press(f.m.keys.Approve)
	if !strings.Contains(f.m.status, "approved by bob@laptop first") {
		t.Errorf("status %q, want who approved it", f.m.status)
	}
}

// TestSilentRunSaysItRuns: a command that prints nothing until it ends
// (go test) shows that it runs and for how long, not an empty pane.
func TestSilentRunSaysItRuns(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	req := &queue.Request{ID: queue.NewID(), Kind: queue.KindExec, Command: "go test ./...", Cwd: "/home/me/app"}
	f.m.feed.Started(req, queue.Verdict{Action: queue.ActionAllow, Profile: "read_only"}, queue.ByPolicy)
	f.drain()
	f.clock.add(16 * time.Second)
	if out := ansi.Strip(f.m.render()); !strings.Contains(out, "no output yet · running for 16s") {
		t.Errorf("a silent run shows an empty pane:\n%s", out)
	}
}
