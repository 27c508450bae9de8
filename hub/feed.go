package hub

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluice-dev/sluice/hub/wire"
	"github.com/sluice-dev/sluice/queue"
)

// Feed streams the fleet to a console as JSON lines and takes its
// decisions, so that the console itself needs no NATS.
type Feed struct {
	Client *Client
	Out    io.Writer // one FeedEvent per line
	// As is who decides at this console (Choice.As): the hub records
	// the decisions by AS@CONSOLE.
	As string
	// History is how many outcomes already on the hub are sent at the
	// start, the newest (default 500).
	History int

	mu  sync.Mutex
	enc *json.Encoder
	bw  *bufio.Writer

	// The pending bucket's watch's (f.pending's) own:
	told   map[string]bool // keys passed on as pending, not since gone
	listed map[string]bool // keys put in the listing under way; nil: none is

	out *nats.Subscription // the runs' output
}

// emit writes ev as one line.
func (f *Feed) emit(ev FeedEvent) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.enc == nil {
		f.bw = bufio.NewWriterSize(f.Out, 64<<10)
		f.enc = json.NewEncoder(f.bw)
		// '<' is not six bytes: a line's size follows its value's.
		f.enc.SetEscapeHTML(false)
	}
	_ = f.enc.Encode(ev)
	_ = f.bw.Flush()
}

// Link says whether the hub is reachable, and the hub's address or why
// it is not. Safe from any goroutine (NATS's connection handlers).
func (f *Feed) Link(connected bool, text string) {
	f.emit(FeedEvent{Ev: FeedHub, Connected: connected, Text: text})
}

// Run feeds until ctx ends or in (the console's commands) closes.
func (f *Feed) Run(ctx context.Context, in io.Reader) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if f.History <= 0 {
		f.History = 500
	}
	f.Link(f.Client.NC.IsConnected(), f.Client.NC.ConnectedUrlRedacted())
	// Output first: a run a person approves now streams from its start.
	sub, err := f.Client.NC.Subscribe("sluice.out.>", f.output)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	_ = sub.SetPendingLimits(-1, 256<<20)
	f.out = sub
	// What the hub takes off its queue without a box withdrawing it.
	dropped, err := f.Client.NC.Subscribe(DroppedSubject, f.dropped)
	if err != nil {
		return err
	}
	defer dropped.Unsubscribe()
	// What waits is listed anew at each reconnection (a hub that
	// restarted holds no watch): what is missing from the new listing is
	// gone. Outcomes are history: their watch goes on after the last one
	// passed on.
	f.told = map[string]bool{}
	pending := &kvWatch{kv: f.Client.Pending, keys: ">", begin: func() { f.listed = map[string]bool{} }, entry: f.pending}
	outcomes := &kvWatch{kv: f.Client.Results, keys: ">", resume: true, entry: f.outcomes()}
	go pending.run(ctx, f.Client)
	go outcomes.run(ctx, f.Client)

	var wg sync.WaitGroup
	defer wg.Wait()
	r := bufio.NewReaderSize(in, 4096)
	for {
		line, err := wire.ReadLine(r, maxCommand)
		if errors.Is(err, wire.ErrLineTooLong) {
			f.emit(FeedEvent{Ev: FeedDecided, Error: fmt.Sprintf("a command over %d bytes ignored", maxCommand)})
			continue
		}
		if err != nil {
			break
		}
		var c FeedCommand
		if err := json.Unmarshal(line, &c); err != nil {
			f.emit(FeedEvent{Ev: FeedDecided, Error: "not a command: " + err.Error()})
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.emit(f.decide(ctx, c))
		}()
	}
	cancel()
	return nil
}

// maxCommand bounds a command line (a decision with its reason).
const maxCommand = 64 << 10

// decide records one command's decision.
func (f *Feed) decide(ctx context.Context, c FeedCommand) FeedEvent {
	ev := FeedEvent{Ev: FeedDecided, Seq: c.Seq, Box: c.Box, ID: c.ID}
	switch {
	case c.Op != Approve && c.Op != Deny:
		ev.Error = "op " + safe(c.Op) + ": approve or deny"
	case !ValidName(c.Box) || !queue.ValidID(c.ID):
		ev.Error = "not a request on the hub: " + safe(c.Box) + "/" + safe(c.ID)
	case c.Op == Approve && (!validDigest(c.Digest) || !validDigest(c.DiffDigest)):
		// Only what was shown is approved: the whole digest of the
		// request, and of its diff, go along.
		ev.Error = "an approval needs the digests of the request and of its diff as shown"
	}
	if ev.Error != "" {
		return ev
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	d, err := f.Client.Decide(cctx, Choice{Box: c.Box, ID: c.ID, Decision: c.Op, As: f.As, Reason: c.Reason,
		Digest: c.Digest, DiffDigest: c.DiffDigest, Scope: c.Scope})
	switch {
	case err != nil:
		ev.Error = err.Error()
	case c.Scope == wire.ScopeRun && d.Scope != wire.ScopeRun:
		// A hub of an earlier version recorded the allow without its
		// scope: the box allows it once. The decision stands.
		ev.Text = "the hub recorded it as allowed once (its service is of an earlier version)"
	}
	return ev
}

// pending passes on the pending bucket's changes; at the end of a
// listing, what was passed on as pending and is no longer listed is gone
// (it left while the hub could not be reached), and the feed is ready.
func (f *Feed) pending(e jetstream.KeyValueEntry) {
	if e == nil {
		for key := range f.told {
			if !f.listed[key] {
				box, id, _ := SplitKey(key)
				delete(f.told, key)
				f.emit(FeedEvent{Ev: FeedGone, Box: box, ID: id})
			}
		}
		f.listed = nil
		f.emit(FeedEvent{Ev: FeedReady})
		return
	}
	box, id, ok := SplitKey(e.Key())
	if !ok {
		return
	}
	if e.Operation() != jetstream.KeyValuePut {
		delete(f.told, e.Key())
		f.emit(FeedEvent{Ev: FeedGone, Box: box, ID: id})
		return
	}
	var p Pending
	if json.Unmarshal(e.Value(), &p) != nil || p.Box != box || p.ID != id || !validDigest(p.Digest) {
		return // what a box wrote under its key must be about that key
	}
	if len(p.Request) > queue.MaxRequestSize || len(p.Diff)+len(p.DiffErr) > maxDiff+4096 {
		return // no box publishes that much (a request file's limit, the diff's)
	}
	f.told[e.Key()] = true
	if f.listed != nil {
		f.listed[e.Key()] = true
	}
	f.emit(FeedEvent{Ev: FeedPending, Box: box, ID: id, Pending: &p})
}

// outcomes passes on the results bucket's changes: of those there at the
// start, the newest History, oldest first.
func (f *Feed) outcomes() func(jetstream.KeyValueEntry) {
	var start []FeedEvent
	started := false
	return func(e jetstream.KeyValueEntry) {
		if e == nil {
			if !started {
				started = true
				slices.SortStableFunc(start, func(a, b FeedEvent) int { return a.Outcome.At.Compare(b.Outcome.At) })
				for _, ev := range start[max(0, len(start)-f.History):] {
					f.emit(ev)
				}
				start = nil
			}
			return
		}
		box, id, ok := SplitKey(e.Key())
		if !ok || e.Operation() != jetstream.KeyValuePut {
			return
		}
		var o Outcome
		if json.Unmarshal(e.Value(), &o) != nil {
			return
		}
		if len(o.Request) > queue.MaxRequestSize || len(o.Reason) > 64<<10 {
			return
		}
		ev := FeedEvent{Ev: FeedOutcome, Box: box, ID: id, Outcome: &o}
		if !started {
			start = append(start, ev)
			return
		}
		f.settle()
		f.emit(ev)
	}
}

// dropped passes on what the hub's service took off the pending bucket.
func (f *Feed) dropped(m *nats.Msg) {
	var d wire.Dropped
	if len(m.Data) > 64<<10 || json.Unmarshal(m.Data, &d) != nil || !ValidName(d.Box) || !queue.ValidID(d.ID) {
		return
	}
	f.emit(FeedEvent{Ev: FeedDropped, Box: d.Box, ID: d.ID, Text: safe(d.Reason)})
}

// output passes on what a box's run writes.
func (f *Feed) output(m *nats.Msg) {
	// A box publishes plain messages; one with a reply subject or
	// headers was delivered by a JetStream consumer someone pointed
	// here, not written by the box.
	if m.Reply != "" || len(m.Header) > 0 {
		return
	}
	box, id, off, ok := outputKey(m.Subject)
	if !ok {
		return
	}
	// In pieces: a line stays small whatever a box publishes at once.
	for data := m.Data; len(data) > 0; {
		n := min(len(data), outputPiece)
		ev := FeedEvent{Ev: FeedOutput, Box: box, ID: id, Data: data[:n]}
		if off != nil {
			at := *off
			ev.Offset = &at
			*off += int64(n)
		}
		f.emit(ev)
		data = data[n:]
	}
}

// settle waits (up to 2 s) until the output subscription has passed on
// every message it holds. A box publishes a run's output before its
// outcome, so by the time the outcome arrives the output is in the
// subscription's queue; passed on after the outcome, the console would
// take it as lost.
func (f *Feed) settle() {
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		// The count drops once the callback has returned.
		if n, _, err := f.out.Pending(); err != nil || n == 0 {
			return
		}
	}
}

// outputPiece is the most output one line carries.
const outputPiece = 32 << 10
