package hub

import (
	"context"
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
	st, creds := testStore(t, boxes, consoles)
	h, err := StartHub(HubOptions{Listen: "127.0.0.1:0", Store: st})
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
// keys and decides nothing; a console decides, once per request.
func TestPermissions(t *testing.T) {
	h, creds := testHub(t, []string{"b1", "b2"}, []string{"c1", "c2"})
	permissionsScenario(t, h.URL(), creds)
}

func permissionsScenario(t *testing.T, url string, creds map[string]*Creds) {
	b1, b1errs := connectWatched(t, url, creds["b1"])
	c1, c2 := connect(t, url, creds["c1"]), connect(t, url, creds["c2"])
	id := "01KAB5Y6SR7ZQ9M2F0K1W3X4YZ"

	if _, err := b1.Pending.Put(ctxT(t), Key("b1", id), []byte(`{}`)); err != nil {
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

	if _, err := c1.Decisions.Create(ctxT(t), Key("b1", id), []byte(`{"decision":"approve","by":"c1"}`)); err != nil {
		t.Fatalf("a console cannot decide: %v", err)
	}
	if _, err := c2.Decisions.Create(ctxT(t), Key("b1", id), []byte(`{"decision":"deny","by":"c2"}`)); !errors.Is(err, jetstream.ErrKeyExists) {
		t.Fatalf("a second decision for one request: %v, want ErrKeyExists", err)
	}

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
	for _, subj := range []string{"$KV.sluice-pending.b2.", "$KV.sluice-decisions.b1.", "$KV.sluice-results.b2.",
		"$JS.API.CONSUMER.CREATE.KV_sluice-decisions"} {
		if !slices.ContainsFunc(b1errs(), func(e string) bool {
			return strings.Contains(e, "Permissions Violation") && strings.Contains(e, subj)
		}) {
			t.Errorf("no permissions violation reported for %s...: %q", subj, b1errs())
		}
	}
}

// What the permissions cannot say, the buckets enforce: a box publishing
// to its own key with a rollup header wipes nobody's requests, and once a
// request is decided no console can replace, delete or purge the decision.
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

	key := Key("b1", id)
	first := []byte(`{"decision":"deny","by":"alice@c1"}`)
	if _, err := c1.Decisions.Create(ctxT(t), key, first); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Decisions.Put(ctxT(t), key, []byte(`{"decision":"approve","by":"bob@c2"}`)); err == nil {
		t.Error("a console replaced a decision with a plain put")
	}
	if err := c2.Decisions.Delete(ctxT(t), key); err == nil {
		t.Error("a console deleted a decision")
	}
	if err := c2.Decisions.Purge(ctxT(t), key); err == nil {
		t.Error("a console purged a decision")
	}
	if _, err := c2.Decisions.Create(ctxT(t), key, []byte(`{"decision":"approve","by":"bob@c2"}`)); err == nil {
		t.Error("a second decision was created")
	}
	if e, err := c1.Decisions.Get(ctxT(t), key); err != nil || string(e.Value()) != string(first) {
		t.Fatalf("the decision now: %v, %v; want the first one", e, err)
	}
}
