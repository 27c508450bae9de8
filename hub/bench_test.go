package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluice-dev/sluice/queue"
)

// timingApplier notes when each decision reached the box, then answers the
// request (a claim and a result, so that it leaves the spool as a run's
// would).
type timingApplier struct {
	at chan time.Time
	sp *queue.Spool
}

func (a *timingApplier) Approve(ctx context.Context, id, digest, actor string, out io.Writer) error {
	a.at <- time.Now()
	c, err := a.sp.Claim(id, time.Now())
	if err != nil {
		return err
	}
	code := 0
	return c.Finish(queue.Result{Status: queue.StatusDone, ExitCode: &code})
}
func (a *timingApplier) Deny(ctx context.Context, id, actor, reason string) error {
	a.at <- time.Now()
	return nil
}

// BenchmarkDecisionThroughHub: what deciding at a console of the hub adds
// to deciding at the box, on loopback: from the console's Decide (which
// reads the request's digest and creates the decision) to the box's
// bridge handing it to 'sluice approve'. ns/op is the mean; p50-ms and
// p90-ms the percentiles.
func BenchmarkDecisionThroughHub(b *testing.B) {
	h, creds := testHub(b, []string{"b1"}, []string{"c1"})
	bc, cc := creds["b1"], creds["c1"]
	ctx := context.Background()
	boxCl, err := Connect(ctx, h.URL(), bc)
	if err != nil {
		b.Fatal(err)
	}
	defer boxCl.Close()
	con, err := Connect(ctx, h.URL(), cc)
	if err != nil {
		b.Fatal(err)
	}
	defer con.Close()
	sp, err := queue.Open(filepath.Join(b.TempDir(), "spool"))
	if err != nil {
		b.Fatal(err)
	}
	app := &timingApplier{at: make(chan time.Time, 1), sp: sp}
	box := &Box{Name: "b1", Spool: sp, Client: boxCl, Apply: app}
	box.reset()
	decisions := make(chan jetstream.KeyValueEntry, 16)
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go box.watchDecisions(bctx, decisions)
	go func() {
		for e := range decisions {
			box.decided(bctx, e)
		}
	}()
	var lat []time.Duration
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		box.syncMu.Lock() // what the box's own sync does, in one piece
		req := &queue.Request{Kind: queue.KindExec, Command: "make deploy", Cwd: "/srv/app", Agent: "claude-code"}
		if err := sp.Submit(req); err != nil {
			b.Fatal(err)
		}
		raw, _ := json.Marshal(req)
		digest := ""
		list, _ := sp.List()
		for _, e := range list {
			if e.ID == req.ID && e.Request != nil {
				digest = e.Request.Digest()
			}
		}
		p, _ := json.Marshal(Pending{Box: "b1", ID: req.ID, Request: raw, Digest: digest, QueuedAt: time.Now()})
		if _, err := boxCl.Pending.Put(ctx, Key("b1", req.ID), p); err != nil {
			b.Fatal(err)
		}
		box.mu.Lock() // as the box's audit log and sync record an ask
		box.asks[req.ID] = &queue.Event{ID: req.ID, Event: queue.EventQueued}
		box.published[req.ID] = digest
		box.mu.Unlock()
		box.syncMu.Unlock()
		b.StartTimer()
		t0 := time.Now()
		if _, err := con.Decide(ctx, Choice{Box: "b1", ID: req.ID, Decision: Approve, As: "alice", Digest: digest}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, (<-app.at).Sub(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2])/1e6, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*9/10])/1e6, "p90-ms")
}

// BenchmarkList100Boxes: a console's first view of a fleet of 100 boxes
// with 10 requests waiting on each: every pending request listed and
// read.
func BenchmarkList100Boxes(b *testing.B) {
	h, creds := testHub(b, nil, []string{"c1"})
	cc := creds["c1"]
	ctx := context.Background()
	admin, err := h.adminConn()
	if err != nil {
		b.Fatal(err)
	}
	defer admin.Close()
	js, _ := jetstream.New(admin)
	kv, err := js.KeyValue(ctx, BucketPending)
	if err != nil {
		b.Fatal(err)
	}
	for box := range 100 {
		name := fmt.Sprintf("box-%02d", box)
		for range 10 {
			req := &queue.Request{ID: queue.NewID(), Kind: queue.KindExec, Command: "npm install left-pad", Cwd: "/home/dev/app", Agent: "claude-code"}
			raw, _ := json.Marshal(req)
			p, _ := json.Marshal(Pending{Box: name, ID: req.ID, Request: raw, Digest: "x", QueuedAt: time.Now(),
				Verdict: &queue.Verdict{Action: queue.ActionAsk, Category: "networked", Risk: "medium"}})
			if _, err := kv.Put(ctx, Key(name, req.ID), p); err != nil {
				b.Fatal(err)
			}
		}
	}
	con, err := Connect(ctx, h.URL(), cc, nats.Name("bench console"))
	if err != nil {
		b.Fatal(err)
	}
	defer con.Close()
	for b.Loop() {
		ps, err := con.List(ctx, "")
		if err != nil || len(ps) != 1000 {
			b.Fatalf("%d listed, %v", len(ps), err)
		}
	}
}
