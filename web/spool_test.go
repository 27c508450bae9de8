package web

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/queue"
)

// waitFor waits on src's changes until cond holds (a hang guard, not a
// timing assertion).
func waitFor(t *testing.T, src Source, what string, cond func() bool) {
	t.Helper()
	guard := time.After(60 * time.Second)
	for {
		ch := src.Changed()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-guard:
			t.Fatalf("still not: %s", what)
		}
	}
}

// The spool source lists what waits, takes verdicts and History from the
// audit log (its own spool's lines only), and reads a run's output and
// result: all without acting on the spool.
func TestSpoolSourceFollowsTheBox(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sp, err := queue.Open(filepath.Join(dir, "spool"))
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "audit.jsonl")
	log, err := audit.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	src := NewSpool(sp, SpoolOptions{Sluice: "/nonexistent/sluice", Audit: logPath})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { src.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	req := &queue.Request{ID: "01WEBTEST0000000000000000A", Kind: queue.KindExec, Command: "make deploy", Cwd: dir, Agent: "codex"}
	if err := sp.Submit(req); err != nil {
		t.Fatal(err)
	}
	waitFor(t, src, "the request listed", func() bool { q := src.Queue(); return len(q) == 1 && q[0].ID == req.ID })
	// Another spool's line for the same id is not this box's verdict.
	other := queue.NewEvent(queue.EventQueued, req)
	other.Spool, other.Verdict = "/elsewhere", &queue.Verdict{Action: queue.ActionDeny}
	queued := queue.NewEvent(queue.EventQueued, req)
	queued.Spool, queued.Verdict = sp.Dir(), &queue.Verdict{Action: queue.ActionAsk, Category: "mutating", Risk: "high", Profile: "networked"}
	if err := log.RecordAll([]queue.Event{other, queued}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, src, "the verdict", func() bool { q := src.Queue(); return len(q) == 1 && q[0].Verdict != nil })
	if v := src.Queue()[0].Verdict; v.Action != queue.ActionAsk || v.Category != "mutating" {
		t.Fatalf("verdict: %+v", v)
	}
	it, err := src.Item(req.ID)
	if err != nil || it.Digest == "" || it.Request.Command != "make deploy" {
		t.Fatalf("Item: %+v %v", it, err)
	}

	// A person approves it elsewhere; it runs and ends.
	c, err := sp.Claim(req.ID, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, src, "the request running", func() bool { q := src.Queue(); return len(q) == 1 && q[0].State == queue.StateRunning })
	approved := queue.NewEvent(queue.EventApproved, req)
	approved.Spool, approved.Actor = sp.Dir(), "alice@laptop (via web)"
	if err := log.Record(approved); err != nil {
		t.Fatal(err)
	}
	waitFor(t, src, "who decided", func() bool { _, by, ok := src.Winner(req.ID); return ok && by == "alice@laptop (via web)" })
	if err := os.WriteFile(sp.LogPath(req.ID), []byte("deploying\x1b[32m ok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data, next, ended, err := src.Output(req.ID, 0, 1024)
	if err != nil || string(data) != "deploying\x1b[32m ok\n" || next != int64(len(data)) || ended {
		t.Fatalf("Output while running: %q %d %v %v", data, next, ended, err)
	}
	code := 0
	finished := queue.NewEvent(queue.EventFinished, req)
	finished.Spool, finished.Status, finished.ExitCode = sp.Dir(), queue.StatusDone, &code
	if err := log.Record(finished); err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(queue.Result{Status: queue.StatusDone, Decision: queue.Allow, DecidedBy: queue.ByHuman, ExitCode: &code}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, src, "the queue empty and History with the outcome", func() bool {
		h := src.History()
		return len(src.Queue()) == 0 && len(h) == 1 && h[0].Status == queue.StatusDone && h[0].By == "alice@laptop (via web)"
	})
	if _, _, ended, _ := src.Output(req.ID, next, 1024); !ended {
		t.Fatal("Output after the result: not ended")
	}
	if _, err := src.Item(req.ID); err != ErrGone {
		t.Fatalf("Item of a request that ended: %v, want ErrGone", err)
	}
	// Approve and Deny go through sluice; a missing one says so.
	if err := src.Approve(ctx, req.ID, "00", "", "alice@x (via web)", ""); err == nil {
		t.Fatal("Approve without a sluice program: no error")
	}
}
