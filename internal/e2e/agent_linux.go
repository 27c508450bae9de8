package e2e

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Agent is an agent's 'sluice run' of one command, waiting for its
// answer.
type Agent struct {
	*Proc
	Command string
	JSON    bool // run --json: the result on stdout, no output
}

// Ask starts an agent's 'sluice run --json -- command' in the box's
// project.
func (b *Box) Ask(command string) *Agent {
	b.T.Helper()
	return &Agent{Proc: b.Start("run", "--json", "--", command), Command: command, JSON: true}
}

// AskText is Ask without --json: the run's output streams to the agent's
// stdout.
func (b *Box) AskText(command string) *Agent {
	b.T.Helper()
	return &Agent{Proc: b.Start("run", "--", command), Command: command}
}

// Answer is what an agent was told.
type Answer struct {
	Code int // sluice run's exit code
	// Result is the result printed (run --json), or what the exit code
	// says without --json; nil when it says the request did not run.
	Result         *Result
	Stdout, Stderr string
}

// Result is the result JSON, as much of it as the suite reads.
type Result struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	ExitCode *int   `json:"exit_code"`
	Reason   string `json:"reason"`
}

// Answer waits for the agent's answer (Guard).
func (a *Agent) Answer(b *Box) Answer {
	b.T.Helper()
	ans := Answer{Code: a.Wait(b.T), Stdout: a.Stdout.String(), Stderr: a.Stderr.String()}
	if a.JSON {
		var r Result
		if json.Unmarshal([]byte(strings.TrimSpace(ans.Stdout)), &r) == nil && r.Status != "" {
			ans.Result = &r
		}
		return ans
	}
	// Without --json the exit code is what the agent is told (protocol
	// section 5): the command's own, or one of sluice run's.
	switch ans.Code {
	case ExitStopped:
		ans.Result = &Result{Status: "stopped"}
	case 124:
		ans.Result = &Result{Status: "timeout"}
	case ExitNotRun, 126, 130, 143, 2:
	default:
		code := ans.Code
		ans.Result = &Result{Status: "done", ExitCode: &code}
	}
	return ans
}

// Exit codes of 'sluice run' (protocol section 5).
const (
	ExitStopped = 123
	ExitNotRun  = 125
)

// CheckTold checks what the agent was told of request id (run with
// --json) against what happened, as the audit log and the marker of Loop
// record it:
//
//   - nothing ran twice (the marker holds id at most once), nor without a
//     started line;
//   - a run that started is never told "not run": it is told how it
//     ended when the log holds its end (its status, its exit code), and
//     "stopped" (exit 123) when it does not;
//   - a request that never started is not told that it ran.
func (b *Box) CheckTold(id string, ans Answer) {
	b.T.Helper()
	t := b.T
	var started bool
	var end *Event
	for _, ev := range b.EventsOf(id) {
		switch ev.Event {
		case "started":
			started = true
		case "finished", "timeout", "killed":
			end = &ev
		}
	}
	told := "exit " + strconv.Itoa(ans.Code)
	if ans.Result != nil {
		told += ", status " + ans.Result.Status
	}
	told += ", stderr " + strings.TrimSpace(ans.Stderr)
	t.Logf("%s: the agent was told %s", id, told)
	marks := b.Marks(id)
	if marks > 1 {
		t.Errorf("%s ran %d times (the marker holds it %d times)", id, marks, marks)
	}
	if marks > 0 && !started {
		t.Errorf("%s ran without a started line in the audit log:%s", id, b.Log(id))
	}
	if !started {
		if ans.Result != nil && ran(ans.Result.Status) {
			t.Errorf("%s never started, yet the agent was told it ran (%s)", id, told)
		}
		if ans.Result == nil && ans.Code != ExitNotRun {
			t.Errorf("%s never started and printed no result, yet the agent was told exit %d, not %d: %s", id, ans.Code, ExitNotRun, told)
		}
		return
	}
	if ans.Code == ExitNotRun || strings.Contains(ans.Stderr, "not run") || ans.Result == nil ||
		!ran(ans.Result.Status) {
		t.Errorf("%s started (the audit log says so), yet the agent was told it did not run: %s\naudit log:%s", id, told, b.Log(id))
		return
	}
	switch {
	case end == nil:
		if ans.Result.Status != "stopped" || ans.Code != ExitStopped {
			t.Errorf("%s started and the audit log holds no end: the agent must be told stopped (exit %d), was told %s\naudit log:%s", id, ExitStopped, told, b.Log(id))
		}
	default:
		want := end.Status
		if want == "" {
			want = map[string]string{"finished": "done", "timeout": "timeout", "killed": "killed"}[end.Event]
		}
		if ans.Result.Status != want || !sameExit(end.ExitCode, ans.Result.ExitCode) {
			t.Errorf("%s ended %s (exit %v) in the audit log, the agent was told %s\naudit log:%s", id, want, deref(end.ExitCode), told, b.Log(id))
		}
		if want == "done" && end.ExitCode != nil && ans.Code != *end.ExitCode {
			t.Errorf("%s exited %d, sluice run %d", id, *end.ExitCode, ans.Code)
		}
	}
}

// ran reports whether a result status says the command ran.
func ran(status string) bool {
	switch status {
	case "done", "timeout", "killed", "stopped":
		return true
	}
	return false
}

func sameExit(a, b *int) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func deref(p *int) any {
	if p == nil {
		return "none"
	}
	return *p
}
