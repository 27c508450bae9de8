package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluice-dev/sluice/queue"
)

// retryHeard sets outcomeRetryHook to pass what Outcome tries again on
// the channel it returns, and Outcome's bound to bound, until the test
// ends. Tests that use it do not run in parallel.
func retryHeard(t *testing.T, bound time.Duration) <-chan error {
	t.Helper()
	heard := make(chan error, 64)
	oldBound, oldHook := outcomeWatchBound, outcomeRetryHook
	outcomeWatchBound = bound
	outcomeRetryHook = func(e error) {
		select {
		case heard <- e:
		default:
		}
	}
	t.Cleanup(func() { outcomeWatchBound, outcomeRetryHook = oldBound, oldHook })
	return heard
}

// A person's 'sluice hub approve' waits for the box's outcome also when
// the hub is away as its watch for it is made (it was killed meanwhile):
// the first watch fails, as every try does while the hub is away, and is
// made again until the hub is back, which lists the outcome. A hub that
// does not come back within the bound ends the wait with an error, rather
// than never (a hub stopped for good). Before, that first failure was the
// answer: approve said "no word from b1 yet (context canceled)".
func TestOutcomeFirstWatchAcrossHubAway(t *testing.T) {
	st, creds := testStore(t, []string{"b1"}, []string{"c1"})
	hub := hubProcess(t, st)
	b1, c1 := connect(t, hub.url, creds["b1"]), connect(t, hub.url, creds["c1"])
	id := queue.NewID()
	zero := 0
	data, _ := json.Marshal(Outcome{Status: queue.StatusDone, ExitCode: &zero, Applied: true, Decision: Approve, By: "alice@c1", At: time.Now().UTC()})
	if _, err := b1.Results.Put(ctxT(t), Key("b1", id), data); err != nil {
		t.Fatal(err)
	}
	hub.kill()
	waitFor(t, "the console to find the hub gone", func() bool { return !c1.NC.IsConnected() })

	// The hub stays away: Outcome tries again, then gives up once the
	// bound passed. The test's own context is far longer: an Outcome
	// that waited for ever ends with it, and fails the test.
	heard := retryHeard(t, 300*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o, err := c1.Outcome(ctx, "b1", id)
	switch {
	case ctx.Err() != nil:
		t.Fatalf("Outcome against a hub that stays away waited until the caller's context ended: %+v, %v", o, err)
	case err == nil || !strings.Contains(err.Error(), "the hub has not answered for 300ms"):
		t.Fatalf("Outcome against a hub that stays away: %+v, %v; want the bound's error", o, err)
	}
	select {
	case <-heard:
	default:
		t.Fatalf("Outcome gave up (%v) without trying the watch again", err)
	}

	// The hub comes back within the bound, after the first try failed:
	// the outcome arrives.
	heard = retryHeard(t, 30*time.Second)
	type result struct {
		o   *Outcome
		err error
	}
	got := make(chan result, 1)
	go func() {
		o, err := c1.Outcome(ctx, "b1", id)
		got <- result{o, err}
	}()
	select {
	case e := <-heard:
		t.Logf("the first watch failed while the hub was away: %v", e)
	case r := <-got:
		t.Fatalf("Outcome ended on its first failure while the hub was away: %+v, %v", r.o, r.err)
	}
	hub.mustStart()
	r := <-got
	if r.err != nil || r.o == nil || r.o.Status != queue.StatusDone || !r.o.Applied || r.o.By != "alice@c1" {
		t.Fatalf("Outcome once the hub was back: %+v, %v; want the outcome the box put", r.o, r.err)
	}
}

// Which failures to make a watch Outcome tries again before its first
// watch: those of a hub that is away or starting, not an answer that
// stays so, and nothing once the client is closed.
func TestWatchMayPass(t *testing.T) {
	h, creds := testHub(t, nil, []string{"c1"})
	c1 := connect(t, h.URL(), creds["c1"])
	for _, c := range []struct {
		err  error
		want bool
	}{
		{context.Canceled, true},
		{context.DeadlineExceeded, true},
		{fmt.Errorf("consumer create: %w", nats.ErrTimeout), true},
		{nats.ErrConnectionClosed, true}, // a flush cut short by the link going down
		{nats.ErrDisconnected, true},
		{nats.ErrReconnectBufExceeded, true},
		{nats.ErrNoResponders, true},
		{nats.ErrJetStreamNotEnabled, true}, // no responders, as the legacy API names it
		{&nats.APIError{Code: 503, ErrorCode: nats.JSErrCodeJetStreamNotAvailable, Description: "JetStream system temporarily unavailable"}, true},
		{nats.ErrStreamNotFound, false},
		{jetstream.ErrBucketNotFound, false},
		{nats.ErrJetStreamNotEnabledForAccount, false},
		{nats.ErrPermissionViolation, false},
		{errors.New("nats: invalid subject"), false},
	} {
		if got := watchMayPass(c1.NC, c.err); got != c.want {
			t.Errorf("watchMayPass(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	c1.Close()
	if watchMayPass(c1.NC, context.Canceled) {
		t.Error("a closed client's failure is tried again: nothing will make it pass")
	}
}
