package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

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

// Decide records decision (approve or deny) for box's request id as by.
// shown, when not empty, is the digest (or a prefix of at least 8 hex
// digits) of the request as the person saw it, and shownDiff the
// wire.DiffDigest of the diff shown with it: a request (or published
// diff) that is not that one any more is refused (ErrChanged). Without
// shownDiff the decision carries the diff the hub holds now. The first
// decision for a request wins: a later one gets *ErrDecided naming it.
func (c *Client) Decide(ctx context.Context, box, id, decision, by, reason, shown, shownDiff string) (*Pending, error) {
	if decision != Approve && decision != Deny {
		return nil, fmt.Errorf("decision %q: approve or deny", decision)
	}
	if shown != "" && len(shown) < 8 {
		return nil, fmt.Errorf("digest %q: give at least 8 hex digits", shown)
	}
	key := Key(box, id)
	p, err := c.Request(ctx, box, id)
	if err != nil {
		return nil, err
	}
	held := wire.DiffDigest(p.Diff, p.DiffErr)
	if (shown != "" && !strings.HasPrefix(p.Digest, shown)) || (shownDiff != "" && shownDiff != held) {
		return nil, fmt.Errorf("%s/%s: %w", box, id, ErrChanged)
	}
	d := Decision{Decision: decision, By: by, Reason: reason, Digest: p.Digest, DiffDigest: held, At: time.Now().UTC()}
	data, _ := json.Marshal(d)
	if _, err := c.Decisions.Create(ctx, key, data); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			if prev, perr := c.decision(ctx, key); perr == nil {
				return nil, &ErrDecided{Decision: *prev}
			}
		}
		return nil, err
	}
	return p, nil
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
// back).
func (c *Client) Outcome(ctx context.Context, box, id string) (*Outcome, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var o *Outcome
	var err error
	watched := false // a watch was made: one that fails later is tried again
	w := &kvWatch{kv: c.Results, keys: Key(box, id),
		entry: func(e jetstream.KeyValueEntry) {
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
			if !watched && err == nil {
				err = e
				cancel()
			}
		}}
	w.run(ctx, c)
	switch {
	case o != nil:
		return o, nil
	case err != nil:
		return nil, err
	}
	return nil, ctx.Err()
}
