// Package link is a fleet console's link to a hub: it runs a
// 'sluice-hub hub feed' child (NATS stays out of the sluice program),
// turns the feed's JSON lines (hub/wire) into what the console's engine
// observer and History take, and carries the person's decisions back.
// A Link implements the console's tui.Fleet and tui.Previewer; it imports
// neither tui nor NATS.
package link

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	osexec "os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluice-dev/sluice/hub/wire"
	"github.com/sluice-dev/sluice/queue"
)

// Link is a console's link to a fleet hub: a 'sluice-hub hub feed'
// child whose lines it turns into what the console's engine observer and
// History take, and which carries the person's decisions. It implements
// tui.Fleet and tui.Previewer.
type Link struct {
	cmd     *osexec.Cmd    // the feed now (l.mu)
	in      io.WriteCloser // its stdin (l.mu)
	out     *bufio.Reader  // its stdout (the run goroutine's)
	respawn func() error   // starts a new feed; nil: none (tests)
	closing bool           // the console is closing the link (l.mu)

	obs    queue.Observer
	logged func([]queue.Event)
	linked func() // the link went up or down

	mu       sync.Mutex
	seq      int64
	waiting  map[int64]chan string        // decisions sent, by seq: the hub's refusal ("" when held)
	shown    map[*queue.Request]*shownReq // what the console was given, by the value it holds
	requests map[string]*shownReq         // the latest of each BOX/ID, pending or gone (for runs and outcomes)
	order    []string                     // requests' keys, oldest first, to bound it
	runs     map[string]*fleetRun         // runs whose output streams here, by BOX/ID
	text     string                       // the hub's address, or why it cannot be reached
	ok       bool                         // connected
	ended    chan struct{}                // the feed's output ended
	endErr   error
}

// shownReq is a request as the hub published it.
type shownReq struct {
	req     *queue.Request // its ID is BOX/ID
	verdict queue.Verdict
	digest  string
	diff    string
	diffErr string
	value   []byte    // the value as published, to tell a republished one from a changed one
	pending bool      // waits on the hub
	goneAt  time.Time // when it stopped waiting
	ran     bool      // its output has opened a run here
}

// fleetRun is a run of a box whose output streams here.
type fleetRun struct {
	w     func([]byte) // its screen
	track wire.OutputTrack
}

// runWindow is how long after a request stops waiting its output may
// still open a run; maxRuns bounds the runs open at once.
const (
	runWindow = 30 * time.Second
	maxRuns   = 64
)

// maxKnown bounds the requests a link remembers after they left the
// queue (their outcome names them).
const maxKnown = 4096

// Feed is the 'sluice-hub hub feed' child a Link runs.
type Feed struct {
	Program     string               // sluice-hub
	Hub, Creds  string               // its --hub and --hub-creds; "": sluice-hub's defaults
	SysProcAttr *syscall.SysProcAttr // the child's (a parent-death signal); nil: none
}

// Start starts the feed and waits for its first word: the hub's address,
// or why it cannot be reached. Run then passes its events on.
func Start(f Feed) (*Link, error) {
	args := []string{"hub", "feed"}
	if f.Hub != "" {
		args = append(args, "--hub", f.Hub)
	}
	if f.Creds != "" {
		args = append(args, "--hub-creds", f.Creds)
	}
	l := &Link{waiting: map[int64]chan string{},
		shown: map[*queue.Request]*shownReq{}, requests: map[string]*shownReq{}, runs: map[string]*fleetRun{},
		ended: make(chan struct{})}
	l.respawn = func() error { return l.spawn(f.Program, args, f.SysProcAttr) }
	if err := l.respawn(); err != nil {
		return nil, err
	}
	return l, nil
}

// spawn starts a feed and reads its first word, the link's state.
func (l *Link) spawn(prog string, args []string, attr *syscall.SysProcAttr) error {
	cmd := osexec.Command(prog, args...)
	cmd.SysProcAttr = attr
	stderr := &tailBuffer{max: 4096}
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run %s: %w", prog, err)
	}
	l.out = bufio.NewReaderSize(stdout, 64<<10)
	ev, err := l.next()
	if err != nil || ev.Ev != wire.FeedHub {
		_ = in.Close()
		_ = cmd.Wait()
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return errors.New(lastLine(strings.TrimPrefix(msg, "sluice hub feed: ")))
		}
		return fmt.Errorf("the hub feed ended before it said anything (%v)", err)
	}
	l.mu.Lock()
	l.cmd, l.in, l.endErr = cmd, in, nil
	l.text, l.ok = ev.Text, ev.Connected
	l.mu.Unlock()
	return nil
}

// maxFeedLine bounds one line of the feed: a request (1 MiB at most), its
// diff and their JSON escaping.
const maxFeedLine = 8 << 20

// next reads the feed's next event. A line too long or that is not an
// event (its values come from boxes) is skipped, not fatal: only the end
// of the feed ends the link.
func (l *Link) next() (wire.FeedEvent, error) {
	for {
		line, err := wire.ReadLine(l.out, maxFeedLine)
		if errors.Is(err, wire.ErrLineTooLong) {
			continue
		}
		if err != nil {
			return wire.FeedEvent{}, err
		}
		var ev wire.FeedEvent
		if json.Unmarshal(line, &ev) == nil {
			return ev, nil
		}
	}
}

// Console is what a Link tells of the fleet: a tui.Model.
type Console interface {
	// Observer takes the requests that wait on the hub, and the runs
	// whose output streams here.
	Observer() queue.Observer
	// Logged takes History's entries: outcomes of requests decided
	// elsewhere, who approved a run.
	Logged([]queue.Event)
	// LinkChanged says the link went up or down (Link says how).
	LinkChanged()
}

// Run passes the feed's events on to c until Close; a feed that stops is
// started again.
func (l *Link) Run(c Console) {
	l.obs, l.logged, l.linked = c.Observer(), c.Logged, c.LinkChanged
	l.run()
}

// run passes the feed's events on until the console closes the link. A
// feed that stops is started again (each second, while it cannot be):
// the requests it sends anew that the console shows already are the same
// values, and those that left meanwhile come as gone.
func (l *Link) run() {
	defer close(l.ended)
	for {
		ev, err := l.next()
		if err == nil {
			l.handle(ev)
			continue
		}
		l.mu.Lock()
		l.endErr = err
		l.ok, l.text = false, "the hub feed stopped: "+err.Error()
		for seq, ch := range l.waiting {
			ch <- "the hub feed stopped"
			delete(l.waiting, seq)
		}
		closing := l.closing || l.respawn == nil
		if l.cmd != nil {
			go func(cmd *osexec.Cmd) { _ = cmd.Wait() }(l.cmd)
		}
		l.mu.Unlock()
		l.linked()
		if closing {
			return
		}
		for {
			time.Sleep(time.Second)
			l.mu.Lock()
			closing := l.closing
			l.mu.Unlock()
			if closing {
				return
			}
			if err := l.respawn(); err == nil {
				l.linked()
				break
			} else {
				l.mu.Lock()
				l.text = "the hub feed does not start again: " + err.Error() + "; retrying"
				l.mu.Unlock()
				l.linked()
			}
		}
	}
}

func (l *Link) handle(ev wire.FeedEvent) {
	key := ev.Box + "/" + ev.ID
	switch ev.Ev {
	case wire.FeedPending, wire.FeedGone, wire.FeedOutput, wire.FeedOutcome:
		if !wire.ValidName(ev.Box) || !queue.ValidID(ev.ID) {
			return
		}
	}
	switch ev.Ev {
	case wire.FeedHub:
		l.mu.Lock()
		l.text, l.ok = ev.Text, ev.Connected
		l.mu.Unlock()
		l.linked()
	case wire.FeedDecided:
		l.mu.Lock()
		ch := l.waiting[ev.Seq]
		delete(l.waiting, ev.Seq)
		l.mu.Unlock()
		if ch != nil {
			ch <- ev.Error
		}
	case wire.FeedPending:
		if ev.Pending == nil {
			return
		}
		s := l.request(key, ev.Pending.Request, ev.Pending.Verdict)
		if s == nil {
			return
		}
		s.digest, s.diff, s.diffErr = ev.Pending.Digest, ev.Pending.Diff, ev.Pending.DiffErr
		s.value, _ = json.Marshal(ev.Pending)
		l.mu.Lock()
		prev := l.requests[key]
		if prev != nil && prev.pending && bytes.Equal(prev.value, s.value) {
			l.mu.Unlock()
			return // the same value again (the feed watched anew)
		}
		s.pending = true
		if prev != nil {
			delete(l.shown, prev.req)
		}
		l.remember(key, s)
		l.shown[s.req] = s
		l.mu.Unlock()
		if prev != nil && prev.pending {
			// Its file, diff or verdict changed: what was shown goes,
			// the new one is looked at afresh.
			l.obs.Gone(key, queue.Gone)
		}
		l.obs.Pending(s.req, s.verdict)
	case wire.FeedGone:
		l.mu.Lock()
		s := l.requests[key]
		if s == nil || !s.pending {
			l.mu.Unlock()
			return
		}
		s.pending, s.goneAt = false, time.Now()
		delete(l.shown, s.req)
		l.mu.Unlock()
		l.obs.Gone(key, queue.Gone)
	case wire.FeedOutput:
		r := l.openRun(key)
		if r == nil {
			return
		}
		// What the hub did not carry (it was down) is a marked line.
		if data := r.track.Piece(ev.Offset, ev.Data); len(data) > 0 {
			r.w(data)
		}
	case wire.FeedOutcome:
		if ev.Outcome != nil {
			l.outcome(key, ev.Outcome)
		}
	}
}

// openRun is the run of request key whose output streams here, opened if
// needs be; nil if its output is not shown here. A run is shown for a
// request this console saw wait and that was decided just now, a few at
// once: output a box sends for anything else is not.
func (l *Link) openRun(key string) *fleetRun {
	l.mu.Lock()
	if r := l.runs[key]; r != nil {
		l.mu.Unlock()
		return r
	}
	s := l.requests[key]
	if s == nil || s.ran || (!s.pending && time.Since(s.goneAt) > runWindow) || len(l.runs) >= maxRuns {
		l.mu.Unlock()
		return nil
	}
	s.ran = true
	l.mu.Unlock()
	r := &fleetRun{w: l.obs.Started(s.req, s.verdict, queue.ByHuman)}
	l.mu.Lock()
	l.runs[key] = r
	l.mu.Unlock()
	return r
}

// request decodes a request a box published, as hostile as any agent's
// (the spool's own decoder), under its fleet id BOX/ID.
func (l *Link) request(key string, raw json.RawMessage, v *queue.Verdict) *shownReq {
	box, id, _ := strings.Cut(key, "/")
	if !wire.ValidName(box) || !queue.ValidID(id) {
		return nil
	}
	req, err := queue.DecodeRequest(raw, id)
	if err != nil {
		return nil
	}
	req.ID = key
	s := &shownReq{req: req, verdict: queue.Verdict{Action: queue.ActionAsk, Category: "unknown", Risk: "medium"}}
	if v != nil {
		s.verdict = cleanVerdict(*v)
	}
	return s
}

// cleanVerdict is a verdict a box sent, as the console may show it: the
// console trusts an engine's verdict to be made of its own words, and a
// box's is made of whatever the box wrote.
func cleanVerdict(v queue.Verdict) queue.Verdict {
	word := func(s string) string { p, _ := queue.Printable(s); return p }
	action := func(a queue.Action) queue.Action {
		switch a {
		case queue.ActionAllow, queue.ActionAllowWithCheckpoint, queue.ActionAsk, queue.ActionDeny:
			return a
		}
		return queue.ActionAsk
	}
	out := queue.Verdict{Action: action(v.Action), Category: word(v.Category), Risk: word(v.Risk), Profile: word(v.Profile)}
	for _, r := range v.Reasons {
		out.Reasons = append(out.Reasons, word(r))
	}
	for _, p := range v.Parts {
		out.Parts = append(out.Parts, queue.Part{Command: word(p.Command), Category: word(p.Category), Action: action(p.Action), Rule: word(p.Rule)})
	}
	return out
}

// cleanStatus is a status a box sent, if it is one.
func cleanStatus(s queue.Status) queue.Status {
	switch s {
	case queue.StatusDone, queue.StatusDenied, queue.StatusDecided, queue.StatusExpired, queue.StatusInvalid,
		queue.StatusFailed, queue.StatusKilled, queue.StatusTimeout, queue.StatusInterrupted, queue.StatusStopped:
		return s
	}
	return ""
}

// remember keeps s as key's request, forgetting the oldest beyond
// maxKnown (l.mu held).
func (l *Link) remember(key string, s *shownReq) {
	if _, ok := l.requests[key]; !ok {
		l.order = append(l.order, key)
	}
	l.requests[key] = s
	if len(l.order) <= maxKnown {
		return
	}
	// The oldest that no longer wait go; those that wait stay, however
	// many.
	kept := l.order[:0]
	drop := len(l.order) - maxKnown
	for _, k := range l.order {
		if o := l.requests[k]; drop > 0 && (o == nil || !o.pending) {
			delete(l.requests, k)
			drop--
			continue
		}
		kept = append(kept, k)
	}
	l.order = kept
}

// outcome takes what a box did with a request into History: the end of a
// run whose output streamed here, or an entry of its own.
func (l *Link) outcome(key string, o *wire.Outcome) {
	res := queue.Result{ID: key, Status: cleanStatus(o.Status), ExitCode: o.ExitCode, Reason: o.Reason, DurationMS: o.DurationMS}
	switch d := queue.Decider(o.DecidedBy); d {
	case queue.ByPolicy, queue.ByHuman:
		res.DecidedBy = d
	}
	if res.Status == "" {
		// Not applied, and the request did not end on the box either
		// (it waits there): History says so, with the box's reason.
		res.Status = "not run"
	}
	var r *fleetRun
	if o.Applied && o.OutputBytes > 0 {
		// A run whose output all went while the hub was down is shown
		// too: the pane says how much was lost.
		r = l.openRun(key)
	}
	l.mu.Lock()
	if r == nil {
		r = l.runs[key]
	}
	delete(l.runs, key)
	s := l.requests[key]
	l.mu.Unlock()
	if s == nil && len(o.Request) > 0 {
		s = l.request(key, o.Request, o.Verdict)
	}
	if r != nil && s != nil {
		// What the box published after the last piece that came here.
		if data := r.track.End(o.OutputBytes); len(data) > 0 {
			r.w(data)
		}
		l.obs.Finished(s.req, res)
		if o.By != "" {
			// Who decided it, for its History entry.
			l.logged([]queue.Event{{TS: o.At, ID: key, Event: queue.EventApproved, Actor: o.By}})
		}
		return
	}
	ev := queue.Event{TS: o.At, ID: key, Event: queue.EventFinished, Status: res.Status, ExitCode: o.ExitCode, Reason: res.Reason, DurationMS: o.DurationMS}
	switch {
	case o.Decision == wire.Deny:
		ev.Event = queue.EventDenied
	case o.Decision == wire.Approve:
		ev.Event = queue.EventApproved
	}
	if o.By != "" {
		ev.Actor = o.By
	} else if res.DecidedBy != "" {
		ev.Actor = string(res.DecidedBy)
	}
	if s != nil {
		r := s.req
		ev.Kind, ev.Command, ev.Path, ev.Tool, ev.Cwd, ev.Agent = r.Kind, r.Command, r.Path, r.Tool, r.Cwd, r.Agent
		v := s.verdict
		ev.Verdict = &v
	} else {
		ev.Kind, ev.Command = queue.KindExec, "(a request this console did not see)"
	}
	l.logged([]queue.Event{ev})
}

// decide sends one decision and waits for the hub to hold or refuse it.
func (l *Link) decide(ctx context.Context, op string, shown *queue.Request, reason string) error {
	box, id, _ := strings.Cut(shown.ID, "/")
	if len(reason) > maxReason {
		reason = reason[:maxReason]
	}
	l.mu.Lock()
	if l.endErr != nil {
		l.mu.Unlock()
		return errors.New("the link to the hub is down (the hub feed stopped); restart the console")
	}
	s := l.shown[shown]
	if s == nil {
		l.mu.Unlock()
		return errors.New("it no longer waits on the hub")
	}
	l.seq++
	seq := l.seq
	ch := make(chan string, 1)
	l.waiting[seq] = ch
	// The digest of what the person was shown, not of whatever the hub
	// holds by the time the decision lands.
	line, _ := json.Marshal(wire.FeedCommand{Seq: seq, Op: op, Box: box, ID: id, Digest: s.digest,
		DiffDigest: wire.DiffDigest(s.diff, s.diffErr), Reason: reason})
	_, err := l.in.Write(append(line, '\n'))
	l.mu.Unlock()
	if err != nil {
		return fmt.Errorf("the hub feed stopped: %w", err)
	}
	select {
	case msg := <-ch:
		if msg != "" {
			return errors.New(msg)
		}
		return nil
	case <-l.ended:
		return errors.New("the hub feed stopped before the hub answered; look at the request again once the console is restarted")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// maxReason bounds a deny reason sent to the hub.
const maxReason = 4 << 10

// Approve implements tui.Fleet.
func (l *Link) Approve(ctx context.Context, shown *queue.Request) error {
	return l.decide(ctx, wire.Approve, shown, "")
}

// Deny implements tui.Fleet.
func (l *Link) Deny(ctx context.Context, shown *queue.Request, reason string) error {
	return l.decide(ctx, wire.Deny, shown, reason)
}

// Link implements tui.Fleet.
func (l *Link) Link() (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.text, l.ok
}

// Preview implements tui.Previewer: the diff the box published with a
// file request.
func (l *Link) Preview(req *queue.Request) (string, error) {
	l.mu.Lock()
	s := l.shown[req]
	l.mu.Unlock()
	switch {
	case s == nil:
		return "", errors.New("it no longer waits on the hub")
	case s.diffErr != "":
		return "", errors.New(s.diffErr)
	}
	return s.diff, nil
}

// Close ends the feed (and the link) and waits for it.
func (l *Link) Close() {
	l.mu.Lock()
	l.closing = true
	cmd, in := l.cmd, l.in
	l.mu.Unlock()
	_ = in.Close()
	select {
	case <-l.ended:
	case <-time.After(3 * time.Second):
		_ = cmd.Process.Kill()
		<-l.ended
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(p)
	if over := t.b.Len() - t.max; over > 0 {
		t.b.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}

// lastLine is the last line of s.
func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
