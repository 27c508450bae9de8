package hub

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluice-dev/sluice/hub/wire"
	"github.com/sluice-dev/sluice/queue"
)

// The decision service across SIGKILLs: the embedded hub's process killed
// and started again, and beside a nats-server, 'sluice hub service' as a
// process of its own killed (a console is told no service answers, not
// left waiting) and started again, and the server killed under it.
// Decisions still go through after each, by the credential's name, and
// the box carries them out.
func TestServiceSurvivesKills(t *testing.T) {
	t.Run("sluice hub serve", func(t *testing.T) {
		st, creds := testStore(t, []string{"b1"}, []string{"c1"})
		hub := hubProcess(t, st)
		b1 := newTestBox(t, hub.url, creds["b1"])
		c1 := connect(t, hub.url, creds["c1"])
		decidedThrough(t, b1, c1, "before the kill")
		hub.kill()
		hub.mustStart()
		decidedThrough(t, b1, c1, "after the hub's restart")
	})
	t.Run("nats-server and sluice hub service", func(t *testing.T) {
		st, creds := testStore(t, []string{"b1"}, []string{"c1"})
		srv := natsServerBare(t, st)
		svc := sluiceProc(t, "serving", "hub", "service", "--hub", srv.url, "--store", st.Dir)
		t.Cleanup(svc.kill)
		svc.mustStart()
		b1 := newTestBox(t, srv.url, creds["b1"])
		c1 := connect(t, srv.url, creds["c1"])
		decidedThrough(t, b1, c1, "with the service running")

		svc.kill()
		req := b1.ask(t, "make while-no-service")
		waitFor(t, "the ask on the hub", func() bool { _, ok := pendingKeys(t, c1)[Key("b1", req.ID)]; return ok })
		if _, err := decideAs(ctxT(t), c1, "b1", req.ID, Deny, "alice"); !errors.Is(err, ErrNoService) {
			t.Fatalf("deciding with no service: %v, want ErrNoService", err)
		}
		svc.mustStart()
		if _, err := decideAs(ctxT(t), c1, "b1", req.ID, Deny, "alice"); err != nil {
			t.Fatalf("deciding once the service is back: %v", err)
		}
		if o, err := c1.Outcome(ctxT(t), "b1", req.ID); err != nil || o.Status != queue.StatusDenied || o.By != "alice@c1" {
			t.Fatalf("outcome %+v, %v", o, err)
		}

		srv.kill()
		srv.mustStart()
		decidedThrough(t, b1, c1, "after the server's restart")
	})
}

// decidedThrough asks on b1, approves at c1 as alice once the request is
// listed (the hub may have just come back: the client reconnects), and
// checks the box ran it for alice@c1.
func decidedThrough(t *testing.T, b1 *testBox, c1 *Client, when string) {
	t.Helper()
	req := b1.ask(t, "make "+queue.NewID())
	waitFor(t, "the ask on the hub "+when, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		ps, err := c1.List(ctx, "b1")
		for _, p := range ps {
			if p.ID == req.ID {
				return err == nil
			}
		}
		return false
	})
	d, err := decideAs(ctxT(t), c1, "b1", req.ID, Approve, "alice")
	if err != nil {
		t.Fatalf("approving %s: %v", when, err)
	}
	if d.By != "alice@c1" {
		t.Fatalf("approved %s by %q, want alice@c1", when, d.By)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o, err := c1.Outcome(ctx, "b1", req.ID)
	if err != nil || !o.Applied || o.Status != queue.StatusDone || o.By != "alice@c1" {
		t.Fatalf("outcome %s: %+v, %v", when, o, err)
	}
}

// The pending bucket is bounded: a box's requests beyond its cap (the
// latest) and a request older than the age limit are taken off the hub,
// and a console's feed says which and why; other boxes' stay.
func TestPendingBounded(t *testing.T) {
	t.Run("per box", func(t *testing.T) {
		h, creds := testHubLimits(t, []string{"b1", "b2"}, []string{"c1"}, Limits{PerBox: 2})
		tf := startFeed(t, h.URL(), creds["c1"])
		tf.next(t, "the first listing", func(ev FeedEvent) bool { return ev.Ev == FeedReady })
		b1, b2 := connect(t, h.URL(), creds["b1"]), connect(t, h.URL(), creds["b2"])
		kept := []string{askOnHub(t, b1, "b1"), askOnHub(t, b1, "b1")}
		other := askOnHub(t, b2, "b2")
		over := askOnHub(t, b1, "b1")
		// The drop is said and the request leaves the queue, in either
		// order (the service deletes it and announces it separately).
		var dropped *FeedEvent
		gone := is(FeedGone, "b1", over)
		sawGone := false
		tf.next(t, "the request over b1's cap dropped and gone from the queue", func(ev FeedEvent) bool {
			if ev.Ev == FeedDropped && dropped == nil {
				dropped = &ev
			}
			sawGone = sawGone || gone(ev)
			return dropped != nil && sawGone
		})
		if dropped.Box != "b1" || dropped.ID != over || !strings.Contains(dropped.Text, "b1 has more than 2 requests waiting") {
			t.Fatalf("dropped %+v, want b1/%s over its cap", *dropped, over)
		}
		keys := pendingKeys(t, connect(t, h.URL(), creds["c1"]))
		for _, key := range []string{Key("b1", kept[0]), Key("b1", kept[1]), Key("b2", other)} {
			if _, ok := keys[key]; !ok {
				t.Errorf("%s dropped too", key)
			}
		}
		if len(keys) != 3 {
			t.Errorf("the hub holds %d requests, want 3", len(keys))
		}
	})
	t.Run("age", func(t *testing.T) {
		h, creds := testHubLimits(t, []string{"b1"}, []string{"c1"}, Limits{MaxAge: 300 * time.Millisecond})
		tf := startFeed(t, h.URL(), creds["c1"])
		tf.next(t, "the first listing", func(ev FeedEvent) bool { return ev.Ev == FeedReady })
		b1 := connect(t, h.URL(), creds["b1"])
		id := askOnHub(t, b1, "b1")
		ev := tf.next(t, "the old request dropped", func(ev FeedEvent) bool { return ev.Ev == FeedDropped })
		if ev.Box != "b1" || ev.ID != id || !strings.Contains(ev.Text, "waited on the hub longer than 300ms") {
			t.Fatalf("dropped %+v, want b1/%s for its age", ev, id)
		}
		if _, ok := pendingKeys(t, connect(t, h.URL(), creds["c1"]))[Key("b1", id)]; ok {
			t.Fatal("the old request is still on the hub")
		}
	})
}

// A hub of the earlier version, whose sluice-decisions bucket consoles
// wrote, started by this one: that bucket is retired in place (it keeps
// what it held, and captures nothing more), and an earlier console's
// decision is told to upgrade.
func TestUpgradeFromEarlierHub(t *testing.T) {
	st, creds := testStore(t, []string{"b1"}, []string{"c1"})
	h, err := StartHub(HubOptions{Listen: "127.0.0.1:0", Store: st})
	if err != nil {
		t.Fatal(err)
	}
	// As the earlier version made it, holding an earlier decision (and
	// with no service answering there).
	h.stopService()
	<-h.serviceDone
	admin := adminClient(t, h)
	js, err := jetstream.New(admin.NC)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctxT(t), "KV_"+bucketRetired)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.Subjects = []string{"$KV." + bucketRetired + ".>"}
	if _, err := js.UpdateStream(ctxT(t), cfg); err != nil {
		t.Fatal(err)
	}
	earlier := queue.NewID()
	if _, err := js.Publish(ctxT(t), "$KV."+bucketRetired+"."+Key("b1", earlier), []byte(`{"decision":"deny","by":"alice@c1"}`)); err != nil {
		t.Fatal(err)
	}
	h.Shutdown()

	h, err = StartHub(HubOptions{Listen: "127.0.0.1:0", Store: st})
	if err != nil {
		t.Fatalf("this version's hub on an earlier one's store: %v", err)
	}
	t.Cleanup(h.Shutdown)
	c1 := connect(t, h.URL(), creds["c1"])
	old, err := jetstream.New(c1.NC)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := old.KeyValue(ctxT(t), bucketRetired)
	if err != nil {
		t.Fatal(err)
	}
	if e, err := kv.Get(ctxT(t), Key("b1", earlier)); err != nil || !strings.Contains(string(e.Value()), "alice@c1") {
		t.Fatalf("the earlier decision: %v, %v", e, err)
	}
	earlierConsole(t, h.URL(), creds)
}

// Whatever a console sends the decision service, it answers with a
// refusal, records nothing, and goes on serving.
func TestServiceHostileRequests(t *testing.T) {
	h, creds := testHub(t, []string{"b1"}, []string{"c1"})
	b1, c1 := connect(t, h.URL(), creds["b1"]), connect(t, h.URL(), creds["c1"])
	id := askOnHub(t, b1, "b1")
	for _, body := range []string{
		``, `null`, `[]`, `"x"`, `{"box":1}`, `{}{}`, `{"box":"b1","id":"` + id + `","decision":"maybe"}`,
		`{"box":"b1","id":"` + id + `","decision":"approve","digest":"zz"}`,
		`{"box":"b1","id":"` + id + `","decision":"approve","digest":"abababab","diff_digest":"x"}`,
		`{"box":"../b1","id":"` + id + `","decision":"deny"}`,
		`{"box":"b1","id":"` + id + `","decision":"deny","as":"` + strings.Repeat("a", 65) + `"}`,
		`{"box":"b1","id":"` + id + `","decision":"deny","as":"a\u202eb"}`,
		`{"box":"b1","id":"` + id + `","decision":"deny","reason":"` + strings.Repeat("r", 17<<10) + `"}`,
		`{"box":"b1","id":"` + id + `","decision":"deny","by":null}`,
		`{"box":"b1","id":"` + id + `","decision":"deny","pad":"` + strings.Repeat("p", 70<<10) + `"}`,
	} {
		m, err := c1.NC.RequestWithContext(ctxT(t), DecideSubject("c1"), []byte(body))
		if err != nil {
			t.Fatalf("%.60q: no answer: %v", body, err)
		}
		var rep wire.DecideReply
		if err := json.Unmarshal(m.Data, &rep); err != nil || rep.Decision != nil || rep.Code != wire.CodeRefused {
			t.Errorf("%.60q: answered %s", body, m.Data)
		}
	}
	if _, err := c1.Decisions.Get(ctxT(t), Key("b1", id)); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("a decision recorded: %v", err)
	}
	if d, err := c1.Decide(ctxT(t), Choice{Box: "b1", ID: id, Decision: Deny, As: "alice"}); err != nil || d.By != "alice@c1" {
		t.Fatalf("the service after them: %+v, %v", d, err)
	}
}
