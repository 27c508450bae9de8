package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluice-dev/sluice/hub/wire"
)

// List returns the requests waiting for a person on every box, oldest
// first (box filters to one box when not empty). One watch brings every
// current value at once, rather than a round trip a key.
func (c *Client) List(ctx context.Context, box string) ([]Pending, error) {
	filter := ">"
	if box != "" {
		filter = box + ".*"
	}
	w, err := c.Pending.Watch(ctx, filter, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	var out []Pending
	for {
		e, err := nextEntry(ctx, w)
		if err != nil {
			return nil, err
		}
		if e == nil { // all current values delivered
			slices.SortFunc(out, func(a, b Pending) int { return a.QueuedAt.Compare(b.QueuedAt) })
			return out, nil
		}
		b, _, ok := SplitKey(e.Key())
		if !ok || e.Operation() != jetstream.KeyValuePut {
			continue
		}
		var p Pending
		if json.Unmarshal(e.Value(), &p) != nil || p.Box != b || Key(p.Box, p.ID) != e.Key() {
			continue // what a box wrote under its key must be about that key
		}
		out = append(out, p)
	}
}

// nextEntry waits for w's next entry; nil marks the end of the values the
// bucket held when the watch began.
func nextEntry(ctx context.Context, w jetstream.KeyWatcher) (jetstream.KeyValueEntry, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case e, ok := <-w.Updates():
		if !ok {
			return nil, errors.New("the hub stopped answering")
		}
		return e, nil
	}
}

// ErrDecided says another console decided the request first.
type ErrDecided struct {
	Decision Decision
}

func (e *ErrDecided) Error() string {
	return fmt.Sprintf("already decided: %s by %s at %s", safe(e.Decision.Decision), safe(e.Decision.By), e.Decision.At.Local().Format(time.DateTime))
}

// ErrNotPending says the hub holds no waiting request under that key.
var ErrNotPending = errors.New("no such request waits on the hub")

// Request is box's request id as the hub holds it now.
func (c *Client) Request(ctx context.Context, box, id string) (*Pending, error) {
	key := Key(box, id)
	e, err := c.Pending.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		if prev, perr := c.decision(ctx, key); perr == nil {
			return nil, &ErrDecided{Decision: *prev}
		}
		return nil, fmt.Errorf("%s/%s: %w", box, id, ErrNotPending)
	}
	if err != nil {
		return nil, err
	}
	var p Pending
	if err := json.Unmarshal(e.Value(), &p); err != nil || Key(p.Box, p.ID) != key {
		return nil, fmt.Errorf("%s/%s: the hub holds something that is not this request", box, id)
	}
	return &p, nil
}

// ErrChanged says the request on the hub is not the one the person saw.
var ErrChanged = errors.New("the request changed since it was shown (another digest); look at it again ('sluice hub ls')")

// ErrNoService says no decision service answered on the hub.
var ErrNoService = errors.New("no decision service answers on the hub: 'sluice hub serve' runs one; beside a nats-server, run 'sluice hub service' on the hub's machine")

// noServiceWait is how long Decide tries again while no decision service
// answers: one that lost the hub reconnects within a second of it.
const noServiceWait = 3 * time.Second

// Choice is a decision a console asks the hub to record.
type Choice struct {
	Box, ID  string
	Decision string // Approve or Deny
	// As names who decides at this console: a person, or a device a
	// program such as a web approver vouches for (wire.ValidAs: at most
	// 64 letters, digits, spaces and ._-+()/:, no '@'). The hub records
	// the decision by "AS@CONSOLE", CONSOLE the name of this client's
	// credentials, whatever As says: a console decides in its own name.
	As     string
	Reason string
	// Digest is the digest of the request as the person saw it (or a
	// prefix of at least 8 hex digits; required to approve), DiffDigest
	// the wire.DiffDigest of the diff shown with it (without it the
	// decision carries the diff the hub holds now): a request (or
	// published diff) that is not that one any more is refused
	// (ErrChanged).
	Digest, DiffDigest string
	// Scope is wire.ScopeRun to allow a connect request for the rest of
	// its run; "" once. A hub of an earlier version records the allow
	// without it (once): the decision returned says which.
	Scope string
}

// Decide asks the hub's decision service to record ch as this console's,
// and returns the decision as the hub recorded it. The first decision for
// a request wins: a later one gets *ErrDecided naming it. A request that
// does not wait on the hub gets ErrNotPending, one that changed
// ErrChanged, and a hub with no decision service running ErrNoService.
func (c *Client) Decide(ctx context.Context, ch Choice) (*Decision, error) {
	if ch.Decision != Approve && ch.Decision != Deny {
		return nil, fmt.Errorf("decision %q: approve or deny", ch.Decision)
	}
	if ch.Digest != "" && len(ch.Digest) < 8 {
		return nil, fmt.Errorf("digest %q: give at least 8 hex digits", ch.Digest)
	}
	if !wire.ValidAs(ch.As) {
		return nil, fmt.Errorf("as %q: at most %d letters, digits, spaces and ._-+()/:, (wire.AsName makes one)", ch.As, wire.MaxAs)
	}
	data, _ := json.Marshal(wire.DecideRequest{Box: ch.Box, ID: ch.ID, Decision: ch.Decision, As: ch.As, Reason: ch.Reason,
		Digest: ch.Digest, DiffDigest: ch.DiffDigest, Scope: ch.Scope})
	// Nobody got a request that had no responders: it is sent again for
	// a while, as a service that lost the hub with this client may not
	// be back yet.
	var m *nats.Msg
	var err error
	for give := time.Now().Add(noServiceWait); ; {
		m, err = c.NC.RequestWithContext(ctx, DecideSubject(c.Creds.Name), data)
		if !errors.Is(err, nats.ErrNoResponders) {
			break
		}
		if time.Now().After(give) {
			return nil, ErrNoService
		}
		select {
		case <-ctx.Done():
			return nil, ErrNoService
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err != nil {
		return nil, fmt.Errorf("the hub's decision service: %w", err)
	}
	var rep wire.DecideReply
	if err := json.Unmarshal(m.Data, &rep); err != nil {
		return nil, fmt.Errorf("the hub's decision service: not an answer (%v)", err)
	}
	switch {
	case rep.Code == wire.CodeDecided && rep.Decision != nil:
		return nil, &ErrDecided{Decision: *rep.Decision}
	case rep.Code == wire.CodeNotPending:
		return nil, fmt.Errorf("%s/%s: %w", ch.Box, ch.ID, ErrNotPending)
	case rep.Code == wire.CodeChanged:
		return nil, fmt.Errorf("%s/%s: %w", ch.Box, ch.ID, ErrChanged)
	case rep.Error != "":
		return nil, errors.New("the hub refused it: " + safe(rep.Error))
	case rep.Decision == nil:
		return nil, errors.New("the hub's decision service answered nothing")
	}
	return rep.Decision, nil
}

func (c *Client) decision(ctx context.Context, key string) (*Decision, error) {
	e, err := c.Decisions.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	var d Decision
	if err := json.Unmarshal(e.Value(), &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// Outcome waits for what box did with its request id, until ctx ends,
// across the hub's restarts (the watch is made again when the client is
// back). Until its first watch is made, a failure that may pass once the
// hub is back (watchMayPass) is tried again for outcomeWatchBound after
// the first one, then returned; any other is returned at once.
func (c *Client) Outcome(ctx context.Context, box, id string) (*Outcome, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The watch's callbacks run on its goroutine, the bound's on a
	// timer's.
	var (
		mu      sync.Mutex
		o       *Outcome
		err     error
		watched bool        // a watch was made: one that fails later is tried again
		bound   *time.Timer // set at the first failure that may pass
		last    error       // the latest such failure
	)
	w := &kvWatch{kv: c.Results, keys: Key(box, id),
		entry: func(e jetstream.KeyValueEntry) {
			mu.Lock()
			defer mu.Unlock()
			if e == nil {
				watched = true
				return
			}
			if e.Operation() != jetstream.KeyValuePut || o != nil || err != nil {
				return
			}
			var v Outcome
			if err = json.Unmarshal(e.Value(), &v); err == nil {
				o = &v
			}
			cancel()
		},
		failed: func(e error) {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case watched || err != nil:
				return
			case !watchMayPass(c.NC, e):
				err = e
				cancel()
				return
			}
			last = e
			if bound != nil {
				return
			}
			d := outcomeWatchBound
			bound = time.AfterFunc(d, func() {
				mu.Lock()
				defer mu.Unlock()
				if !watched && err == nil && o == nil {
					err = fmt.Errorf("the hub has not answered for %s: %w", d, last)
					cancel()
				}
			})
			if outcomeRetryHook != nil {
				outcomeRetryHook(e)
			}
		}}
	w.run(ctx, c)
	mu.Lock()
	defer mu.Unlock()
	if bound != nil {
		bound.Stop()
	}
	switch {
	case o != nil:
		return o, nil
	case err != nil:
		return nil, err
	}
	return nil, ctx.Err()
}

// outcomeWatchBound is how long Outcome tries to make its first watch
// after the first try failed as one does while the hub is away. It lets
// a hub restart of some 20 s pass: the process starting again and its
// JetStream reading its streams back (seconds, on a loaded machine more),
// the client finding it back (reconnectWait, up to half a second), and
// the try under way when the hub went, which may wait openWait (5 s)
// before it fails. A hub that does not come back within it is not waited
// for: 'sluice hub approve' says it has no word from the box yet, rather
// than waiting for ever on a hub that was stopped for good. A variable:
// a test shortens it.
var outcomeWatchBound = 30 * time.Second

// outcomeRetryHook, when a test sets it, hears each failure Outcome
// tries again before its first watch was made, as it starts the bound.
var outcomeRetryHook func(error)

// watchMayPass reports whether e, why a watch could not be made, may
// pass once the hub is back: the try given up at a reconnection or after
// openWait (a context ended), a request unanswered or refused while the
// link was down, or nothing serving JetStream yet on a hub that is
// starting. What the hub answered otherwise (no right to read the
// bucket, no such bucket) stays so, and so does a closed client.
func watchMayPass(nc *nats.Conn, e error) bool {
	if nc.IsClosed() {
		return false
	}
	var api *nats.APIError
	switch {
	case errors.Is(e, context.Canceled), errors.Is(e, context.DeadlineExceeded), errors.Is(e, nats.ErrTimeout),
		errors.Is(e, nats.ErrConnectionClosed), errors.Is(e, nats.ErrDisconnected), errors.Is(e, nats.ErrConnectionReconnecting),
		errors.Is(e, nats.ErrReconnectBufExceeded),
		// No responders: the legacy JetStream API the watch is made
		// with names it JetStream not enabled.
		errors.Is(e, nats.ErrNoResponders), errors.Is(e, nats.ErrJetStreamNotEnabled):
		return true
	case errors.As(e, &api):
		return api.ErrorCode == nats.JSErrCodeJetStreamNotAvailable // "temporarily unavailable"
	}
	return false
}
