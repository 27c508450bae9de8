package hub

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/hub/wire"
	"github.com/sluice-dev/sluice/queue"
)

// A box's values cannot make a feed line longer than a console's link
// reads: a pending value over a request file's limit is dropped (a console
// starting later would meet it again), and a large output message is
// passed on in pieces.
func TestFeedBoundsLines(t *testing.T) {
	h, creds := testHub(t, []string{"evil"}, []string{"c1"})
	tf := startFeed(t, h.URL(), creds["c1"])
	tf.next(t, "ready", func(ev FeedEvent) bool { return ev.Ev == FeedReady })
	evil := connect(t, h.URL(), creds["evil"])
	id := queue.NewID()
	// Written as a box may write it: '<' unescaped (valid JSON), 2 MiB.
	val := []byte(`{"box":"evil","id":"` + id + `","digest":"` + strings.Repeat("0", 64) + `","request":{"kind":"exec","command":"` + strings.Repeat("<", 2<<20) + `"}}`)
	if _, err := evil.Pending.Put(ctxT(t), Key("evil", id), val); err != nil {
		t.Fatal(err)
	}
	small := queue.NewID()
	val = []byte(`{"box":"evil","id":"` + small + `","digest":"` + strings.Repeat("0", 64) + `","request":{"kind":"exec","command":"` + strings.Repeat("<", 1000) + `"}}`)
	if _, err := evil.Pending.Put(ctxT(t), Key("evil", small), val); err != nil {
		t.Fatal(err)
	}
	if ev := tf.next(t, "a pending", func(ev FeedEvent) bool { return ev.Ev == FeedPending }); ev.ID != small {
		t.Fatalf("the feed passed on the %d-byte value", len(ev.Pending.Request))
	}
	if err := evil.NC.Publish(OutputSubject("evil", queue.NewID()), make([]byte, 7<<20)); err != nil {
		t.Fatal(err)
	}
	total := 0
	for total < 7<<20 {
		out := tf.next(t, "the output", func(ev FeedEvent) bool { return ev.Ev == FeedOutput })
		line, _ := json.Marshal(out)
		if len(line) > 64<<10 {
			t.Fatalf("an output line of %d bytes", len(line))
		}
		total += len(out.Data)
	}
}

// The person saw diff A; the box's bridge restarts after the file changed
// and republishes the same request (same digest) with diff B. Approving
// what was shown is refused at the hub, and a decision carrying diff A
// that reaches the box is not applied there: no change nobody saw.
func TestFeedStaleDiffAfterBridgeRestart(t *testing.T) {
	e := showEdit(t) // the person sees diff A
	e.b1.stop()
	if err := os.WriteFile(e.file, []byte("package main\n\nconst v = 1 // pinned\nvar evil = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.b1.stop = e.b1.bridge(t, e.h.URL(), e.creds["b1"])
	p2 := e.tf.next(t, "the edit republished", is(FeedPending, "b1", e.req.ID)).Pending
	if p2.Digest != e.p.Digest || p2.Diff == e.p.Diff {
		t.Fatalf("republished digest same=%v diff same=%v", p2.Digest == e.p.Digest, p2.Diff == e.p.Diff)
	}
	// The console approves what it shows: the old value, same digest,
	// the old diff. The hub holds another diff: refused there.
	ev2 := e.approve(t)
	if !strings.Contains(ev2.Error, "changed since it was shown") {
		t.Fatalf("approving the diff no longer published: %+v", ev2)
	}
	// And a decision that reaches the box with the old diff (written
	// before the republication) is not applied there either.
	cl := adminClient(t, e.h)
	d, _ := json.Marshal(Decision{Decision: Approve, By: "alice@c1", Digest: e.p.Digest, DiffDigest: wire.DiffDigest(e.p.Diff, e.p.DiffErr), At: time.Now()})
	if _, err := cl.Decisions.Create(ctxT(t), Key("b1", e.req.ID), d); err != nil {
		t.Fatal(err)
	}
	o := e.tf.next(t, "the outcome", is(FeedOutcome, "b1", e.req.ID)).Outcome
	if o.Applied {
		t.Fatalf("applied (%s) although the diff shown was\n%s\nand the diff applied\n%s", o.Status, e.p.Diff, p2.Diff)
	}
}

// A command over the feed's line limit (a deny reason pasted in) is
// refused on its own; the feed goes on.
func TestFeedLongCommandSkipped(t *testing.T) {
	h, creds := testHub(t, nil, []string{"c1"})
	f := &Feed{Client: connect(t, h.URL(), creds["c1"]), Out: io.Discard, As: "a"}
	line, _ := json.Marshal(FeedCommand{Seq: 1, Op: Deny, Box: "b1", ID: queue.NewID(), Reason: strings.Repeat("x", 70<<10)})
	pr, pw := io.Pipe()
	go pw.Write(append(line, '\n'))
	done := make(chan error, 1)
	go func() { done <- f.Run(context.Background(), pr) }()
	select {
	case err := <-done:
		t.Fatalf("the feed ended on one long command: %v", err)
	case <-time.After(2 * time.Second):
	}
	pw.Close()
}

// An approval refused because the diff changed ("decide it there") spends
// the hub's decision: after a bridge restart the request is not published
// again (no console could decide it), it waits on its box.
func TestFeedRefusedRequestStaysOnBox(t *testing.T) {
	e := showEdit(t)
	os.WriteFile(e.file, []byte("package main\n\nconst v = 1 // pinned\n"), 0o644)
	e.approve(t)
	e.tf.each(t, "the outcome and the withdrawal", is(FeedOutcome, "b1", e.req.ID), is(FeedGone, "b1", e.req.ID))
	e.b1.stop()
	e.b1.stop = e.b1.bridge(t, e.h.URL(), e.creds["b1"])
	c1 := connect(t, e.h.URL(), e.creds["c1"])
	e.b1.synced(t, c1)
	if _, ok := pendingKeys(t, c1)[Key("b1", e.req.ID)]; ok {
		p2 := e.tf.next(t, "again", is(FeedPending, "b1", e.req.ID)).Pending
		d := e.tf.send(t, FeedCommand{Op: Deny, Box: "b1", ID: e.req.ID, Digest: p2.Digest})
		t.Fatalf("the refused request is pending on the hub again; deciding it: %q", d.Error)
	}
}
