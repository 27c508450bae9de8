package tui

import (
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/sluice-dev/sluice/queue"
	"github.com/sluice-dev/sluice/tui/screen"
)

// feed is the engine's Observer: it queues what the engine does, from the
// engine's goroutines, for the UI to take in batches (one engineMsg per
// wake-up, however many events), so a burst of ten thousand requests is a
// handful of messages.
type feed struct {
	deps *deps

	mu     sync.Mutex
	events []any
	wake   chan struct{}     // capacity 1
	pacers map[string]*pacer // by running request id
}

var _ queue.Observer = (*feed)(nil)

func newFeed(d *deps) *feed {
	return &feed{deps: d, wake: make(chan struct{}, 1)}
}

func (f *feed) push(ev any) {
	f.mu.Lock()
	f.events = append(f.events, ev)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// next is the Cmd that waits for events; Update re-arms it.
func (f *feed) next() tea.Msg {
	for range f.wake {
		f.mu.Lock()
		evs := f.events
		f.events = nil
		f.mu.Unlock()
		if len(evs) > 0 {
			return engineMsg{events: evs}
		}
	}
	return nil
}

// Pending implements queue.Observer. The verdict comes with its parts:
// the request is judged once, by the engine. Its age counts from its
// created_at (a fleet console learns of a request when the hub tells it,
// which after a restart is long after it was made), never from the future.
func (f *feed) Pending(req *queue.Request, v queue.Verdict) {
	at := f.deps.now()
	if c := req.CreatedAt; !c.IsZero() && c.Before(at) {
		at = c
	}
	note := ""
	if u := f.deps.opt.Undo; u != nil {
		note = u.CheckpointNote(req, v)
	}
	f.push(requestPending{req: req, verdict: v, at: at, checkpt: note})
}

// Gone implements queue.Observer.
func (f *feed) Gone(id string, op queue.WatchOp) { f.push(requestGone{id: id, op: op}) }

// Started implements queue.Observer: the run gets a screen sized to the
// output pane, fed by the runner's fan-out.
func (f *feed) Started(req *queue.Request, v queue.Verdict, by queue.Decider) func([]byte) {
	rows, cols := f.deps.paneSize()
	id := req.ID
	reply := func(p []byte) { f.deps.input(id, p) }
	r := &run{req: req, verdict: v, by: by, started: f.deps.now(),
		screen: screen.New(int(cols), int(rows), reply)}
	pc := newPacer(r.screen)
	f.mu.Lock()
	if f.pacers == nil {
		f.pacers = map[string]*pacer{}
	}
	f.pacers[req.ID] = pc
	f.mu.Unlock()
	f.push(runStarted{run: r})
	return pc.write
}

var _ queue.TurnObserver = (*feed)(nil)

// Waits implements queue.TurnObserver.
func (f *feed) Waits(id, holder string) { f.push(runWaits{id: id, holder: holder}) }

var _ queue.ResultObserver = (*feed)(nil)

// ResultWaits implements queue.ResultObserver.
func (f *feed) ResultWaits(id, why string) { f.push(resultWaits{id: id, why: why}) }

// Finished implements queue.Observer. A run's last output reaches its
// screen before the console hears it ended.
func (f *feed) Finished(req *queue.Request, res queue.Result) {
	f.mu.Lock()
	pc := f.pacers[req.ID]
	delete(f.pacers, req.ID)
	f.mu.Unlock()
	if pc != nil {
		pc.close()
	}
	f.push(runFinished{id: req.ID, req: req, res: res, at: f.deps.now()})
}

// run is one request this console saw being carried out.
type run struct {
	req     *queue.Request
	verdict queue.Verdict
	by      queue.Decider
	screen  *screen.Screen // nil once let go (old history); the log remains
	started time.Time
	ended   time.Time
	res     *queue.Result // nil while running

	// fromLog: known only from the audit log (an earlier session,
	// another console, sluice approve or deny); last is the newest event
	// read for it and actor who decided.
	fromLog bool
	last    queue.EventName
	actor   string

	// waitsFor is the run this one waits for, which changes files in
	// the same project ("" once it started).
	waitsFor string
	// unwritten says why the run, ended, has no result yet.
	unwritten string
}

// running reports whether the run is one this console watches and it is
// still going (one known from the log runs in another process: this
// console cannot kill or resize it).
func (r *run) running() bool { return r.res == nil && !r.fromLog }

// state is the word History shows for the run.
func (r *run) state() string {
	switch {
	case r.res != nil:
		return string(r.res.Status)
	case r.running() && r.waitsFor != "":
		return "waiting"
	case r.running() && r.unwritten != "":
		return "ended"
	case !r.fromLog || r.last == queue.EventStarted:
		return "running"
	case r.last == queue.EventAutoAllowed:
		return "allowed"
	}
	return string(r.last)
}

// Logged hands the console events read from the audit log, in log order:
// History shows what every process decided, not only this console. Safe
// from any goroutine.
func (f *feed) Logged(evs []queue.Event) {
	if len(evs) > 0 {
		f.push(loggedEvents{events: evs})
	}
}

// sandbox is how the run is confined: its result's word once it ended,
// else its verdict's profile.
func (r *run) sandbox() string {
	if r.res != nil {
		return r.res.Sandbox
	}
	return r.verdict.Profile
}

// newLogScreen replays a finished run's log into a fresh screen.
func newLogScreen(data []byte, d *deps) *screen.Screen {
	rows, cols := d.paneSize()
	s := screen.New(int(cols), int(rows), nil)
	_, _ = s.Write(data)
	return s
}
