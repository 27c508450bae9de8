package audit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// TestCheckAllow: an allow is backed only by a decision for that very
// request, recorded after it was made; a command that merely mentions
// the id or the event is not one.
func TestCheckAllow(t *testing.T) {
	l := openTestLog(t)
	p := l.Path()
	rec := func(name queue.EventName, r *queue.Request, command string) {
		t.Helper()
		e := queue.NewEvent(name, r)
		e.Actor = "policy"
		if command != "" {
			e.Command = command
		}
		if err := l.Record(e); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UTC()
	mk := func() *queue.Request {
		return &queue.Request{Version: 1, ID: queue.NewID(), Kind: queue.KindExec, Command: "make test", Cwd: "/tmp", CreatedAt: now}
	}
	allowed, denied, forged, edited := mk(), mk(), mk(), mk()
	rec(queue.EventQueued, allowed, "")
	rec(queue.EventAutoAllowed, allowed, "")
	rec(queue.EventDenied, denied, "")
	// A line about another request whose command names forged's id and
	// the approved event: text, not members.
	rec(queue.EventQueued, mk(), `echo '"id":"`+forged.ID+`","event":"approved"'`)
	rec(queue.EventApproved, edited, "make test -run X")
	allow := &queue.Result{Decision: queue.Allow}
	if err := CheckAllow(p, allowed, allow); err != nil {
		t.Errorf("auto_allowed: %v", err)
	}
	if err := CheckAllow(p, denied, allow); err == nil {
		t.Error("a denied request's allow was believed")
	}
	if err := CheckAllow(p, forged, allow); err == nil {
		t.Error("a command naming the request's id and an event was taken for a decision")
	}
	if err := CheckAllow(p, edited, &queue.Result{Decision: queue.Allow, Command: "make test -run X"}); err != nil {
		t.Errorf("approved edit: %v", err)
	}
	if err := CheckAllow(p, edited, &queue.Result{Decision: queue.Allow, Command: "rm -rf ~"}); err == nil {
		t.Error("an edited command the log does not hold was believed")
	}
	// A decision many chunks back (a busy log: other requests' lines
	// since) is still found.
	for range 60 {
		rec(queue.EventQueued, mk(), "")
	}
	if fi, err := os.Stat(p); err != nil || fi.Size() < 16<<10 {
		t.Fatalf("the log should be over 16 KiB now: %v %v", fi, err)
	}
	if err := CheckAllow(p, allowed, allow); err != nil {
		t.Errorf("auto_allowed, 60 lines back: %v", err)
	}
	// The same id, for a request made long after that decision (an id
	// reused to replay an old allow): not looked for before it was made.
	late := *allowed
	late.CreatedAt = now.Add(time.Hour)
	if _, err := Decision(p, late.ID, late.CreatedAt.Add(-time.Minute)); !errors.Is(err, ErrNoDecision) {
		t.Errorf("a decision older than the request was taken for its own: %v", err)
	}
}

// TestCheckAllowNotJSON: a line that holds a request's id and a decision
// event as members but is not JSON (cut short, or written by hand) does
// not back an allow.
func TestCheckAllowNotJSON(t *testing.T) {
	p := filepath.Join(t.TempDir(), "audit.jsonl")
	req := &queue.Request{Version: 1, ID: queue.NewID(), Kind: queue.KindExec, Command: "make test", Cwd: "/tmp", CreatedAt: time.Now().UTC()}
	line := `{"seq":1,"ts":"` + time.Now().UTC().Format(time.RFC3339Nano) + `","event":"auto_allowed","id":"` + req.ID + `","command":` + "\n"
	if err := os.WriteFile(p, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CheckAllow(p, req, &queue.Result{Decision: queue.Allow}); err == nil {
		t.Error("a line that is not JSON was taken for a decision")
	}
}

// TestVerifier: the writers' queue.Verifier checks the log it is given,
// else the one the engine serving the spool published, and believes
// nothing when there is neither.
func TestVerifier(t *testing.T) {
	dir := t.TempDir()
	sp, err := queue.Open(filepath.Join(dir, "spool"))
	if err != nil {
		t.Fatal(err)
	}
	req := &queue.Request{Version: 1, ID: queue.NewID(), Kind: queue.KindExec, Command: "make test", Cwd: "/tmp", CreatedAt: time.Now().UTC()}
	res := &queue.Result{Status: queue.StatusDone, Decision: queue.Allow}
	holds, empty := filepath.Join(dir, "holds.jsonl"), filepath.Join(dir, "empty.jsonl")
	l, err := Open(holds)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	e := queue.NewEvent(queue.EventApproved, req)
	e.Actor = "someone"
	if err := l.Record(e); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := (Verifier{Spool: sp}).Verify(req, res); err == nil || !strings.Contains(err.Error(), "did not say where its audit log is") {
		t.Errorf("no log named anywhere: %v, want an error saying so", err)
	}
	release, err := sp.Present(holds)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if err := (Verifier{Spool: sp}).Verify(req, res); err != nil {
		t.Errorf("the published log holds the decision: %v", err)
	}
	if err := (Verifier{Path: empty, Spool: sp}).Verify(req, res); err == nil || !strings.Contains(err.Error(), "holds no decision for request "+req.ID) {
		t.Errorf("Path names a log without the decision: %v, want it not believed", err)
	}
	if err := (Verifier{Path: holds}).Verify(req, res); err != nil {
		t.Errorf("Path names the log with the decision: %v", err)
	}
}
