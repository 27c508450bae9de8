package hub

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluice-dev/sluice/hub/wire"
	"github.com/sluice-dev/sluice/queue"
)

// The hub binds identity, against the embedded hub and a nats-server
// process with the service beside it: a console decides only in its own
// name, a box learns nothing of another box's requests and decides
// nothing, and a console of an earlier version is told to upgrade.
func TestIdentity(t *testing.T) {
	t.Run("embedded", func(t *testing.T) {
		h, creds := testHub(t, []string{"b1", "b2"}, []string{"c1", "c2"})
		identityScenarios(t, h.URL(), creds)
	})
	t.Run("nats-server", func(t *testing.T) {
		st, creds := testStore(t, []string{"b1", "b2"}, []string{"c1", "c2"})
		identityScenarios(t, natsServer(t, st).url, creds)
	})
}

func identityScenarios(t *testing.T, url string, creds map[string]*Creds) {
	t.Run("console decides in its own name", func(t *testing.T) { consoleOwnName(t, url, creds) })
	t.Run("box learns nothing of others", func(t *testing.T) { boxSeesOnlyItsOwn(t, url, creds) })
	t.Run("box decides nothing", func(t *testing.T) { boxDecidesNothing(t, url, creds) })
	t.Run("earlier console told to upgrade", func(t *testing.T) { earlierConsole(t, url, creds) })
}

// ask puts a request of box on the hub as its bridge would; withdrawn at
// the end of the test.
func askOnHub(t *testing.T, b *Client, box string) string {
	t.Helper()
	id := queue.NewID()
	if _, err := b.Pending.Put(ctxT(t), Key(box, id), pendingValue(box, id)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Pending.Delete(ctxT(t), Key(box, id)) })
	return id
}

// rawDecide sends body to subject as a console's client would, and
// returns the service's answer.
func rawDecide(t *testing.T, c *Client, subject string, body any) (wire.DecideReply, error) {
	t.Helper()
	data, _ := json.Marshal(body)
	m, err := c.NC.RequestWithContext(refused(t), subject, data)
	if err != nil {
		return wire.DecideReply{}, err
	}
	var rep wire.DecideReply
	if err := json.Unmarshal(m.Data, &rep); err != nil {
		t.Fatalf("the service answered %q", m.Data)
	}
	return rep, nil
}

func consoleOwnName(t *testing.T, url string, creds map[string]*Creds) {
	b1 := connect(t, url, creds["b1"])
	c1, c1errs := connectWatched(t, url, creds["c1"])
	c2 := connect(t, url, creds["c2"])
	id := askOnHub(t, b1, "b1")
	digest := strings.Repeat("ab", 32)

	// A "by" in the payload is refused, whatever it says.
	rep, err := rawDecide(t, c1, DecideSubject("c1"), map[string]string{"box": "b1", "id": id, "decision": Deny, "by": "bob@c2"})
	if err != nil || rep.Code != wire.CodeRefused || !strings.Contains(rep.Error, "by your credentials (c1)") {
		t.Fatalf("a decision naming its own by: %+v, %v; want refused", rep, err)
	}
	// As may not name another console.
	if _, err := c1.Decide(ctxT(t), Choice{Box: "b1", ID: id, Decision: Deny, As: "bob@c2"}); err == nil {
		t.Fatal("the client sent a decision as bob@c2")
	}
	if rep, err := rawDecide(t, c1, DecideSubject("c1"), wire.DecideRequest{Box: "b1", ID: id, Decision: Deny, As: "bob@c2"}); err != nil || rep.Code != wire.CodeRefused {
		t.Fatalf("a decision as bob@c2: %+v, %v; want refused", rep, err)
	}
	// Nor may c1 ask on c2's subject: the hub drops it and says so.
	if _, err := rawDecide(t, c1, DecideSubject("c2"), wire.DecideRequest{Box: "b1", ID: id, Decision: Deny, As: "bob"}); err == nil {
		t.Fatal("console c1 was answered on c2's subject")
	}
	if got := c1errs(); !slices.ContainsFunc(got, func(e string) bool {
		return strings.Contains(e, "Permissions Violation") && strings.Contains(e, DecideSubject("c2"))
	}) {
		t.Errorf("no permissions violation for c1 on c2's subject: %q", got)
	}
	// Nothing of that was recorded.
	if _, err := c2.Decisions.Get(ctxT(t), Key("b1", id)); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("after the refusals the hub holds a decision: %v", err)
	}

	d, err := c1.Decide(ctxT(t), Choice{Box: "b1", ID: id, Decision: Approve, As: "alice", Digest: digest[:12]})
	if err != nil || d.By != "alice@c1" || d.Digest != digest {
		t.Fatalf("c1's approval: %+v, %v", d, err)
	}
	e, err := c2.Decisions.Get(ctxT(t), Key("b1", id))
	if err != nil {
		t.Fatal(err)
	}
	var held Decision
	if err := json.Unmarshal(e.Value(), &held); err != nil || held.By != "alice@c1" || held.Decision != Approve {
		t.Fatalf("the bucket holds %s (%v), want approve by alice@c1", e.Value(), err)
	}
	// The first decision wins through the service.
	var ed *ErrDecided
	if _, err := c2.Decide(ctxT(t), Choice{Box: "b1", ID: id, Decision: Deny, As: "bob"}); !errors.As(err, &ed) || ed.Decision.By != "alice@c1" {
		t.Fatalf("c2's later decision: %v, want ErrDecided by alice@c1", err)
	}
	// Without As, the console's name alone.
	id2 := askOnHub(t, b1, "b1")
	if d, err := c2.Decide(ctxT(t), Choice{Box: "b1", ID: id2, Decision: Deny}); err != nil || d.By != "c2" {
		t.Fatalf("a decision without as: %+v, %v; want by c2", d, err)
	}
	// Refused: no approval without the digest of what was shown, and
	// none of a request that changed.
	id3 := askOnHub(t, b1, "b1")
	if _, err := c1.Decide(ctxT(t), Choice{Box: "b1", ID: id3, Decision: Approve, As: "alice"}); err == nil || !strings.Contains(err.Error(), "digest") {
		t.Fatalf("an approval without a digest: %v", err)
	}
	if _, err := c1.Decide(ctxT(t), Choice{Box: "b1", ID: id3, Decision: Approve, As: "alice", Digest: "cdcdcdcd"}); !errors.Is(err, ErrChanged) {
		t.Fatalf("an approval of another digest: %v, want ErrChanged", err)
	}
	if _, err := c1.Decide(ctxT(t), Choice{Box: "b1", ID: queue.NewID(), Decision: Deny, As: "alice"}); !errors.Is(err, ErrNotPending) {
		t.Fatalf("a decision for nothing: %v, want ErrNotPending", err)
	}
}

// boxSeesOnlyItsOwn: with a box's credentials, every way JetStream has of
// telling what a bucket holds (the stream's info, its subjects, keys,
// consumers, message gets) gives nothing of another box's.
func boxSeesOnlyItsOwn(t *testing.T, url string, creds map[string]*Creds) {
	b1, b1errs := connectWatched(t, url, creds["b1"])
	b2 := connect(t, url, creds["b2"])
	c1 := connect(t, url, creds["c1"])
	secret := askOnHub(t, b2, "b2")
	mine := askOnHub(t, b1, "b1")
	if _, err := c1.Decide(ctxT(t), Choice{Box: "b2", ID: secret, Decision: Deny}); err != nil {
		t.Fatal(err)
	}
	if _, err := b2.Results.Put(ctxT(t), Key("b2", secret), []byte(`{"status":"denied"}`)); err != nil {
		t.Fatal(err)
	}
	leaked := func(what string, data []byte) {
		t.Helper()
		if strings.Contains(string(data), secret) || strings.Contains(string(data), ".b2.") {
			t.Errorf("%s told box b1 of b2's request: %s", what, data)
		}
	}
	var wg sync.WaitGroup
	for _, b := range []string{BucketPending, BucketDecisions, BucketResults, bucketRetired} {
		wg.Go(func() { boxTries(t, b1, b, mine, secret, leaked) })
	}
	wg.Wait()
	// Its own handle refuses what it may not do, before the hub does.
	if _, err := b1.Pending.Keys(ctxT(t)); !errors.Is(err, errBoxBucket) {
		t.Errorf("a box listed keys: %v", err)
	}
	// What it may do, it can: its own keys.
	if e, err := b1.Pending.Get(ctxT(t), Key("b1", mine)); err != nil || !strings.Contains(string(e.Value()), mine) {
		t.Errorf("box b1 reading its own request: %v, %v", e, err)
	}
	if _, err := b1.Pending.Get(refused(t), Key("b2", secret)); err == nil {
		t.Error("box b1 read b2's request")
	}
	if !slices.ContainsFunc(b1errs(), func(e string) bool {
		return strings.Contains(e, "Permissions Violation") && strings.Contains(e, "$JS.API.STREAM.INFO.KV_"+BucketPending)
	}) {
		t.Errorf("the stream info request not refused by the hub's permissions: %q", b1errs())
	}
}

// boxDecidesNothing: a box's credentials cannot record a decision, in the
// bucket or through the service, for itself or another box.
func boxDecidesNothing(t *testing.T, url string, creds map[string]*Creds) {
	b1 := connect(t, url, creds["b1"])
	c1 := connect(t, url, creds["c1"])
	id := askOnHub(t, b1, "b1")
	for _, subject := range []string{DecideSubject("b1"), DecideSubject("c1")} {
		if rep, err := rawDecide(t, b1, subject, wire.DecideRequest{Box: "b1", ID: id, Decision: Deny, As: "x"}); err == nil {
			t.Errorf("box b1 was answered on %s: %+v", subject, rep)
		}
	}
	for _, key := range []string{Key("b1", id), Key("b2", id)} {
		if _, err := b1.Decisions.Create(refused(t), key, []byte(`{"decision":"approve","by":"b1"}`)); err == nil {
			t.Errorf("box b1 wrote decision %s", key)
		}
	}
	js, err := jetstream.New(b1.NC)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(refused(t), "$KV."+bucketRetired+"."+Key("b1", id), []byte(`{"decision":"approve"}`)); err == nil {
		t.Error("box b1 published to the retired decisions bucket")
	}
	if _, err := c1.Decisions.Get(ctxT(t), Key("b1", id)); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("the hub holds a decision after box b1 tried: %v", err)
	}
}

// earlierConsole: a console of the previous version decides by creating
// the key in sluice-decisions itself. It still connects, and its write is
// refused with a word to upgrade; nothing is recorded.
func earlierConsole(t *testing.T, url string, creds map[string]*Creds) {
	b1 := connect(t, url, creds["b1"])
	c1 := connect(t, url, creds["c1"])
	id := askOnHub(t, b1, "b1")
	js, err := jetstream.New(c1.NC)
	if err != nil {
		t.Fatal(err)
	}
	old, err := js.KeyValue(ctxT(t), bucketRetired)
	if err != nil {
		t.Fatalf("an earlier console opens %s: %v", bucketRetired, err)
	}
	if _, err := old.Get(ctxT(t), Key("b1", id)); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("an earlier console's look-up: %v", err)
	}
	data, _ := json.Marshal(Decision{Decision: Approve, By: "mallory@c2", Digest: strings.Repeat("ab", 32), At: time.Now()})
	_, err = old.Create(ctxT(t), Key("b1", id), data)
	if err == nil || !strings.Contains(err.Error(), "upgrade sluice on this console") {
		t.Fatalf("an earlier console's decision: %v, want refused with a word to upgrade", err)
	}
	if _, err := c1.Decisions.Get(ctxT(t), Key("b1", id)); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("the hub holds a decision after an earlier console's write: %v", err)
	}
	if _, err := old.Get(ctxT(t), Key("b1", id)); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("the retired bucket took the write: %v", err)
	}
}

// boxTries tries, as box b1, every way of reading bucket b as a whole,
// passing what any of them answered to leaked. Each try waits for an
// answer a refusal never gets: they run at once.
func boxTries(t *testing.T, b1 *Client, b, mine, secret string, leaked func(string, []byte)) {
	var wg sync.WaitGroup
	defer wg.Wait()
	stream := "KV_" + b
	for _, req := range []struct{ subject, body string }{
		// The stream's info, listing its subjects.
		{"$JS.API.STREAM.INFO." + stream, `{"subjects_filter":">"}`},
		{"$JS.API.STREAM.INFO." + stream, ``},
		{"$JS.API.STREAM.MSG.GET." + stream, `{"last_by_subj":"$KV.` + b + `.b2.` + secret + `"}`},
		{"$JS.API.STREAM.MSG.GET." + stream, `{"seq":1}`},
		{"$JS.API.DIRECT.GET." + stream, `{"last_by_subj":"$KV.` + b + `.b2.` + secret + `"}`},
		{"$JS.API.DIRECT.GET." + stream, `{"seq":1}`},
		// Its own key's direct get, asking for another message.
		{"$JS.API.DIRECT.GET." + stream + ".$KV." + b + ".b1." + mine, `{"seq":1}`},
		{"$JS.API.DIRECT.GET." + stream + ".$KV." + b + ".b1." + mine, `{"next_by_subj":"$KV.` + b + `.>"}`},
		{"$JS.API.DIRECT.GET." + stream + ".$KV." + b + ".b1." + mine, `{"multi_last":["$KV.` + b + `.>"],"batch":10}`},
		{"$JS.API.CONSUMER.NAMES." + stream, ``},
		{"$JS.API.CONSUMER.LIST." + stream, ``},
		{"$JS.API.STREAM.NAMES", `{"subject":"$KV.>"}`},
		{"$JS.API.STREAM.LIST", ``},
		{"$JS.API.INFO", ``},
	} {
		wg.Go(func() {
			m, err := b1.NC.RequestWithContext(refused(t), req.subject, []byte(req.body))
			if err == nil {
				leaked(req.subject+" "+req.body, append(m.Data, []byte(m.Header.Get("Nats-Subject"))...))
			}
		})
	}
	// A consumer over the whole bucket, or b2's keys, or its own filter
	// in the subject with another in the request.
	js, err := jetstream.New(b1.NC)
	if err != nil {
		t.Error(err)
		return
	}
	for _, filter := range []string{"$KV." + b + ".>", "$KV." + b + ".b2.>"} {
		wg.Go(func() {
			if _, err := js.CreateOrUpdateConsumer(refused(t), stream, jetstream.ConsumerConfig{FilterSubject: filter}); err == nil {
				t.Errorf("box b1 made a consumer on %s", filter)
			}
		})
	}
	for i, cfg := range []string{`"filter_subject":"$KV.` + b + `.>"`, `"filter_subjects":["$KV.` + b + `.b2.>"]`} {
		wg.Go(func() {
			inbox := b1.NC.NewRespInbox()
			sub, err := b1.NC.SubscribeSync(inbox)
			if err != nil {
				t.Error(err)
				return
			}
			defer sub.Unsubscribe()
			name := fmt.Sprintf("peek%d", i)
			body := `{"stream_name":"` + stream + `","config":{"name":"` + name + `","deliver_subject":"` + inbox + `","ack_policy":"none",` + cfg + `}}`
			m, err := b1.NC.RequestWithContext(refused(t), "$JS.API.CONSUMER.CREATE."+stream+"."+name+".$KV."+b+".b1.>", []byte(body))
			if err == nil {
				leaked("a consumer with "+cfg, m.Data)
			}
			for {
				m, err := sub.NextMsg(300 * time.Millisecond)
				if err != nil {
					break
				}
				leaked("a consumer with "+cfg+"'s delivery", []byte(m.Subject+" "+string(m.Data)))
			}
		})
	}
	// jetstream's own ways: the bucket's info, its keys.
	wg.Go(func() {
		if kv, err := js.KeyValue(refused(t), b); err == nil {
			if keys, err := kv.Keys(refused(t)); err == nil {
				leaked("the bucket's keys", []byte(strings.Join(keys, " ")))
			}
			t.Errorf("box b1 opened bucket %s as a whole", b)
		}
	})
	// Subscribing to the bucket's subjects.
	wg.Go(func() {
		if sub, err := b1.NC.SubscribeSync("$KV." + b + ".>"); err == nil {
			_ = b1.NC.Flush()
			if m, err := sub.NextMsg(300 * time.Millisecond); err == nil {
				leaked("a subscription", []byte(m.Subject))
			}
			_ = sub.Unsubscribe()
		}
	})
}
