package hub

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluice-dev/sluice/queue"
)

// testStore is a hub store with the named boxes and consoles, and their
// credentials.
func testStore(t testing.TB, boxes, consoles []string) (*Store, map[string]*Creds) {
	t.Helper()
	st, err := Open(filepath.Join(t.TempDir(), "hub"))
	if err != nil {
		t.Fatal(err)
	}
	creds := map[string]*Creds{}
	for role, names := range map[string][]string{RoleBox: boxes, RoleConsole: consoles} {
		for _, n := range names {
			c, _, err := st.Add(n, role, "")
			if err != nil {
				t.Fatal(err)
			}
			creds[n] = c
		}
	}
	return st, creds
}

// testHub starts an embedded hub on a free loopback port with the named
// boxes and consoles, and returns it and their credentials.
func testHub(t testing.TB, boxes, consoles []string) (*Hub, map[string]*Creds) {
	t.Helper()
	return testHubLimits(t, boxes, consoles, Limits{})
}

// testHubLimits is testHub with the pending bucket bounded by lim.
func testHubLimits(t testing.TB, boxes, consoles []string, lim Limits) (*Hub, map[string]*Creds) {
	t.Helper()
	st, creds := testStore(t, boxes, consoles)
	h, err := StartHub(HubOptions{Listen: "127.0.0.1:0", Store: st, Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Shutdown)
	return h, creds
}

func connect(t *testing.T, url string, c *Creds) *Client {
	t.Helper()
	cl, _ := connectWatched(t, url, c)
	return cl
}

// connectWatched also returns the asynchronous errors the hub sent the
// client so far (its refusals: "Permissions Violation for ...").
func connectWatched(t *testing.T, url string, c *Creds) (*Client, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var errs []string
	cl, err := Connect(ctxT(t), url, c, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		mu.Lock()
		errs = append(errs, err.Error())
		mu.Unlock()
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl, func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(errs) }
}

// ctxT bounds one operation: a publish the hub refuses is not answered,
// so it ends when this does.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// refused bounds an operation the hub is expected to refuse: a refused
// publish gets no answer, so it ends only when this does.
func refused(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 750*time.Millisecond)
	t.Cleanup(cancel)
	return ctx
}

// What the hub's permissions let each user do: a box writes only its own
// keys and decides nothing; a console decides, once per request, through
// the hub's decision service.
func TestPermissions(t *testing.T) {
	h, creds := testHub(t, []string{"b1", "b2"}, []string{"c1", "c2"})
	permissionsScenario(t, h.URL(), creds)
}

// pendingValue is a request as a box publishes it, for a test to put on
// the hub without a box's bridge.
func pendingValue(box, id string) []byte {
	data, _ := json.Marshal(Pending{Box: box, ID: id, Request: json.RawMessage(`{"kind":"exec","command":"make"}`),
		Digest: strings.Repeat("ab", 32), QueuedAt: time.Now().UTC()})
	return data
}

func permissionsScenario(t *testing.T, url string, creds map[string]*Creds) {
	b1, b1errs := connectWatched(t, url, creds["b1"])
	c1, c2 := connect(t, url, creds["c1"]), connect(t, url, creds["c2"])
	id := queue.NewID()

	if _, err := b1.Pending.Put(ctxT(t), Key("b1", id), pendingValue("b1", id)); err != nil {
		t.Fatalf("a box cannot publish its own pending request: %v", err)
	}
	if _, err := b1.Pending.Put(refused(t), Key("b2", id), []byte(`{}`)); err == nil {
		t.Fatal("box b1 published a pending request as box b2")
	}
	if _, err := b1.Decisions.Create(refused(t), Key("b1", id), []byte(`{"decision":"approve"}`)); err == nil {
		t.Fatal("a box decided a request")
	}
	if _, err := b1.Results.Put(refused(t), Key("b2", id), []byte(`{}`)); err == nil {
		t.Fatal("box b1 wrote a result as box b2")
	}
	if _, err := c1.Pending.Put(refused(t), Key("b1", id), []byte(`{}`)); err == nil {
		t.Fatal("a console published a pending request")
	}

	d, err := c1.Decide(ctxT(t), Choice{Box: "b1", ID: id, Decision: Approve, As: "alice", Digest: strings.Repeat("ab", 32)})
	if err != nil {
		t.Fatalf("a console cannot decide: %v", err)
	}
	if d.By != "alice@c1" {
		t.Fatalf("recorded by %q, want alice@c1", d.By)
	}
	var ed *ErrDecided
	if _, err := c2.Decide(ctxT(t), Choice{Box: "b1", ID: id, Decision: Deny, As: "bob"}); !errors.As(err, &ed) || ed.Decision.By != "alice@c1" {
		t.Fatalf("a second decision for one request: %v, want ErrDecided naming alice@c1", err)
	}
	// Withdrawn, as its box would once it carried the decision out (the
	// scenarios after this one share the hub).
	t.Cleanup(func() { _ = b1.Pending.Delete(context.Background(), Key("b1", id)) })

	// b1 sees its own decisions, and cannot watch b2's.
	w, err := b1.Decisions.Watch(ctxT(t), "b1.*")
	if err != nil {
		t.Fatalf("a box cannot watch its decisions: %v", err)
	}
	select {
	case e := <-w.Updates():
		if e == nil || e.Key() != Key("b1", id) {
			t.Fatalf("first update %v, want the decision", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no decision seen")
	}
	w.Stop()
	if w, err := b1.Decisions.Watch(refused(t), "b2.*"); err == nil {
		w.Stop()
		t.Fatal("box b1 watched box b2's decisions")
	}
	if w, err := b1.Decisions.WatchAll(refused(t)); err == nil {
		w.Stop()
		t.Fatal("box b1 watched every box's decisions")
	}
	// Refused by the hub's permissions, not lost: the hub said so.
	for _, subj := range []string{"$KV." + BucketPending + ".b2.", "$KV." + BucketDecisions + ".b1.", "$KV." + BucketResults + ".b2.",
		"$JS.API.CONSUMER.CREATE.KV_" + BucketDecisions} {
		if !slices.ContainsFunc(b1errs(), func(e string) bool {
			return strings.Contains(e, "Permissions Violation") && strings.Contains(e, subj)
		}) {
			t.Errorf("no permissions violation reported for %s...: %q", subj, b1errs())
		}
	}
}

// What the permissions cannot say, the buckets enforce: a box publishing
// to its own key with a rollup header wipes nobody's requests, and once a
// request is decided no console can replace, delete or purge the decision
// (nor write one at all: only the hub's service does).
func TestBucketsHardened(t *testing.T) {
	h, creds := testHub(t, []string{"b1", "b2"}, []string{"c1", "c2"})
	bucketsHardened(t, h.URL(), creds)
}

func bucketsHardened(t *testing.T, url string, creds map[string]*Creds) {
	b1, b2 := connect(t, url, creds["b1"]), connect(t, url, creds["b2"])
	c1, c2 := connect(t, url, creds["c1"]), connect(t, url, creds["c2"])
	id := queue.NewID()
	if _, err := b2.Pending.Put(ctxT(t), Key("b2", id), []byte(`{"box":"b2"}`)); err != nil {
		t.Fatal(err)
	}
	js := func(c *Client) jetstream.JetStream {
		j, err := jetstream.New(c.NC)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	for _, roll := range []string{"all", "sub"} {
		msg := nats.NewMsg("$KV." + BucketPending + ".b1." + id)
		msg.Header.Set("Nats-Rollup", roll)
		msg.Data = []byte("{}")
		if _, err := js(b1).PublishMsg(ctxT(t), msg); err == nil {
			t.Errorf("the hub took a rollup (%s) from box b1", roll)
		}
	}
	if e, err := c1.Pending.Get(ctxT(t), Key("b2", id)); err != nil || string(e.Value()) != `{"box":"b2"}` {
		t.Fatalf("box b2's request after b1's rollup: %v, %v", e, err)
	}

	if _, err := b1.Pending.Put(ctxT(t), Key("b1", id), pendingValue("b1", id)); err != nil {
		t.Fatal(err)
	}
	key := Key("b1", id)
	t.Cleanup(func() { _ = b1.Pending.Delete(context.Background(), key) })
	first, err := c1.Decide(ctxT(t), Choice{Box: "b1", ID: id, Decision: Deny, As: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	forged := []byte(`{"decision":"approve","by":"bob@c2"}`)
	if _, err := c2.Decisions.Put(refused(t), key, forged); err == nil {
		t.Error("a console replaced a decision with a plain put")
	}
	if err := c2.Decisions.Delete(refused(t), key); err == nil {
		t.Error("a console deleted a decision")
	}
	if err := c2.Decisions.Purge(refused(t), key); err == nil {
		t.Error("a console purged a decision")
	}
	if _, err := c2.Decisions.Create(refused(t), Key("b1", queue.NewID()), forged); err == nil {
		t.Error("a console wrote a decision itself")
	}
	e, err := c1.Decisions.Get(ctxT(t), key)
	if err != nil {
		t.Fatal(err)
	}
	var now Decision
	if err := json.Unmarshal(e.Value(), &now); err != nil || now.By != first.By || now.Decision != Deny {
		t.Fatalf("the decision now: %s, %v; want the first one (%+v)", e.Value(), err, first)
	}
}

// decideAs decides box's request id at console cl, as as, on the request
// the hub holds now (its digest: what a person would have been shown).
func decideAs(ctx context.Context, cl *Client, box, id, decision, as string) (*Decision, error) {
	p, err := cl.Request(ctx, box, id)
	if err != nil {
		return nil, err
	}
	return cl.Decide(ctx, Choice{Box: box, ID: id, Decision: decision, As: as, Digest: p.Digest})
}

// adminClient is a client of h as its administrator: what may write any
// bucket (the decision service), for a test to write what no console can.
func adminClient(t *testing.T, h *Hub) *Client {
	t.Helper()
	nc, err := h.adminConn()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	cl := &Client{NC: nc, Creds: &Creds{Name: "admin"}, relinked: make(chan struct{})}
	if err := cl.openBuckets(ctxT(t), false); err != nil {
		t.Fatal(err)
	}
	return cl
}
