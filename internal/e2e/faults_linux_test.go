package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/exec/sandbox"
	"github.com/sluice-dev/sluice/hub"
)

// The fault suite of issue 28: the real programs under each fault, what
// each agent was told checked against what ran. For every case:
//
//   - every agent's answer is true (Box.CheckTold: a run the audit log
//     says started is never told "not run"; one killed part way is told
//     stopped, exit 123);
//   - nothing ran twice (the marker each run appends its id to);
//   - no orphan survives (Box.NoOrphans: no process of the run in /proc
//     when its agent is answered, its heartbeat still);
//   - the audit chain verifies, and the log grows by at most 5 lines
//     while the fault lasts;
//   - the engine serves again once the fault is gone (servesAgain).
//
// 'go test' runs the quick cases (make test); -faults.full adds the slow
// ones (make faults): TestFaultHubKilled, whose fleet takes a while to
// catch up once the hub is back.

// maxFaultLines bounds the audit lines a fault may cost.
const maxFaultLines = 5

// faultLines fails the test when the audit log grew by more than
// maxFaultLines since it had before lines.
func faultLines(t *testing.T, b *Box, before int, what string) {
	t.Helper()
	if n := b.AuditLines() - before; n > maxFaultLines {
		t.Errorf("the audit log grew by %d lines while %s (at most %d)", n, what, maxFaultLines)
	}
}

var again atomic.Int64

// servesAgain checks that the box's engine answers a new request once
// the fault is gone: approve, when not nil, approves it as a person does
// (else the policy allows it).
func servesAgain(t *testing.T, b *Box, approve func(id string)) {
	t.Helper()
	word := fmt.Sprintf("served-again-%d", again.Add(1))
	cmd := "echo " + word
	a := b.AskText(cmd)
	if approve != nil {
		approve(b.IDOf(cmd))
	}
	ans := a.Answer(b)
	if ans.Code != 0 || !strings.Contains(ans.Stdout, word) {
		t.Errorf("after the fault, a new request was not served: exit %d\nstdout: %s\nstderr: %s", ans.Code, ans.Stdout, ans.Stderr)
	}
	if strings.Contains(ans.Stderr, "nothing serves the spool") {
		// Hooks and the MCP server withdraw what nobody serves.
		t.Errorf("after the fault, the agent was told nothing serves the spool, while an engine serves it:\n%s", ans.Stderr)
	}
}

// approver approves as a person at the box's terminal: 'sluice approve'.
func approver(t *testing.T, b *Box) func(id string) {
	return func(id string) {
		t.Helper()
		if code, out, errs := b.Sluice("approve", "--yes", id); code != 0 {
			t.Errorf("sluice approve %s: exit %d\n%s%s", id, code, out, errs)
		}
	}
}

// askLoop has an agent ask for a run of Loop (beating into "beat", until
// the file gate exists when gate is not ""), and returns it and the
// request's id.
func askLoop(b *Box, gate string) (*Agent, string) {
	b.T.Helper()
	cmd := Loop("beat", gate)
	agent := b.Ask(cmd)
	return agent, b.IDOf(cmd)
}

// afterFault checks what every fault case checks once the fault is over:
// the agent's answer is true, no process of the run is left, the audit
// log grew by at most maxFaultLines since before, the chain verifies, and
// a new request is served (approve as servesAgain takes it).
func afterFault(t *testing.T, b *Box, agent *Agent, id string, before int, what string, approve func(id string)) {
	t.Helper()
	b.CheckTold(id, agent.Answer(b))
	b.NoOrphans(id, "beat")
	faultLines(t, b, before, what)
	b.Verify()
	servesAgain(t, b, approve)
}

// waitingReadOnly begins a read-only case: an agent asks while the box
// serves, the engine is stopped and fs remounted read-only. before is
// the audit log's lines then.
func waitingReadOnly(t *testing.T, b *Box, fs string) (agent *Agent, id string, before int) {
	t.Helper()
	serve := b.Serve()
	cmd := `echo "$SLUICE_REQUEST_ID" >> mark; echo ran-after-the-remount`
	agent = b.AskText(cmd)
	id = b.IDOf(cmd)
	serve.Stop()
	before = b.AuditLines()
	if err := Remount(fs, true); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
	return agent, id, before
}

// writableAgain ends a read-only case: fs is remounted read-write, the
// audit log grew by at most maxFaultLines since before while it was
// read-only, and once serving (after serving) the request id that waited
// is approved, its agent told how it ran, the chain verifies and a new
// request is served.
func writableAgain(t *testing.T, b *Box, fs string, before int, what string, serving func(), agent *Agent, id string) {
	t.Helper()
	if err := Remount(fs, false); err != nil {
		t.Fatalf("remount read-write: %v", err)
	}
	faultLines(t, b, before, what)
	serving()
	approve := approver(t, b)
	approve(id)
	b.CheckTold(id, agent.Answer(b))
	b.Verify()
	servesAgain(t, b, approve)
}

// needCgroup skips a case where runs get no cgroup: there nothing kills
// what a dead engine's run left running (docs/reliability.md, known
// limits).
func needCgroup(t *testing.T) {
	t.Helper()
	g, err := sandbox.NewCgroup(fmt.Sprintf("%d-e2e-probe", os.Getpid()), 0)
	if err != nil {
		t.Skip("runs get no cgroup here (not root, no delegation): nothing kills a dead engine's orphans")
	}
	_ = g.Close()
}

// TestFaultServeKilled: sluice serve is killed with SIGKILL while a
// command it runs loops, and started again. Whoever answers the orphaned
// claim (the new serve, or the waiting agent itself) kills what the run
// left running first, and answers from the audit log: stopped, exit 123,
// never "not run".
func TestFaultServeKilled(t *testing.T) {
	needCgroup(t)
	b := NewBox(t, BoxOptions{Policy: AllowAll})
	serve := b.Serve()
	agent, id := askLoop(b, "")
	b.WaitMarked(id)
	before := b.AuditLines()

	serve.Kill()
	b.Serve()
	afterFault(t, b, agent, id, before, "serve was killed mid-run", nil)
}

// TestFaultApproveKilled: the 'sluice approve' running a request a
// person approved is killed with SIGKILL mid-run while sluice serve goes
// on, and no sluice process starts. serve (or the waiting agent)
// answers the orphaned claim stopped, and kills what the run left
// running before it does.
func TestFaultApproveKilled(t *testing.T) {
	needCgroup(t)
	b := NewBox(t, BoxOptions{Policy: AskAll})
	b.Serve()
	agent, id := askLoop(b, "")
	approve := b.Start("approve", "--yes", id)
	b.WaitMarked(id)
	before := b.AuditLines()

	approve.Kill()
	afterFault(t, b, agent, id, before, "sluice approve was killed mid-run", approver(t, b))
}

// fleet is a hub and one box "b1" bridged to it ('sluice serve --hub'),
// its policy asking a person for everything: the person decides at the
// hub's console.
func fleet(t *testing.T) (*Hub, *Box, *Proc) {
	t.Helper()
	h := NewHub(t)
	b := NewBox(t, BoxOptions{Policy: AskAll})
	h.AddBox(b, "b1")
	serve := b.Serve("--hub", h.URL)
	serve.WaitOutput(t, "bridging spool")
	return h, b, serve
}

// hubApprover approves as a person at a console of the hub: 'sluice hub
// approve b1/ID --yes', which waits for the box's outcome.
func hubApprover(t *testing.T, h *Hub) func(id string) {
	return func(id string) {
		t.Helper()
		h.WaitListed("b1", id)
		if code, out, errs := h.Sluice("hub", "approve", "b1/"+id, "--yes"); code != 0 {
			t.Errorf("sluice hub approve b1/%s: exit %d\n%s%s", id, code, out, errs)
		}
	}
}

// outcome waits for the box's outcome of id on the hub, as a console
// reads it.
func outcome(t *testing.T, h *Hub, id string) *hub.Outcome {
	t.Helper()
	creds, err := hub.ReadCreds(h.ConsoleCreds())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), Guard)
	defer cancel()
	cl, err := hub.Connect(ctx, h.URL, creds)
	if err != nil {
		t.Fatalf("a console connects to the hub: %v", err)
	}
	defer cl.Close()
	o, err := cl.Outcome(ctx, "b1", id)
	if err != nil {
		t.Fatalf("the outcome of b1/%s on the hub: %v", id, err)
	}
	return o
}

// approvedAtHub has b's agent ask for a loop (askLoop, gate), a person
// approve it at hub h ('sluice hub approve', which waits for the
// outcome: person), and waits until the run began.
func approvedAtHub(t *testing.T, h *Hub, b *Box, gate string) (agent *Agent, id string, person *Proc) {
	t.Helper()
	agent, id = askLoop(b, gate)
	h.WaitListed("b1", id)
	person = h.StartSluice("hub", "approve", "b1/"+id, "--yes")
	b.WaitMarked(id)
	return agent, id, person
}

// TestFaultBridgeKilled: a box's bridge ('sluice-hub box', serve's
// child) and the 'sluice approve' it runs for a decision made at the hub
// are killed with SIGKILL mid-run; serve goes on, and starts the bridge
// again. The agent is told stopped, the run's processes die, the
// decision is not applied a second time, and the person who approved at
// the hub is told the run stopped.
func TestFaultBridgeKilled(t *testing.T) {
	needCgroup(t)
	h, b, serve := fleet(t)
	agent, id, person := approvedAtHub(t, h, b, "")
	bridges := Children(serve.Pid(), "sluice-hub")
	if len(bridges) != 1 {
		t.Fatalf("serve %d has %d sluice-hub children, want its bridge", serve.Pid(), len(bridges))
	}
	// 'sluice approve' is sluice-engine by now: sluice hands it over.
	approves := Children(bridges[0], "sluice-engine")
	if len(approves) != 1 {
		t.Fatalf("the bridge %d has %d sluice-engine children, want the 'sluice approve' running b1/%s", bridges[0], len(approves), id)
	}
	before := b.AuditLines()

	for _, pid := range append(bridges, approves...) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	ans := agent.Answer(b)
	b.NoOrphans(id, "beat")
	// The bridge serve starts again finds the decision, with no outcome
	// for it yet, for a request already answered: it says what happened,
	// and does not apply it again.
	person.Wait(t)
	if errs := person.Stderr.String(); !strings.Contains(errs, "b1: stopped") {
		t.Errorf("the person who approved at the hub was not told the run stopped:\n%s", errs)
	}
	b.CheckTold(id, ans)
	faultLines(t, b, before, "the bridge and its sluice approve were killed mid-run")
	b.Verify()
	servesAgain(t, b, hubApprover(t, h))
}

// TestFaultHubKilled: the hub is killed with SIGKILL while a run it
// approved goes on on the box. The run ends on the box as it would have
// (the agent is told exit 0), and once the hub is back its outcome is
// there (the person's 'sluice hub approve', which waited through the
// outage, says so), the decision is not applied again, and the fleet
// serves again.
func TestFaultHubKilled(t *testing.T) {
	slow(t)
	h, b, _ := fleet(t)
	agent, id, person := approvedAtHub(t, h, b, "gate")
	before := b.AuditLines()

	h.Kill()
	b.Open("gate")
	ans := agent.Answer(b)
	b.NoOrphans(id, "beat")
	h.Start()
	o := outcome(t, h, id)
	if o.Status != "done" || o.ExitCode == nil || *o.ExitCode != 0 || !o.Applied {
		t.Errorf("the hub holds the outcome %+v, want applied, done, exit 0", o)
	}
	// The person's 'sluice hub approve' waited through the outage.
	if code := person.Wait(t); code != 0 || !strings.Contains(person.Stderr.String(), "b1: done, exit status 0") {
		t.Errorf("the person who approved at the hub was not told the run's end: exit %d\n%s", code, person.Stderr.String())
	}
	b.CheckTold(id, ans)
	faultLines(t, b, before, "the hub was killed mid-run")
	b.Verify()
	servesAgain(t, b, hubApprover(t, h))
}

// fullSpool is a box whose spool is on a small tmpfs of its own (the
// audit log is not: a person's ~/.local/state and a /run/user spool are
// two file systems), served by sluice serve.
func fullSpool(t *testing.T, policy string) (fs string, b *Box, serve *Proc) {
	t.Helper()
	fs = Tmpfs(t, "1m")
	b = NewBox(t, BoxOptions{Spool: fs + "/spool", Policy: policy})
	return fs, b, b.Serve()
}

// TestFaultFullBeforeSubmit: the spool's file system is full before the
// agent asks. The request cannot be written: the agent is told it was
// not run (exit 125) and why, nothing runs, nothing is recorded, and once
// there is space the next request is served.
func TestFaultFullBeforeSubmit(t *testing.T) {
	fs, b, _ := fullSpool(t, AllowAll)
	before := b.AuditLines()
	free := Fill(t, fs)
	ans := b.Ask(`echo "$SLUICE_REQUEST_ID" >> mark`).Answer(b)
	t.Logf("the agent was told exit %d, stderr %s", ans.Code, ans.Stderr)
	if ans.Code != ExitNotRun || !strings.Contains(ans.Stderr, "no space left") {
		t.Errorf("a request that could not be written: exit %d, want %d and why\nstderr: %s", ans.Code, ExitNotRun, ans.Stderr)
	}
	if data, _ := os.ReadFile(b.Project + "/mark"); len(data) > 0 {
		t.Errorf("a request that could not be written ran: %q", data)
	}
	faultLines(t, b, before, "the spool was full")
	free()
	b.Verify()
	servesAgain(t, b, nil)
}

// TestFaultFullWhileWaiting: the spool's file system fills while a
// request waits; a person approves it; the command runs (its start and
// end are in the audit log) and its result cannot be written. sluice
// approve keeps the result and says once why it waits; the agent is
// never told "not run": it keeps waiting, told why, and once there is
// space again it gets the run's real end (exit 0, its output, whose log
// could not be written, from the tail the engine kept). Meanwhile the
// audit log does not grow.
func TestFaultFullWhileWaiting(t *testing.T) {
	fs, b, _ := fullSpool(t, AskAll)
	cmd := `echo "$SLUICE_REQUEST_ID" >> mark; echo hello-from-the-run`
	agent := b.AskText(cmd)
	id := b.IDOf(cmd)
	free := Fill(t, fs)
	before := b.AuditLines()

	// A person approves: the command runs, its result cannot be written
	// yet; sluice approve keeps it, says why, and waits.
	approve := b.Start("approve", id)
	// Three of the engine's rescans (every 2 s) while the disk stays
	// full: an answer now would be a false one, a line each would be a
	// loop.
	select {
	case <-agent.Done():
		t.Fatalf("the agent was answered while no result could be written: %v\nstdout %q\nstderr %q", agent.Cmd.ProcessState, agent.Stdout.String(), agent.Stderr.String())
	case <-approve.Done():
		t.Fatalf("sluice approve ended while its result could not be written: %v\n%s", approve.Cmd.ProcessState, approve.Stderr.String())
	case <-time.After(6500 * time.Millisecond):
	}
	if n := strings.Count(approve.Stderr.String(), "cannot be written yet"); n != 1 {
		t.Errorf("sluice approve said the fault %d times, want once:\n%s", n, approve.Stderr.String())
	}
	if !strings.Contains(approve.Stderr.String(), "free space") {
		t.Errorf("sluice approve does not say what to do:\n%s", approve.Stderr.String())
	}
	if !strings.Contains(agent.Stderr.String(), "still waiting: the command ended; its result waits to be written: free space") {
		t.Errorf("the agent's stderr does not say why it waits: %q", agent.Stderr.String())
	}
	faultLines(t, b, before, "the disk was full")

	// Space again: the result is written, the agent gets the truth: the
	// run's exit 0 and its output, from the tail the engine kept.
	free()
	if code := approve.Wait(t); code != 0 {
		t.Errorf("sluice approve: exit %d\n%s", code, approve.Stderr.String())
	}
	ans := agent.Answer(b)
	b.CheckTold(id, ans)
	if !strings.Contains(ans.Stdout, "hello-from-the-run") {
		t.Errorf("the agent did not get the run's output: %q", ans.Stdout)
	}
	b.NoOrphans(id, "")
	b.Verify()
	servesAgain(t, b, approver(t, b))
}

// TestFaultFullDuringRun: the spool fills while a command runs and
// prints, and has space again before it ends. Its log could not hold
// what it printed meanwhile; the agent still gets every line, from the
// tail the engine kept, and the run's exit 0.
func TestFaultFullDuringRun(t *testing.T) {
	fs, b, _ := fullSpool(t, AllowAll)
	// A kilobyte a line: the log's last page of the tmpfs (4 KiB) must
	// not hold what it prints while the disk is full.
	cmd := `echo "$SLUICE_REQUEST_ID" >> mark; while [ ! -e gate ]; do printf 'output line %01000d\n' 0; echo beat >> beat; sleep 0.05; done; echo end of the run`
	agent := b.AskText(cmd)
	id := b.IDOf(cmd)
	b.WaitMarked(id)
	Until(t, "the run's output reaches the agent", func() bool { return strings.Contains(agent.Stdout.String(), "output line") })
	free := Fill(t, fs)
	before := b.AuditLines()
	beats := func() int {
		data, _ := os.ReadFile(b.Project + "/beat")
		return strings.Count(string(data), "\n")
	}
	full := beats()
	Until(t, "the run prints on while the disk is full", func() bool { return beats() >= full+10 })
	faultLines(t, b, before, "the disk was full")
	free()
	b.Open("gate")
	ans := agent.Answer(b)
	b.CheckTold(id, ans)
	printed := beats()
	if got := strings.Count(ans.Stdout, "output line"); got != printed || !strings.HasSuffix(ans.Stdout, "end of the run\n") {
		t.Errorf("the run printed %d lines and its end; the agent got %d:\n%s", printed, got, ans.Stdout)
	}
	if fi, err := os.Stat(b.Spool + "/out/" + id + ".log"); err == nil && fi.Size() >= int64(printed*(len("output line \n")+1000)) {
		t.Errorf("the run's log holds all of its output (%d bytes): the disk was not full while it printed", fi.Size())
	}
	b.NoOrphans(id, "beat")
	b.Verify()
	servesAgain(t, b, nil)
}

// resultHeld runs a loop the policy allows until its gate opens, fills
// the spool meanwhile, opens the gate and waits until the engine holds
// the result it cannot write (heldResult). before is the audit log's
// lines when the spool was full; free gives the space back.
func resultHeld(t *testing.T) (b *Box, serve *Proc, agent *Agent, id string, before int, free func()) {
	t.Helper()
	fs, b, serve := fullSpool(t, AllowAll)
	agent, id = askLoop(b, "gate")
	b.WaitMarked(id)
	free = Fill(t, fs)
	before = b.AuditLines()
	b.Open("gate")
	heldResult(t, b, agent, before)
	return b, serve, agent, id, before, free
}

// heldResult waits, once a run ended on a full spool, until its agent
// hears why it still waits: the engine holds the result it cannot write.
// An answer now (nothing can be written) or an audit log that grows
// meanwhile (a loop) fails the test at once.
func heldResult(t *testing.T, b *Box, agent *Agent, before int) {
	t.Helper()
	const why = "still waiting: the command ended; its result waits to be written: free space"
	Until(t, "the agent hears why it waits", func() bool {
		return strings.Contains(agent.Stderr.String(), why) || agent.Exited() || b.AuditLines()-before > maxFaultLines
	})
	if agent.Exited() {
		t.Fatalf("the agent was answered while no result could be written: %v\n%s", agent.Cmd.ProcessState, agent.Stderr.String())
	}
	if !strings.Contains(agent.Stderr.String(), why) {
		t.Fatalf("the audit log grew by %d lines while the disk was full (at most %d):%s", b.AuditLines()-before, maxFaultLines, b.Log(b.IDOf(agent.Command)))
	}
	faultLines(t, b, before, "the disk was full")
}

// TestFaultFullAtResult: the spool is full when a run ends, so its
// result cannot be written. sluice serve keeps it and says once why;
// the agent keeps waiting, told why, and gets the run's exit 0 once there
// is space.
func TestFaultFullAtResult(t *testing.T) {
	b, serve, agent, id, _, free := resultHeld(t)
	serve.WaitOutput(t, "cannot be written yet")
	free()
	ans := agent.Answer(b)
	b.CheckTold(id, ans)
	if n := strings.Count(serve.Stderr.String(), "cannot be written yet"); n != 1 {
		t.Errorf("serve said the fault %d times, want once:\n%s", n, serve.Stderr.String())
	}
	b.NoOrphans(id, "beat")
	b.Verify()
	servesAgain(t, b, nil)
}

// TestFaultFullAtResultServeKilled: as TestFaultFullAtResult, and sluice
// serve, holding the result it cannot write, is killed with SIGKILL. The
// result is lost with it; the audit log is not: once there is space, the
// next engine (or the waiting agent) answers from it, the run's real end
// (done, exit 0), not "stopped" and never "not run".
func TestFaultFullAtResultServeKilled(t *testing.T) {
	b, serve, agent, id, before, free := resultHeld(t)
	serve.Kill()
	free()
	b.Serve()
	afterFault(t, b, agent, id, before, "the disk was full and serve was killed", nil)
}

// TestFaultReadOnlyWhileWaiting: the file system of the spool and the
// audit log is remounted read-only while a request waits. (The kernel
// refuses that while a file on it is open for writing, as an engine's
// audit log and serving.lock are: the engine is stopped first, as a
// person remounting it would have to.) Nothing can be claimed nor
// recorded: sluice approve and sluice serve refuse, saying why; an agent
// asking now is told its request was not run; the waiting agent is told
// nothing. Once it is read-write, the request is approved and runs once.
func TestFaultReadOnlyWhileWaiting(t *testing.T) {
	fs := Tmpfs(t, "4m")
	b := NewBox(t, BoxOptions{Spool: fs + "/spool", Audit: fs + "/audit.jsonl", Policy: AskAll})
	agent, id, before := waitingReadOnly(t, b, fs)
	if code, out, errs := b.Sluice("approve", "--yes", id); code == 0 || !strings.Contains(errs, "read-only file system") {
		t.Errorf("sluice approve on a read-only spool: exit %d, want a failure saying why\n%s%s", code, out, errs)
	}
	if code, _, errs := b.Sluice("serve"); code != 1 || !strings.Contains(errs, "read-only file system") {
		t.Errorf("sluice serve on a read-only audit log: exit %d, want 1 saying why\n%s", code, errs)
	}
	now := b.Ask(`echo "$SLUICE_REQUEST_ID" >> mark; echo asked-while-read-only`).Answer(b)
	if now.Code != ExitNotRun || !strings.Contains(now.Stderr, "read-only file system") {
		t.Errorf("an agent asking on a read-only spool: exit %d, want %d saying why\n%s", now.Code, ExitNotRun, now.Stderr)
	}
	if agent.Exited() {
		t.Errorf("the waiting agent was answered while nothing could be decided: %v\n%s", agent.Cmd.ProcessState, agent.Stderr.String())
	}
	if b.Marks(id) != 0 {
		t.Errorf("%s ran on a read-only spool", id)
	}
	writableAgain(t, b, fs, before, "the spool and the audit log were read-only", func() { b.Serve() }, agent, id)
}

// TestFaultReadOnlySpool: sluice serve starts on a spool whose file
// system is read-only (the audit log is elsewhere, writable). It says
// so, with what to do, and serves on; a request that waited is not
// claimed, an agent asking now is told it was not run. Once the spool is
// read-write again, serve serves it as before, the waiting request runs
// once, and an agent is not told that nothing serves the spool (hooks and
// the MCP server withdraw what nobody serves).
func TestFaultReadOnlySpool(t *testing.T) {
	fs := Tmpfs(t, "4m")
	b := NewBox(t, BoxOptions{Spool: fs + "/spool", Policy: AskAll})
	agent, id, before := waitingReadOnly(t, b, fs)
	serve := b.Serve()
	// Said as it starts, before it shows what waits.
	serve.WaitOutput(t, "ask "+id)
	if !strings.Contains(serve.Stderr.String(), "is read-only; remount it read-write") {
		t.Errorf("sluice serve on a read-only spool does not say so:\n%s", serve.Stderr.String())
	}
	if code, out, errs := b.Sluice("approve", "--yes", id); code == 0 || !strings.Contains(errs, "read-only file system") {
		t.Errorf("sluice approve on a read-only spool: exit %d, want a failure saying why\n%s%s", code, out, errs)
	}
	now := b.Ask(`echo "$SLUICE_REQUEST_ID" >> mark; echo asked-while-read-only`).Answer(b)
	if now.Code != ExitNotRun || !strings.Contains(now.Stderr, "read-only file system") {
		t.Errorf("an agent asking on a read-only spool: exit %d, want %d saying why\n%s", now.Code, ExitNotRun, now.Stderr)
	}
	if agent.Exited() || b.Marks(id) != 0 {
		t.Errorf("the waiting request was answered (%v) or ran (%d) on a read-only spool", agent.Exited(), b.Marks(id))
	}
	writableAgain(t, b, fs, before, "the spool was read-only", b.WaitServed, agent, id)
}
