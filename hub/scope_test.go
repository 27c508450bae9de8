package hub

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/hub/wire"
	"github.com/sluice-dev/sluice/queue"
)

// askConnect has the box ask a person about a run's connection, as its
// engine does for a run's proxy.
func (tb *testBox) askConnect(t *testing.T, host string) *queue.Request {
	t.Helper()
	return tb.queueAsk(t, &queue.Request{Kind: queue.KindConnect, Host: host, Port: 443, RunID: queue.NewID(),
		Command: "npm install", Cwd: "/home/dev/app", Agent: "claude-code"})
}

// A fleet console's allow for the rest of the run reaches the box's
// engine through the feed, the decision service and the bridge: the
// box's answer to its run's proxy, its audit line and the outcome all say
// run. A decision that names no scope (a console of an earlier version)
// allows once, and a scope goes only with a connect request's approval.
func TestConnectScopeThroughHub(t *testing.T) {
	h, creds := testHub(t, []string{"b1"}, []string{"c1"})
	b1 := newTestBox(t, h.URL(), creds["b1"])
	tf := startFeed(t, h.URL(), creds["c1"])
	tf.next(t, "ready", func(ev FeedEvent) bool { return ev.Ev == FeedReady })

	decide := func(req *queue.Request, scope string) (FeedEvent, *wire.Outcome) {
		t.Helper()
		p := tf.next(t, "the ask", is(FeedPending, "b1", req.ID)).Pending
		ev := tf.send(t, FeedCommand{Op: Approve, Box: "b1", ID: req.ID, Digest: p.Digest, DiffDigest: wire.DiffDigest(p.Diff, p.DiffErr), Scope: scope})
		if ev.Error != "" {
			return ev, nil
		}
		return ev, tf.next(t, "the outcome", is(FeedOutcome, "b1", req.ID)).Outcome
	}
	forRun := b1.askConnect(t, "a.example")
	if ev, o := decide(forRun, wire.ScopeRun); ev.Error != "" || ev.Text != "" || o == nil || !o.Applied || o.Status != queue.StatusDecided || o.Scope != queue.ScopeRun {
		t.Fatalf("allowed for the run: %+v, outcome %+v", ev, o)
	}
	if res, err := b1.spool.ReadResult(forRun.ID); err != nil || res.Decision != queue.Allow || res.Scope != queue.ScopeRun {
		t.Fatalf("the box's answer to its proxy: %+v, %v", res, err)
	}
	ev, err := audit.Decision(b1.log.Path(), forRun.ID, time.Time{})
	if err != nil || ev.Scope != queue.ScopeRun || ev.Actor != "alice@c1 (via the hub)" {
		t.Fatalf("the box's audit line %+v, %v", ev, err)
	}

	once := b1.askConnect(t, "b.example")
	if ev, o := decide(once, ""); ev.Error != "" || o == nil || o.Scope != queue.ScopeOnce {
		t.Fatalf("no scope: %+v, outcome %+v, want allowed once", ev, o)
	}
	if res, _ := b1.spool.ReadResult(once.ID); res == nil || res.Scope != queue.ScopeOnce {
		t.Fatalf("no scope: the box's answer %+v, want once", res)
	}

	cmd := b1.ask(t, "make deploy")
	if ev, _ := decide(cmd, wire.ScopeRun); !strings.Contains(ev.Error, "only a connect request") {
		t.Fatalf("a command allowed for a run: %+v, want refused", ev)
	}
	odd := b1.askConnect(t, "c.example")
	if ev, _ := decide(odd, "forever"); !strings.Contains(ev.Error, `scope "forever": once or run`) {
		t.Fatalf("scope forever: %+v, want refused", ev)
	}
	if ev := tf.send(t, FeedCommand{Op: Deny, Box: "b1", ID: odd.ID, Scope: wire.ScopeRun}); !strings.Contains(ev.Error, "not a deny") {
		t.Fatalf("a deny with a scope: %+v, want refused", ev)
	}
	if got := b1.apply.runs(); len(got) != 0 {
		t.Fatalf("the box ran %v: a connect request runs nothing", got)
	}
}

// A decision as a hub of an earlier version recorded it (no scope) is an
// allow once on the box, and a bridge whose applier cannot carry a scope
// allows once too: narrower than asked, never wider.
func TestConnectScopeOldDecision(t *testing.T) {
	h, creds := testHub(t, []string{"b1"}, []string{"c1"})
	tb := openTestBox(t, "b1")
	plain := &onceApplier{tb.apply}
	tb.tune = func(b *Box) { b.Apply = plain }
	tb.stop = tb.bridge(t, h.URL(), creds["b1"])
	con := connect(t, h.URL(), creds["c1"])

	old := tb.askConnect(t, "a.example")
	waitFor(t, "the ask on the hub", func() bool { _, ok := pendingKeys(t, con)[Key("b1", old.ID)]; return ok })
	p := pendingKeys(t, con)[Key("b1", old.ID)]
	// The service's own write, as an earlier one made it: no scope.
	admin := adminClient(t, h)
	value, _ := json.Marshal(map[string]any{"decision": "approve", "by": "alice@c1", "digest": p.Digest,
		"diff_digest": wire.DiffDigest(p.Diff, p.DiffErr), "at": time.Now().UTC()})
	if _, err := admin.Decisions.Create(ctxT(t), Key("b1", old.ID), value); err != nil {
		t.Fatal(err)
	}
	if o, err := con.Outcome(ctxT(t), "b1", old.ID); err != nil || o.Scope != queue.ScopeOnce {
		t.Fatalf("an old decision: %+v, %v, want allowed once", o, err)
	}

	forRun := tb.askConnect(t, "b.example")
	waitFor(t, "the ask on the hub", func() bool { _, ok := pendingKeys(t, con)[Key("b1", forRun.ID)]; return ok })
	p = pendingKeys(t, con)[Key("b1", forRun.ID)]
	d, err := con.Decide(ctxT(t), Choice{Box: "b1", ID: forRun.ID, Decision: Approve, As: "alice", Digest: p.Digest, Scope: wire.ScopeRun})
	if err != nil || d.Scope != wire.ScopeRun {
		t.Fatalf("Decide: %+v, %v", d, err)
	}
	if o, err := con.Outcome(ctxT(t), "b1", forRun.ID); err != nil || o.Scope != queue.ScopeOnce {
		t.Fatalf("through an applier without scopes: %+v, %v, want allowed once", o, err)
	}
	tb.waitSaid(t, "allowed once, not for the run")
}

// onceApplier is an Applier of an earlier kind: no ApproveScoped.
type onceApplier struct{ a *spoolApplier }

func (o *onceApplier) Approve(ctx context.Context, id, digest, actor string, out io.Writer) error {
	return o.a.Approve(ctx, id, digest, actor, out)
}

func (o *onceApplier) Deny(ctx context.Context, id, actor, reason string) error {
	return o.a.Deny(ctx, id, actor, reason)
}

// The box's own sluice is told the scope: --run for an allow for the run,
// nothing for once, always before the id.
func TestExecApplierScope(t *testing.T) {
	dir := t.TempDir()
	script := dir + "/sluice"
	if err := os.WriteFile(script, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" > \""+dir+"/args\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	a := &ExecApplier{Sluice: script, Args: []string{"--spool", "/s"}}
	for _, tc := range []struct {
		scope queue.Scope
		want  string
	}{
		{queue.ScopeRun, "--spool /s approve --yes --as=alice@c1 (via the hub) --digest=d1 --run -- ID1"},
		{"", "--spool /s approve --yes --as=alice@c1 (via the hub) --digest=d1 -- ID1"},
	} {
		if err := a.ApproveScoped(ctxT(t), "ID1", "d1", "alice@c1 (via the hub)", tc.scope, io.Discard); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(dir + "/args")
		if s := strings.ReplaceAll(strings.TrimSpace(string(got)), "\n", " "); s != tc.want {
			t.Errorf("scope %q: sluice %s, want %s", tc.scope, s, tc.want)
		}
	}
}
