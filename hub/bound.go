package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluice-dev/sluice/hub/wire"
)

// heldSet is what the pending bucket holds, as the service follows it.
type heldSet struct {
	mu      sync.Mutex
	keys    map[string]*heldKey
	listing bool // a listing is under way: keys is not whole yet
}

// heldKey is one request on the pending bucket.
type heldKey struct {
	box   string
	first uint64    // the revision it was first seen with: the order of arrival
	rev   uint64    // its last
	at    time.Time // when its box last published it (the hub's clock)
}

// bound keeps the pending bucket within s.Limits until ctx ends.
func (s *Service) bound(ctx context.Context) {
	s.check = make(chan struct{}, 1)
	w := &kvWatch{kv: s.cl.Pending, keys: ">",
		begin: func() {
			s.held.mu.Lock()
			s.held.keys, s.held.listing = map[string]*heldKey{}, true
			s.held.mu.Unlock()
		},
		entry: s.pendingEntry,
		failed: func(err error) {
			s.logf("the pending bucket cannot be watched (retrying): %v", err)
		}}
	go w.run(ctx, s.cl)
	// Often enough that a request is dropped within an eighth of its age
	// limit (and at most half a minute) after it passed it.
	every := min(max(s.Limits.MaxAge/8, 100*time.Millisecond), 30*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.check:
		}
		s.prune(ctx)
	}
}

// pendingEntry follows one change of the pending bucket.
func (s *Service) pendingEntry(e jetstream.KeyValueEntry) {
	s.held.mu.Lock()
	defer s.held.mu.Unlock()
	if e == nil {
		s.held.listing = false
		s.poke()
		return
	}
	box, _, ok := SplitKey(e.Key())
	if !ok {
		return
	}
	if e.Operation() != jetstream.KeyValuePut {
		delete(s.held.keys, e.Key())
		return
	}
	k := s.held.keys[e.Key()]
	if k == nil {
		k = &heldKey{box: box, first: e.Revision()}
		s.held.keys[e.Key()] = k
	}
	k.rev, k.at = e.Revision(), e.Created()
	if !s.held.listing {
		s.poke()
	}
}

// poke asks the loop to prune now.
func (s *Service) poke() {
	select {
	case s.check <- struct{}{}:
	default:
	}
}

// drop is a request to take off the pending bucket, and why.
type drop struct {
	key    string
	rev    uint64
	reason string
}

// prune takes off what waited too long, and each box's latest requests
// beyond its cap.
func (s *Service) prune(ctx context.Context) {
	s.held.mu.Lock()
	if s.held.listing || s.held.keys == nil {
		s.held.mu.Unlock()
		return
	}
	var drops []drop
	cutoff := time.Now().Add(-s.Limits.MaxAge)
	byBox := map[string][]string{}
	for key, k := range s.held.keys {
		if k.at.Before(cutoff) {
			drops = append(drops, drop{key, k.rev, fmt.Sprintf("it waited on the hub longer than %s; decide it on the box", s.Limits.MaxAge)})
			continue
		}
		byBox[k.box] = append(byBox[k.box], key)
	}
	for box, keys := range byBox {
		if len(keys) <= s.Limits.PerBox {
			continue
		}
		slices.SortFunc(keys, func(a, b string) int {
			return cmpUint(s.held.keys[a].first, s.held.keys[b].first)
		})
		for _, key := range keys[s.Limits.PerBox:] {
			drops = append(drops, drop{key, s.held.keys[key].rev,
				fmt.Sprintf("%s has more than %d requests waiting on the hub; decide it on the box", box, s.Limits.PerBox)})
		}
	}
	s.held.mu.Unlock()
	for _, d := range drops {
		s.dropOne(ctx, d)
	}
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// dropOne takes one request off, unless its box published it again
// meanwhile (then it is judged again), and says so.
func (s *Service) dropOne(ctx context.Context, d drop) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.cl.Pending.Delete(cctx, d.key, jetstream.LastRevision(d.rev)); err != nil {
		return // published again, or the hub is away: the next prune sees
	}
	s.held.mu.Lock()
	if k := s.held.keys[d.key]; k != nil && k.rev == d.rev {
		delete(s.held.keys, d.key)
	}
	s.held.mu.Unlock()
	box, id, _ := SplitKey(d.key)
	s.logf("%s/%s taken off the hub: %s", box, id, d.reason)
	data, _ := json.Marshal(wire.Dropped{Box: box, ID: id, Reason: d.reason, At: time.Now().UTC()})
	_ = s.NC.Publish(DroppedSubject, data)
}
