package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/change"
	"github.com/sluice-dev/sluice/hub/wire"
	"github.com/sluice-dev/sluice/queue"
)

// Applier carries out a decision on the box, through the box's own
// sluice, so that the claim, the confinement and the audit line are the
// box's.
type Applier interface {
	// Approve approves request id if its file has digest, as actor,
	// writing the run's output to out.
	Approve(ctx context.Context, id, digest, actor string, out io.Writer) error
	// Deny denies request id as actor with reason.
	Deny(ctx context.Context, id, actor, reason string) error
}

// ScopedApplier is an Applier that can allow a connect request for the
// rest of its run (ExecApplier is one). An Applier that is not one
// carries such a decision out as an allow once: narrower than asked,
// never wider.
type ScopedApplier interface {
	// ApproveScoped is Approve with the allow's reach (queue.ScopeRun
	// for the rest of the run).
	ApproveScoped(ctx context.Context, id, digest, actor string, scope queue.Scope, out io.Writer) error
}

// Box bridges one box's spool to the hub.
type Box struct {
	Name      string
	Spool     *queue.Spool
	AuditPath string
	Client    *Client
	Apply     Applier
	Logf      func(string, ...any)
	// Roots is the directories a file request in cwd may change (policy's
	// decision; sluice-hub passes policy.Roots): its diff is made within
	// them. nil limits no path here (the box's sluice still does).
	Roots func(cwd string) []string
	// Every is how often the box compares its spool with what it
	// published; 500 ms if zero.
	Every time.Duration
	// Wait bounds one request to the hub (a publish, a get); 5 s if
	// zero.
	Wait time.Duration

	syncMu    sync.Mutex // one sync at a time: its listing and its changes go together
	mu        sync.Mutex
	asks      map[string]*queue.Event // queued asks not yet left, by id
	published map[string]string       // id -> digest published
	sent      map[string]bool         // ids put on the hub without an answer yet: withdrawn when they leave
	pubs      map[string]*Pending     // id -> what was published
	late      chan struct{}           // bounds the late outcomes looked for at once
	applying  map[string]bool
	done      map[string]bool                    // decisions applied (or found moot) this run
	deferred  map[string]jetstream.KeyValueEntry // decisions that came before this run published their request
}

func (b *Box) wait() time.Duration {
	if b.Wait <= 0 {
		return 5 * time.Second
	}
	return b.Wait
}

func (b *Box) logf(format string, args ...any) {
	if b.Logf != nil {
		b.Logf(format, args...)
	}
}

// Run bridges until ctx ends. A hub that cannot be reached is retried: the
// box keeps serving locally meanwhile, and what waits is published once
// the hub is back.
func (b *Box) Run(ctx context.Context) error {
	if b.Every <= 0 {
		b.Every = 500 * time.Millisecond
	}
	b.reset()
	off, err := b.readAsks()
	if err != nil {
		return err
	}
	events := make(chan *queue.Event, 256)
	go func() {
		fw := audit.Follower{Path: b.AuditPath, Offset: off, Every: 100 * time.Millisecond}
		err := fw.Run(ctx, func(l audit.Line) error {
			if l.Event != nil && l.Event.ID != "" {
				select {
				case events <- l.Event:
				case <-ctx.Done():
				}
			}
			return nil
		})
		if err != nil {
			b.logf("the audit log cannot be followed: %v", err)
		}
	}()
	decisions := make(chan jetstream.KeyValueEntry, 64)
	go b.watchDecisions(ctx, decisions)
	tick := time.NewTicker(b.Every)
	defer tick.Stop()
	b.sync(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-events:
			b.note(ev)
			b.sync(ctx)
		case e := <-decisions:
			b.decided(ctx, e)
		case <-tick.C:
			b.sync(ctx)
		}
	}
}

// reset forgets what a previous Run knew.
func (b *Box) reset() {
	b.asks, b.published, b.applying, b.done = map[string]*queue.Event{}, map[string]string{}, map[string]bool{}, map[string]bool{}
	b.pubs, b.sent = map[string]*Pending{}, map[string]bool{}
	b.late = make(chan struct{}, 4) // late outcomes looked for at once
	b.deferred = map[string]jetstream.KeyValueEntry{}
}

// readAsks reads the asks still open from the audit log's last lines and
// returns where the log ends.
func (b *Box) readAsks() (int64, error) {
	f, err := os.Open(b.AuditPath)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("hub box: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	// A day of a busy box: far more than stays pending.
	lines, end, err := audit.Last(f, fi.Size(), 50000, audit.Filter{})
	if err != nil {
		return 0, fmt.Errorf("hub box: %w", err)
	}
	for _, l := range lines {
		if l.Event != nil && l.Event.ID != "" {
			b.note(l.Event)
		}
	}
	return end, nil
}

// note follows one audit event: a queued ask opens, anything after it
// closes.
func (b *Box) note(ev *queue.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ev.Event == queue.EventQueued {
		if ev.Verdict != nil && ev.Verdict.Action == queue.ActionAsk {
			b.asks[ev.ID] = ev
		}
		return
	}
	delete(b.asks, ev.ID)
}

// sync publishes the asks waiting in the spool that the hub does not have
// yet, and withdraws those that left (with what became of them).
func (b *Box) sync(ctx context.Context) {
	// Two at once (the loop's, and one after a decision was applied)
	// would let one withdraw what the other has just published from a
	// listing made before it arrived.
	b.syncMu.Lock()
	defer b.syncMu.Unlock()
	list, err := b.Spool.List()
	if err != nil {
		b.logf("the spool cannot be listed: %v", err)
		return
	}
	waiting := map[string]*queue.Request{}
	for _, e := range list {
		if e.State == queue.StatePending && e.Request != nil {
			waiting[e.ID] = e.Request
		}
	}
	b.mu.Lock()
	var publish []*Pending
	var reqs []*queue.Request
	var left []string
	for id, ev := range b.asks {
		req, ok := waiting[id]
		if !ok || b.published[id] == req.Digest() {
			continue
		}
		if b.published[id] != "" {
			// Its file changed since it was published (with the verdict
			// on the old one): withdrawn, and published again only once
			// the engine has judged it again and queued it anew.
			delete(b.asks, id)
			left = append(left, id)
			continue
		}
		raw, err := json.Marshal(req)
		if err != nil {
			continue
		}
		publish = append(publish, &Pending{Box: b.Name, ID: id, Request: raw, Verdict: ev.Verdict, Digest: req.Digest(), QueuedAt: ev.TS})
		reqs = append(reqs, req)
	}
	for id := range b.published {
		if _, ok := waiting[id]; !ok {
			left = append(left, id)
		} else if _, ok := b.asks[id]; !ok {
			left = append(left, id)
		}
	}
	for id := range b.sent {
		_, waits := waiting[id]
		_, ask := b.asks[id]
		if _, pub := b.published[id]; !pub && (!waits || !ask) {
			left = append(left, id)
		}
	}
	b.mu.Unlock()

	for i, p := range publish {
		cctx, cancel := context.WithTimeout(ctx, b.wait())
		_, err := b.Client.Results.Get(cctx, Key(b.Name, p.ID))
		cancel()
		if err == nil {
			// It has an outcome: a decision was spent on it (an approval
			// refused because its file changed). It is decided here now.
			b.mu.Lock()
			delete(b.asks, p.ID)
			b.mu.Unlock()
			continue
		}
		p.Diff, p.DiffErr = b.fileDiff(reqs[i])
		data, _ := json.Marshal(p)
		b.mu.Lock()
		// A put whose answer does not come in time may still land (the
		// hub was slow, or gets it once it is back): until one is
		// answered, the request is withdrawn from the hub when it leaves,
		// as a published one is (else it waited there for ever).
		b.sent[p.ID] = true
		b.mu.Unlock()
		cctx, cancel = context.WithTimeout(ctx, b.wait())
		_, err = b.Client.Pending.Put(cctx, Key(b.Name, p.ID), data)
		cancel()
		if err != nil {
			b.logf("%s not published to the hub (retried): %v", p.ID, err)
			return
		}
		b.mu.Lock()
		delete(b.sent, p.ID)
		b.published[p.ID] = p.Digest
		b.pubs[p.ID] = p
		e, waited := b.deferred[p.ID]
		delete(b.deferred, p.ID)
		b.mu.Unlock()
		b.logf("%s published to the hub", p.ID)
		if waited {
			b.decided(ctx, e)
		}
	}
	for _, id := range left {
		b.withdraw(ctx, id)
	}
}

// withdraw removes a request that left the spool from the hub's pending
// bucket, recording what became of it when a console is waiting to know.
func (b *Box) withdraw(ctx context.Context, id string) {
	cctx, cancel := context.WithTimeout(ctx, b.wait())
	defer cancel()
	// A decision this bridge carries out (or did) publishes its own
	// outcome once the run is over: one written here first, bare (not
	// applied, no decision), would be what a console waiting for it
	// reads (sluice hub approve: "did not apply it").
	b.mu.Lock()
	deciding := b.applying[id] || b.done[id]
	b.mu.Unlock()
	if res, err := b.Spool.ReadResult(id); err == nil && res != nil && !deciding {
		out := Outcome{Status: res.Status, ExitCode: res.ExitCode, Reason: res.Reason, At: time.Now().UTC(), DecidedBy: string(res.DecidedBy), DurationMS: res.DurationMS}
		b.describe(&out, id)
		data, _ := json.Marshal(out)
		// A decision applied by an earlier run of the bridge has written
		// its own (fuller) outcome.
		if _, err := b.Client.Results.Create(cctx, Key(b.Name, id), data); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
			b.logf("%s: outcome not published (retried): %v", id, err)
			return
		}
	}
	if err := b.Client.Pending.Delete(cctx, Key(b.Name, id)); err != nil {
		b.logf("%s: not withdrawn from the hub (retried): %v", id, err)
		return
	}
	b.mu.Lock()
	delete(b.published, id)
	delete(b.pubs, id)
	delete(b.sent, id)
	b.mu.Unlock()
}

// describe puts the request id as published into o, for History.
func (b *Box) describe(o *Outcome, id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := b.pubs[id]; p != nil {
		o.Request, o.Verdict = p.Request, p.Verdict
	}
}

// watchDecisions passes on the decisions made for this box, watching
// again at once when the hub is back after it could not be reached (from
// after the last decision passed on).
func (b *Box) watchDecisions(ctx context.Context, out chan<- jetstream.KeyValueEntry) {
	w := &kvWatch{kv: b.Client.Decisions, keys: b.Name + ".*", resume: true,
		entry: func(e jetstream.KeyValueEntry) {
			if e == nil {
				return // the end of what was there already
			}
			select {
			case out <- e:
			case <-ctx.Done():
			}
		},
		failed: func(err error) { b.logf("decisions cannot be watched (retrying): %v", err) }}
	w.run(ctx, b.Client)
}

// decided applies a decision made for this box, once.
func (b *Box) decided(ctx context.Context, e jetstream.KeyValueEntry) {
	if e.Operation() != jetstream.KeyValuePut {
		return
	}
	box, id, ok := SplitKey(e.Key())
	if !ok || box != b.Name {
		return
	}
	var d Decision
	if err := json.Unmarshal(e.Value(), &d); err != nil || (d.Decision != Approve && d.Decision != Deny) {
		b.logf("%s: a decision that is not one ignored: %s", id, safe(string(e.Value())))
		return
	}
	if d.Decision == Approve && !validDigest(d.Digest) {
		// Without the digest of what was shown, nothing says the
		// request that would run is the one a person saw.
		b.logf("%s: an approval without the request's digest ignored (by %s)", id, safe(d.By))
		return
	}
	b.mu.Lock()
	if b.done[id] || b.applying[id] {
		b.mu.Unlock()
		return
	}
	if _, shown := b.published[id]; !shown {
		// Only what this box published can be decided at the hub: not
		// a request still being judged, or one the policy decides. A
		// decision that came before this run of the bridge published
		// its request (again) waits for it.
		_, ask := b.asks[id]
		switch {
		case ask && len(b.deferred) < maxDeferred:
			b.deferred[id] = e
		case !ask && !b.done[id] && time.Since(d.At) < lateWindow:
			b.done[id] = true
			b.mu.Unlock()
			go func() {
				b.late <- struct{}{}
				defer func() { <-b.late }()
				b.lateOutcome(ctx, id, d)
			}()
			return
		default:
			b.logf("%s: a decision for a request this box did not publish ignored (by %s)", id, safe(d.By))
		}
		b.mu.Unlock()
		return
	}
	b.applying[id] = true
	b.mu.Unlock()
	go func() {
		out, ok := b.apply(ctx, id, d)
		b.mu.Lock()
		delete(b.applying, id)
		b.done[id] = true
		b.mu.Unlock()
		if !ok {
			return
		}
		data, _ := json.Marshal(out)
		b.publishOutcome(ctx, id, data)
		b.sync(ctx)
	}()
}

// publishOutcome puts the outcome of a decision this bridge carried out on
// the hub, trying again until the hub has it: a console waits for it
// ('sluice hub approve', a run in a fleet console's pane), and one try
// fails while the hub is down for longer than it waits.
func (b *Box) publishOutcome(ctx context.Context, id string, data []byte) {
	for try := 0; ; try++ {
		relinked := b.Client.Relinked()
		cctx, cancel := context.WithTimeout(ctx, b.wait())
		var err error
		if try == 0 {
			_, err = b.Client.Results.Put(cctx, Key(b.Name, id), data)
		} else {
			// A try that timed out may land yet (the client sends it
			// once the hub is back): the next ones only create it.
			_, err = b.Client.Results.Create(cctx, Key(b.Name, id), data)
		}
		cancel()
		switch {
		case try > 0 && (err == nil || errors.Is(err, jetstream.ErrKeyExists)):
			b.logf("%s: outcome on the hub", id)
			return
		case err == nil:
			return
		case try == 0:
			b.logf("%s: outcome not published yet (%v); tried again until the hub has it", id, err)
		}
		select {
		case <-ctx.Done():
			return // the next run of the bridge publishes it (lateOutcome)
		case <-relinked:
		case <-time.After(time.Second):
		}
	}
}

// lateOutcome publishes what became of request id, decided at the hub
// with d, when the hub has no outcome for it yet but the box answered it:
// a bridge stopped between carrying a decision out and publishing its
// outcome, and a console (sluice hub approve, a run in a fleet console)
// still waits to hear. Applied says whether the box's audit log has the
// decision as the hub's.
func (b *Box) lateOutcome(ctx context.Context, id string, d Decision) {
	cctx, cancel := context.WithTimeout(ctx, b.wait())
	defer cancel()
	if _, err := b.Client.Results.Get(cctx, Key(b.Name, id)); err == nil || !errors.Is(err, jetstream.ErrKeyNotFound) {
		return
	}
	res, err := b.Spool.ReadResult(id)
	if err != nil || res == nil {
		return
	}
	o := Outcome{Status: res.Status, Decision: d.Decision, By: d.By, ExitCode: res.ExitCode, Reason: res.Reason, At: time.Now().UTC(),
		DecidedBy: string(res.DecidedBy), DurationMS: res.DurationMS, Scope: res.Scope}
	if ev, err := audit.Decision(b.AuditPath, id, d.At.Add(-time.Hour)); err == nil && ev.Actor == d.By+" (via the hub)" {
		o.Applied = true
	} else {
		o.Reason = "the request was answered on the box, not by this decision"
	}
	data, _ := json.Marshal(o)
	if _, err := b.Client.Results.Create(cctx, Key(b.Name, id), data); err == nil {
		b.logf("%s: its outcome published late (%s)", id, res.Status)
	}
}

// apply carries out d for request id, if the request still waits, and
// says what became of it; false when an outcome is on the hub already (a
// previous run of the bridge applied it, or the request had left).
func (b *Box) apply(ctx context.Context, id string, d Decision) (Outcome, bool) {
	now := func() time.Time { return time.Now().UTC() }
	if _, err := b.Client.Results.Get(ctx, Key(b.Name, id)); err == nil {
		return Outcome{}, false
	}
	if _, err := os.Lstat(b.Spool.RequestPath(id)); err != nil {
		res, _ := b.Spool.ReadResult(id)
		o := Outcome{Decision: d.Decision, By: d.By, Applied: false, At: now(), Reason: "the request was no longer waiting when the decision came"}
		if res != nil {
			o.Status, o.ExitCode, o.DecidedBy = res.Status, res.ExitCode, string(res.DecidedBy)
		}
		return o, true
	}
	if d.Decision == Approve && !b.diffHolds(id, d.DiffDigest) {
		// What the person saw is not what approving would do now: the
		// request leaves the hub (its decision is spent) and waits here.
		b.mu.Lock()
		delete(b.asks, id)
		b.mu.Unlock()
		o := Outcome{Decision: d.Decision, By: d.By, Applied: false, At: now(),
			Reason: "the file changed after its diff was shown; the request waits on the box: decide it there"}
		b.describe(&o, id)
		return o, true
	}
	// Described first: once the run took the request out of the spool,
	// the bridge's next look withdraws it and forgets what it published.
	o := Outcome{Decision: d.Decision, By: d.By, Applied: true}
	b.describe(&o, id)
	actor := d.By + " (via the hub)"
	var err error
	if d.Decision == Approve {
		b.logf("%s approved by %s at the hub: running it", id, d.By)
		pub := &publisher{c: b.Client, box: b.Name, id: id}
		sa, scoped := b.Apply.(ScopedApplier)
		switch {
		case d.Scope == wire.ScopeRun && scoped:
			err = sa.ApproveScoped(ctx, id, d.Digest, actor, queue.ScopeRun, pub)
		case d.Scope == wire.ScopeRun:
			b.logf("%s: allowed once, not for the run: this bridge's applier cannot carry a scope", id)
			fallthrough
		default:
			err = b.Apply.Approve(ctx, id, d.Digest, actor, pub)
		}
		o.OutputBytes = pub.n
	} else {
		b.logf("%s denied by %s at the hub", id, d.By)
		err = b.Apply.Deny(ctx, id, actor, d.Reason)
	}
	o.At = now()
	if res, rerr := b.Spool.ReadResult(id); rerr == nil && res != nil {
		o.Status, o.ExitCode, o.Reason, o.DecidedBy, o.DurationMS = res.Status, res.ExitCode, res.Reason, string(res.DecidedBy), res.DurationMS
		o.Scope = res.Scope
	} else if err != nil {
		o.Applied, o.Reason = false, err.Error()
	}
	return o, true
}

// diffHolds reports whether a file request id would still make the
// change whose diff the person was shown (shown: its wire.DiffDigest);
// any other request: true. The file as it is now decides, not what this
// box published (a restarted bridge publishes the diff anew).
func (b *Box) diffHolds(id, shown string) bool {
	req, err := b.Spool.ReadPending(id)
	if err != nil {
		return false
	}
	switch req.Kind {
	case queue.KindWrite, queue.KindEdit, queue.KindPatch:
	default:
		return true
	}
	diff, derr := b.fileDiff(req)
	return shown != "" && wire.DiffDigest(diff, derr) == shown
}

// fileDiff is the diff a file request would apply now, or why there is
// none to show; nothing for other requests.
func (b *Box) fileDiff(req *queue.Request) (diff, why string) {
	switch req.Kind {
	case queue.KindWrite, queue.KindEdit, queue.KindPatch:
	default:
		return "", ""
	}
	var roots []string
	if b.Roots != nil {
		roots = b.Roots(req.Cwd)
	}
	d, err := change.Preview(req, roots)
	if err != nil {
		return "", err.Error()
	}
	if len(d) <= maxDiff {
		return d, ""
	}
	return "", fmt.Sprintf("the diff is larger than %d KiB: read it on the box ('sluice show ID')", maxDiff>>10)
}

// publisher streams a run's output to the hub, best effort: each piece
// says where it begins, so that a console can tell what it did not get.
// Output written while the hub cannot be reached is not kept for it: the
// client's reconnect buffer is for the pending requests and outcomes, and
// what a console would get of it once the hub is back depends on which
// reconnects first. The console shows how much was lost instead.
type publisher struct {
	c       *Client
	box, id string
	n       int64 // bytes written so far
}

func (p *publisher) Write(b []byte) (int, error) {
	if p.c.NC.IsConnected() {
		_ = p.c.NC.Publish(outputPieceSubject(p.box, p.id, p.n), b)
	}
	p.n += int64(len(b))
	return len(b), nil
}

// lateWindow is how old a decision may be for its outcome to be
// published late; a console waits for a run's outcome, not for a week.
const lateWindow = 24 * time.Hour

// maxDeferred bounds the decisions a box keeps for requests it has yet to
// publish (a console could send any number).
const maxDeferred = 1024

// validDigest reports whether d is a SHA-256 in lower-case hex.
func validDigest(d string) bool {
	if len(d) != 64 {
		return false
	}
	for i := 0; i < len(d); i++ {
		if c := d[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
