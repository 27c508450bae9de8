package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/queue"
)

// run is a spool, marker and audit log as a run of a harness leaves
// them, made with the queue and audit packages themselves: three
// requests, one approved on the hub and done, one denied there, one
// interrupted before it started.
type run struct {
	t         *testing.T
	spool     *queue.Spool
	dir       string
	mark      string
	log       *audit.Log
	auditPath string
	told      []Told
	decisions map[string]string
	done      string // the done request's id
}

func newRun(t *testing.T) *run {
	dir := t.TempDir()
	r := &run{t: t, dir: filepath.Join(dir, "spool"), mark: filepath.Join(dir, "mark"), auditPath: filepath.Join(dir, "audit.jsonl"), decisions: map[string]string{}}
	var err error
	if r.spool, err = queue.Open(r.dir); err != nil {
		t.Fatal(err)
	}
	if r.log, err = audit.Open(r.auditPath); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.log.Close() })
	zero := 0
	r.done = r.request("approve", func(id string) queue.Result {
		r.record(id, queue.EventStarted)
		r.markRun(id)
		r.record(id, queue.EventFinished)
		return queue.Result{Status: queue.StatusDone, ExitCode: &zero, DecidedBy: queue.ByHuman}
	}, 0, "")
	r.request("deny", func(id string) queue.Result {
		r.record(id, queue.EventDenied)
		return queue.Result{Status: queue.StatusDenied, DecidedBy: queue.ByHuman}
	}, 126, "")
	r.request("", func(id string) queue.Result {
		r.record(id, queue.EventInterrupted)
		return queue.Result{Status: queue.StatusInterrupted}
	}, 125, "sluice: not run: interrupted")
	return r
}

// request submits a request, claims it, has act record what happened and
// finishes it with act's result, which its writer is told.
func (r *run) request(decision string, act func(id string) queue.Result, exit int, stderr string) string {
	r.t.Helper()
	req := &queue.Request{Kind: queue.KindExec, Command: `echo "$SLUICE_REQUEST_ID" >> mark`, Cwd: "/", ExpiresAt: time.Now().Add(time.Hour)}
	if err := r.spool.Submit(req); err != nil {
		r.t.Fatal(err)
	}
	c, err := r.spool.Claim(req.ID, time.Now())
	if err != nil {
		r.t.Fatal(err)
	}
	res := act(req.ID)
	if err := c.Finish(res); err != nil {
		r.t.Fatal(err)
	}
	res.ID = req.ID
	r.told = append(r.told, Told{Name: "writer of " + req.ID, Result: &res, Exit: exit, Stderr: stderr})
	if decision != "" {
		r.decisions[req.ID] = decision
	}
	return req.ID
}

func (r *run) record(id string, ev queue.EventName) {
	r.t.Helper()
	if _, err := r.log.Append(queue.Event{ID: id, Event: ev, Actor: "me"}); err != nil {
		r.t.Fatal(err)
	}
}

func (r *run) markRun(id string) {
	r.t.Helper()
	f, err := os.OpenFile(r.mark, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(id + "\n"); err != nil {
		r.t.Fatal(err)
	}
}

// The faults a checker is handed.

// ranTwice runs the done request's command again: a second marker line
// and a second started event, as a second actor would leave them.
func (r *run) ranTwice() {
	r.record(r.done, queue.EventStarted)
	r.markRun(r.done)
}

// lost leaves a request the hub approved pending with no result, and its
// writer told nothing.
func (r *run) lost() {
	req := &queue.Request{Kind: queue.KindExec, Command: "true", Cwd: "/", ExpiresAt: time.Now().Add(time.Hour)}
	if err := r.spool.Submit(req); err != nil {
		r.t.Fatal(err)
	}
	r.decisions[req.ID] = "approve"
	r.told = append(r.told, Told{Name: "writer of " + req.ID, Exit: -1, Stderr: "killed waiting"})
}

// brokenChain edits an audit line in place: the actor of the first
// line, whose hash then no longer matches.
func (r *run) brokenChain() {
	data, err := os.ReadFile(r.auditPath)
	if err != nil {
		r.t.Fatal(err)
	}
	edited := bytes.Replace(data, []byte(`"actor":"me"`), []byte(`"actor":"mx"`), 1)
	if bytes.Equal(edited, data) {
		r.t.Fatal("no line to edit")
	}
	if err := os.WriteFile(r.auditPath, edited, 0o600); err != nil {
		r.t.Fatal(err)
	}
}

// checkers runs each checker over the run and returns what each found.
func (r *run) checkers() map[string]Failures {
	r.t.Helper()
	sp, err := ReadSpool(r.dir)
	if err != nil {
		r.t.Fatal(err)
	}
	marks, err := ReadMarks(r.mark)
	if err != nil {
		r.t.Fatal(err)
	}
	events, err := ReadAudit(r.auditPath)
	if err != nil {
		r.t.Fatal(err)
	}
	_, chain := CheckChain(r.auditPath)
	return map[string]Failures{
		"CheckOnce":  CheckOnce(sp, marks, events),
		"CheckChain": chain,
		"CheckTold":  CheckTold(sp, r.told),
		"CheckHub":   CheckHub("b1", sp, marks, r.decisions, nil),
	}
}

// A run with nothing wrong passes every checker: their failures below
// are the faults', not their own.
func TestCheckersPassAGoodRun(t *testing.T) {
	for name, f := range newRun(t).checkers() {
		if len(f) > 0 {
			t.Errorf("%s fails a good run:\n  %s", name, strings.Join(f, "\n  "))
		}
	}
}

// Handed a spool with a request run twice, a lost request and a broken
// chain, every checker fails.
func TestCheckersFailABrokenRun(t *testing.T) {
	r := newRun(t)
	r.ranTwice()
	r.lost()
	r.brokenChain()
	for name, f := range r.checkers() {
		if len(f) == 0 {
			t.Errorf("%s passes a spool with a request run twice, a lost request and a broken chain", name)
		}
	}
}

// Each fault alone fails the checkers whose promise it breaks, and says
// so; the others' promises hold, and they pass.
func TestEachFaultFailsItsCheckers(t *testing.T) {
	for _, c := range []struct {
		fault  string
		break_ func(*run)
		fail   map[string]string // checker -> what its failure says
	}{
		{"ran twice", (*run).ranTwice, map[string]string{
			"CheckOnce": "ran more than once",
			"CheckHub":  "approved once on the hub, run 2 times",
		}},
		{"lost", (*run).lost, map[string]string{
			"CheckOnce": "lost: no result",
			"CheckTold": "without a result",
			"CheckHub":  "lost on the box",
		}},
		{"broken chain", (*run).brokenChain, map[string]string{
			"CheckChain": "audit chain",
		}},
	} {
		t.Run(c.fault, func(t *testing.T) {
			r := newRun(t)
			c.break_(r)
			for name, f := range r.checkers() {
				want, ok := c.fail[name]
				switch {
				case ok && !strings.Contains(strings.Join(f, "\n"), want):
					t.Errorf("%s: want a failure saying %q, got %q", name, want, f)
				case !ok && len(f) > 0:
					t.Errorf("%s fails on a fault it does not check: %q", name, f)
				}
			}
		})
	}
}

// A request told interrupted that did start, and one denied that ran, are
// lies CheckOnce finds; a writer told another status than the spool's,
// CheckTold.
func TestCheckersFindLies(t *testing.T) {
	r := newRun(t)
	for i := range r.told {
		res := r.told[i].Result
		switch res.Status {
		case queue.StatusInterrupted:
			r.record(res.ID, queue.EventStarted)
			r.markRun(res.ID)
		case queue.StatusDenied:
			r.told[i].Result = &queue.Result{ID: res.ID, Status: queue.StatusDone}
		}
	}
	f := r.checkers()
	if s := strings.Join(f["CheckOnce"], "\n"); !strings.Contains(s, "told interrupted (not run), but it started") {
		t.Errorf("CheckOnce: %q", f["CheckOnce"])
	}
	if s := strings.Join(f["CheckTold"], "\n"); !strings.Contains(s, "told done, the spool says denied") {
		t.Errorf("CheckTold: %q", f["CheckTold"])
	}
}
