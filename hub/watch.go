package hub

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// kvWatch follows a bucket's keys for as long as a client lives, across
// the hub's restarts.
//
// A watch is an ordered consumer the hub holds for the client, in memory:
// a hub that restarted has none, and the client library finds that out
// only from missed heartbeats, 10 to 20 s later. Meanwhile the watch sees
// nothing (a fleet console showed an empty queue while 'sluice hub ls'
// listed the request). So the watch is made again as soon as the client
// has reconnected.
type kvWatch struct {
	kv   jetstream.KeyValue
	keys string // the keys to watch: a subject filter under the bucket
	// resume, once a listing was whole, makes each later watch go on from
	// the revision after the last entry passed on, instead of listing the
	// bucket again: nothing is passed twice, nothing missed (a bucket whose
	// entries are history: outcomes, decisions).
	resume bool
	// begin, if set, is called as a listing of the bucket begins: the
	// entries up to the next nil are what the bucket holds now.
	begin func()
	// entry is passed each entry in order, and nil at the end of each
	// listing (and of what a resumed watch found waiting).
	entry func(jetstream.KeyValueEntry)
	// failed, if set, hears why a watch could not be made (it is tried
	// again, less often while it keeps failing).
	failed func(error)
}

// run watches until ctx ends.
func (kw *kvWatch) run(ctx context.Context, cl *Client) {
	var last uint64 // the revision of the last entry passed on
	retry := retryFirst
	for ctx.Err() == nil {
		relinked := cl.Relinked()
		var from uint64
		resumed := kw.resume && last > 0
		if resumed {
			from = last + 1
		}
		w, stop, err := kw.open(ctx, relinked, from)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if kw.failed != nil {
				kw.failed(err)
			}
			select {
			case <-ctx.Done():
			case <-relinked:
			case <-time.After(retry):
			}
			retry = min(2*retry, retryMax)
			continue
		}
		retry = retryFirst
		if !resumed && kw.begin != nil {
			kw.begin()
		}
		for open := true; open; {
			select {
			case e, ok := <-w.Updates():
				switch {
				case !ok:
					open = false
				case e == nil:
					kw.entry(nil)
				default:
					last = max(last, e.Revision())
					kw.entry(e)
				}
			case <-relinked:
				open = false
			case <-ctx.Done():
				open = false
			}
		}
		_ = w.Stop()
		stop()
		// What the old watch still holds is dropped: the next one lists
		// it again, or resumes after the last entry passed on. Read to its
		// end, so that its delivery (blocked on a full channel) ends too.
		drainWatch(w)
	}
}

// Retries of a watch that cannot be made.
const (
	retryFirst = 250 * time.Millisecond
	retryMax   = 5 * time.Second
)

// open makes one watch, given up after openWait or at a reconnection:
// a request the lost hub took with it is never answered, and a watch
// made on it is stale anyway. stop ends what the watch holds.
// A watch from a revision (not 0) passes on every entry from it.
func (kw *kvWatch) open(ctx context.Context, relinked <-chan struct{}, from uint64) (jetstream.KeyWatcher, context.CancelFunc, error) {
	wctx, cancel := context.WithCancel(ctx)
	made, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		t := time.NewTimer(openWait)
		defer t.Stop()
		select {
		case <-relinked:
			cancel()
		case <-t.C:
			cancel()
		case <-made:
		}
	}()
	var w jetstream.KeyWatcher
	var err error
	switch own, ok := kw.kv.(*ownKV); {
	case ok:
		w, err = own.watchFrom(wctx, kw.keys, from)
	case from > 0:
		w, err = kw.kv.Watch(wctx, kw.keys, jetstream.IncludeHistory(), jetstream.ResumeFromRevision(from))
	default:
		w, err = kw.kv.Watch(wctx, kw.keys)
	}
	close(made)
	<-watched
	if err == nil && wctx.Err() != nil {
		// Made, but given up on while it was: its subscription ends
		// with wctx.
		_ = w.Stop()
		drainWatch(w)
		err = wctx.Err()
	}
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return w, cancel, nil
}

// openWait bounds the making of a watch: the client library's own wait
// for the hub's answer to a request.
const openWait = 5 * time.Second

// drainWatch reads a stopped watch's channel until it closes (bounded:
// a watch the library does not close is left).
func drainWatch(w jetstream.KeyWatcher) {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	for {
		select {
		case _, ok := <-w.Updates():
			if !ok {
				return
			}
		case <-t.C:
			return
		}
	}
}
