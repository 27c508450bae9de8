package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sluice-dev/sluice/hub"
	"github.com/sluice-dev/sluice/hub/wire"
	"github.com/sluice-dev/sluice/queue"
)

// Hub is the Source of a fleet: what waits on every box, as the hub
// holds it (followed through a hub.Feed, listed anew at each reconnection),
// decided through the hub's decision service with a console credential.
// The hub records a decision by "AS@CONSOLE": AS names the person and the
// device (asName), CONSOLE is the credential's, whatever the page says.
//
// An item's ID is the hub's key, BOX.ID: unique across boxes.
type Hub struct {
	cl   *hub.Client
	logf func(format string, args ...any)
	max  int // History's length

	mu       sync.Mutex
	pending  map[string]*Item // key → what waits on the hub
	running  map[string]*Item // key → approved here, no outcome yet
	winners  map[string][2]string
	results  map[string]*queue.Result
	past     map[string]*Past
	order    []string // keys of past, oldest first
	runs     map[string]*hubRun
	runOrder []string
	up       bool // the link to the hub
	listings int  // complete listings of the hub's queue so far
	changed  chan struct{}
}

var _ Source = (*Hub)(nil)

// hubRun is a run's output as it streamed through the hub.
type hubRun struct {
	track wire.OutputTrack
	data  []byte
	ended bool
}

// Bounds of what a Hub keeps of runs' output.
const (
	hubRunMax  = 4 << 20 // a run's output kept (the box's out/ID.log has all)
	hubRunsMax = 64      // runs kept
)

// HubOptions configure ConnectHub.
type HubOptions struct {
	// Logf reports what goes wrong in the background; default: nothing.
	Logf func(format string, args ...any)
	// History is how many past requests History keeps (default 200).
	History int
}

// ConnectHub connects to the hub at url (the credentials' when "") with a
// console's credentials. Run follows the fleet; Close disconnects.
func ConnectHub(ctx context.Context, url string, creds *hub.Creds, opt HubOptions) (*Hub, error) {
	if creds.Role != hub.RoleConsole {
		return nil, fmt.Errorf("the credentials of %q are a %s's: the web approver decides as a console ('sluice hub add-console NAME')", creds.Name, creds.Role)
	}
	if opt.Logf == nil {
		opt.Logf = func(string, ...any) {}
	}
	if opt.History <= 0 {
		opt.History = 200
	}
	h := &Hub{logf: opt.Logf, max: opt.History, pending: map[string]*Item{}, running: map[string]*Item{},
		winners: map[string][2]string{}, results: map[string]*queue.Result{}, past: map[string]*Past{},
		runs: map[string]*hubRun{}, changed: make(chan struct{})}
	cl, err := hub.Connect(ctx, url, creds,
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			why := "lost"
			if err != nil {
				why = err.Error()
			}
			h.link(false, why)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { h.link(true, nc.ConnectedUrlRedacted()) }),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { h.logf("hub: %v", err) }))
	if err != nil {
		return nil, err
	}
	h.cl = cl
	h.up = true
	return h, nil
}

// Close disconnects from the hub.
func (h *Hub) Close() { h.cl.Close() }

// Connected says whether the hub is reachable now, and how many times its
// whole queue has been listed (once at the start, again after each
// reconnection): a listing after a reconnection is what brings the queue
// up to date.
func (h *Hub) Connected() (up bool, listings int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.up, h.listings
}

func (h *Hub) link(up bool, text string) {
	h.mu.Lock()
	h.up = up
	h.notifyLocked()
	h.mu.Unlock()
	if up {
		h.logf("hub: connected to %s", text)
	} else {
		h.logf("hub: disconnected (%s); the page shows the queue as it was until the hub is back", text)
	}
}

// Run follows the fleet until ctx ends.
func (h *Hub) Run(ctx context.Context) error {
	f := &hub.Feed{Client: h.cl, Out: &feedLines{h: h}, As: "web"}
	return f.Run(ctx, ctxReader{ctx})
}

// ctxReader reads nothing until ctx ends, then EOF: the feed takes no
// commands (decisions go through Client.Decide, each in its device's
// name).
type ctxReader struct{ ctx context.Context }

func (r ctxReader) Read([]byte) (int, error) {
	<-r.ctx.Done()
	return 0, io.EOF
}

// feedLines splits what the feed writes into its lines, one event each.
type feedLines struct {
	h   *Hub
	buf []byte
}

// maxFeedLine bounds a line: a request and its diff, as JSON.
const maxFeedLine = 8 << 20

func (w *feedLines) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := slices.Index(p, '\n')
		if i < 0 {
			if len(w.buf)+len(p) > maxFeedLine {
				w.buf = w.buf[:0] // a line too long for anything the feed sends
				w.h.logf("hub: a feed line over %d bytes ignored", maxFeedLine)
				return n, nil
			}
			w.buf = append(w.buf, p...)
			return n, nil
		}
		line := p[:i]
		if len(w.buf) > 0 {
			line = append(w.buf, line...)
		}
		var ev wire.FeedEvent
		if err := json.Unmarshal(line, &ev); err == nil {
			w.h.event(&ev)
		}
		w.buf = w.buf[:0]
		p = p[i+1:]
	}
	return n, nil
}

// event takes one of the feed's events in.
func (h *Hub) event(ev *wire.FeedEvent) {
	key := hub.Key(ev.Box, ev.ID)
	if ev.Ev != wire.FeedReady && ev.Ev != wire.FeedHub {
		if _, _, ok := hub.SplitKey(key); !ok {
			return
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch ev.Ev {
	case wire.FeedHub:
		h.up = ev.Connected
	case wire.FeedReady:
		h.listings++
	case wire.FeedPending:
		if ev.Pending == nil {
			return
		}
		h.pending[key] = pendingItem(key, ev.Pending)
	case wire.FeedGone, wire.FeedDropped:
		it := h.pending[key]
		delete(h.pending, key)
		if ev.Ev == wire.FeedDropped {
			h.logf("hub: %s taken off the hub's queue (%s); it waits on box %s", key, ev.Text, ev.Box)
		}
		if w, ok := h.winners[key]; ok && w[0] == string(queue.EventApproved) && it != nil && h.results[key] == nil {
			run := *it
			run.State = queue.StateRunning
			h.running[key] = &run
		}
	case wire.FeedOutput:
		r := h.runLocked(key)
		if r.ended {
			return
		}
		if data := r.track.Piece(ev.Offset, ev.Data); len(data) > 0 {
			r.add(data)
		}
	case wire.FeedOutcome:
		if ev.Outcome == nil {
			return
		}
		h.outcomeLocked(key, ev.Box, ev.ID, ev.Outcome)
	default:
		return
	}
	h.notifyLocked()
}

func (r *hubRun) add(data []byte) {
	room := hubRunMax - len(r.data)
	if room <= 0 {
		return
	}
	if len(data) > room {
		data = append(data[:room:room], "\n⟨the rest is in the box's out/ log⟩\n"...)
	}
	r.data = append(r.data, data...)
}

// runLocked is key's run, made (and the oldest dropped past the bound)
// when it has none.
func (h *Hub) runLocked(key string) *hubRun {
	if r := h.runs[key]; r != nil {
		return r
	}
	r := &hubRun{}
	h.runs[key] = r
	h.runOrder = append(h.runOrder, key)
	if len(h.runOrder) > hubRunsMax {
		delete(h.runs, h.runOrder[0])
		h.runOrder = h.runOrder[1:]
	}
	return r
}

// pendingItem is what the hub holds of a request, as an Item: the request
// as its box read it, its verdict, digest and diff.
func pendingItem(key string, p *hub.Pending) *Item {
	it := &Item{ID: key, Box: p.Box, State: queue.StatePending, Since: p.QueuedAt, Digest: p.Digest,
		Diff: p.Diff, DiffErr: p.DiffErr}
	req, err := queue.DecodeRequest(p.Request, p.ID)
	if err != nil {
		it.Err = "the box published a request that does not read: " + err.Error()
		it.Digest = ""
		return it
	}
	it.Request = req
	if !req.CreatedAt.IsZero() {
		it.Since = req.CreatedAt
	}
	if p.Verdict != nil {
		v := *p.Verdict
		switch v.Action {
		case queue.ActionAllow, queue.ActionAllowWithCheckpoint, queue.ActionAsk, queue.ActionDeny:
		default:
			v.Action = queue.ActionAsk
		}
		it.Verdict = &v
	}
	return it
}

// outcomeLocked takes what box did with request id into History.
func (h *Hub) outcomeLocked(key, box, id string, o *hub.Outcome) {
	res := &queue.Result{Version: queue.Version, ID: id, Status: o.Status, ExitCode: o.ExitCode, Reason: o.Reason,
		DurationMS: o.DurationMS}
	switch d := queue.Decider(o.DecidedBy); d {
	case queue.ByPolicy, queue.ByHuman:
		res.DecidedBy = d
	}
	if res.Status == "" {
		res.Status = "not run"
	}
	h.results[key] = res
	delete(h.running, key)
	if r := h.runs[key]; r != nil || (o.Applied && o.OutputBytes > 0) {
		r = h.runLocked(key)
		if !r.ended {
			if data := r.track.End(o.OutputBytes); len(data) > 0 {
				r.add(data)
			}
			r.ended = true
		}
	}
	p := &Past{ID: key, Box: box, Reason: o.Reason, Status: res.Status, ExitCode: o.ExitCode, At: o.At}
	if req, err := queue.DecodeRequest(o.Request, id); err == nil {
		p.Kind, p.What, p.Agent = req.Kind, req.Summary(), req.Agent
	} else if it := h.pending[key]; it != nil && it.Request != nil {
		p.Kind, p.What, p.Agent = it.Request.Kind, it.Request.Summary(), it.Request.Agent
	} else {
		p.What = "(a request this page did not see)"
	}
	switch {
	case o.Decision == hub.Approve:
		p.Decision, p.By = queue.EventApproved, o.By
	case o.Decision == hub.Deny:
		p.Decision, p.By = queue.EventDenied, o.By
	case res.DecidedBy == queue.ByPolicy && o.Status == queue.StatusDenied:
		p.Decision, p.By = queue.EventAutoDenied, string(queue.ByPolicy)
	case res.DecidedBy == queue.ByPolicy:
		p.Decision, p.By = queue.EventAutoAllowed, string(queue.ByPolicy)
	default:
		p.Decision = queue.EventFinished
	}
	if o.By != "" {
		h.winners[key] = [2]string{string(p.Decision), o.By}
	}
	if _, ok := h.past[key]; !ok {
		h.order = append(h.order, key)
	}
	h.past[key] = p
	for len(h.order) > h.max {
		delete(h.past, h.order[0])
		delete(h.results, h.order[0])
		delete(h.winners, h.order[0])
		h.order = h.order[1:]
	}
}

func (h *Hub) notifyLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// Changed implements Source.
func (h *Hub) Changed() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.changed
}

// Queue implements Source: what waits on every box, then what runs after
// an approval from here, oldest first.
func (h *Hub) Queue() []Item {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Item, 0, len(h.pending)+len(h.running))
	for _, m := range []map[string]*Item{h.pending, h.running} {
		for _, it := range m {
			c := *it
			c.Diff, c.DiffErr = "", ""
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b Item) int {
		if c := a.Since.Compare(b.Since); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// Item implements Source: the request as the hub last sent it.
func (h *Hub) Item(id string) (*Item, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	it := h.pending[id]
	if it == nil {
		it = h.running[id]
	}
	if it == nil || it.Request == nil {
		return nil, ErrGone
	}
	c := *it
	return &c, nil
}

// History implements Source.
func (h *Hub) History() []Past {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Past, 0, len(h.order))
	for i := len(h.order) - 1; i >= 0; i-- {
		out = append(out, *h.past[h.order[i]])
	}
	return out
}

// Output implements Source: what streamed through the hub of the run.
// The box's own out/ID.log holds all of it; what went while the hub was
// down is marked as lost here.
func (h *Hub) Output(id string, offset int64, max int) ([]byte, int64, bool, error) {
	if _, _, ok := hub.SplitKey(id); !ok {
		return nil, offset, true, ErrGone
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.runs[id]
	if r == nil {
		_, ended := h.results[id]
		return nil, offset, ended, nil
	}
	if offset > int64(len(r.data)) {
		offset = int64(len(r.data))
	}
	end := min(offset+int64(max), int64(len(r.data)))
	data := slices.Clone(r.data[offset:end])
	return data, end, r.ended && end == int64(len(r.data)), nil
}

// Winner implements Source: from the decisions seen here, else the hub's
// decisions bucket.
func (h *Hub) Winner(id string) (string, string, bool) {
	h.mu.Lock()
	w, ok := h.winners[id]
	h.mu.Unlock()
	if ok {
		return w[0], w[1], true
	}
	if _, _, ok := hub.SplitKey(id); !ok || !h.cl.NC.IsConnected() {
		return "", "", false
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	e, err := h.cl.Decisions.Get(ctx, id)
	if err != nil {
		return "", "", false
	}
	var d hub.Decision
	if json.Unmarshal(e.Value(), &d) != nil || d.By == "" {
		return "", "", false
	}
	ev := decisionEvent(d.Decision)
	h.mu.Lock()
	h.winners[id] = [2]string{ev, d.By}
	h.mu.Unlock()
	return ev, d.By, true
}

func decisionEvent(d string) string {
	if d == hub.Approve {
		return string(queue.EventApproved)
	}
	return string(queue.EventDenied)
}

// Result implements Source.
func (h *Hub) Result(id string) (*queue.Result, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r := h.results[id]; r != nil {
		c := *r
		return &c, nil
	}
	return nil, queue.ErrNoResult
}

// Approve implements Source: the hub records the approval (first wins)
// if the request and its diff are still the ones shown; the box runs it.
// A connect request's allow for the rest of its run travels as the
// decision's scope (a hub of an earlier version drops it: the box then
// allows once, never more).
func (h *Hub) Approve(ctx context.Context, id, digest, diffDigest, by string, scope queue.Scope) error {
	return h.decide(ctx, hub.Choice{ID: id, Decision: hub.Approve, As: asName(by), Digest: digest, DiffDigest: diffDigest,
		Scope: wire.ScopeOf(scope)})
}

// Deny implements Source.
func (h *Hub) Deny(ctx context.Context, id, by, reason string) error {
	return h.decide(ctx, hub.Choice{ID: id, Decision: hub.Deny, As: asName(by), Reason: reason})
}

func (h *Hub) decide(ctx context.Context, ch hub.Choice) error {
	key := ch.ID
	box, id, ok := hub.SplitKey(key)
	if !ok {
		return ErrGone
	}
	ch.Box, ch.ID = box, id
	if !h.cl.NC.IsConnected() {
		// A request would wait for the hub to be back: the person is
		// told now, and the request still waits on its box.
		return errors.New("the hub cannot be reached now; the request still waits on its box: try again once the hub is back")
	}
	d, err := h.cl.Decide(ctx, ch)
	var lost *hub.ErrDecided
	switch {
	case errors.As(err, &lost):
		h.won(key, lost.Decision)
		return err
	case errors.Is(err, hub.ErrChanged):
		return errors.New("the request changed after it was shown; look at it again")
	case errors.Is(err, hub.ErrNotPending):
		return fmt.Errorf("%w (the hub holds it no more)", ErrGone)
	case err != nil:
		return err
	}
	h.won(key, *d)
	return nil
}

// won records who decided key; an approval's request shows as running
// until its outcome comes.
func (h *Hub) won(key string, d hub.Decision) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ev := decisionEvent(d.Decision)
	h.winners[key] = [2]string{ev, d.By}
	if ev == string(queue.EventApproved) && h.results[key] == nil {
		if it := h.pending[key]; it != nil {
			run := *it
			run.State = queue.StateRunning
			h.running[key] = &run
			delete(h.pending, key)
		}
	}
	h.notifyLocked()
}

// asName is the name a decision from the page is made in at the hub
// (Choice.As, which holds no '@': the hub adds "@CONSOLE"):
// "alice@phone (via web)" is "alice/phone (via web)".
func asName(by string) string {
	return wire.AsName(strings.Replace(by, "@", "/", 1))
}

// validRef reports whether id names a request of some Source: a spool's
// id, or a hub's BOX.ID.
func validRef(id string) bool {
	if queue.ValidID(id) {
		return true
	}
	_, _, ok := hub.SplitKey(id)
	return ok
}
