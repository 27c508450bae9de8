package link

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/hub/wire"
	"github.com/sluice-dev/sluice/queue"
)

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

// handle takes one event of the feed (its values come from boxes).
func (l *Link) handle(ev wire.FeedEvent) {
	key := ev.Box + "/" + ev.ID
	switch ev.Ev {
	case wire.FeedPending, wire.FeedGone, wire.FeedOutput, wire.FeedOutcome, wire.FeedDropped:
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
			msg := ev.Error
			if msg == "" {
				// The hub holds the decision, not quite as asked (an
				// allow for the run recorded as once): said as an error,
				// so that the person reads it.
				msg = ev.Text
			}
			ch <- msg
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
	case wire.FeedDropped:
		// The header says it: the request leaves the queue (a gone comes
		// with it) and would otherwise vanish without a word.
		why, _ := queue.Printable(ev.Text)
		if len(why) > maxDropWhy {
			why = strings.ToValidUTF8(why[:maxDropWhy], "") + "…"
		}
		id := ev.ID
		if len(id) > 8 {
			id = "…" + id[len(id)-8:] // as the queue shows ids
		}
		l.mu.Lock()
		l.dropped++
		l.dropNote = ev.Box + "/" + id + " (" + why + ")"
		l.mu.Unlock()
		l.linked()
	}
}

// maxDropWhy bounds the reason a dropped request's note gives.
const maxDropWhy = 160

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
