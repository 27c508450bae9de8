package web

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/queue"
)

// history is what the audit log says of one spool's requests: the
// verdicts the engine recorded for those that ask (their queued line), and
// the latest decisions and outcomes.
type history struct {
	max      int
	own      map[string]bool // names of this spool's directory
	verdicts map[string]*queue.Verdict
	byID     map[string]*Past
	order    []string // ids, oldest first
}

// maxVerdicts bounds the verdicts kept for requests still undecided.
const maxVerdicts = 20000

func newHistory(max int, spool string) *history {
	h := &history{max: max, own: map[string]bool{spool: true}, verdicts: map[string]*queue.Verdict{}, byID: map[string]*Past{}}
	if r, err := filepath.EvalSymlinks(spool); err == nil {
		h.own[r] = true
	}
	return h
}

// mine reports whether an event is of this spool: one audit log may serve
// several; lines that name none (older ones) count.
func (h *history) mine(ev *queue.Event) bool {
	if ev.Spool == "" || h.own[ev.Spool] {
		return true
	}
	if r, err := filepath.EvalSymlinks(ev.Spool); err == nil && h.own[r] {
		h.own[ev.Spool] = true
		return true
	}
	return false
}

// add takes one audit event in; true when History or a verdict changed.
func (h *history) add(ev *queue.Event) bool {
	if ev == nil || ev.ID == "" || !h.mine(ev) {
		return false
	}
	switch ev.Event {
	case queue.EventQueued:
		if ev.Verdict == nil {
			return false
		}
		if len(h.verdicts) >= maxVerdicts {
			clear(h.verdicts)
		}
		v := *ev.Verdict
		h.verdicts[ev.ID] = &v
		return true
	case queue.EventAutoAllowed, queue.EventAutoDenied, queue.EventApproved, queue.EventDenied,
		queue.EventExpired, queue.EventInvalid, queue.EventInterrupted:
		delete(h.verdicts, ev.ID)
		p := h.entry(ev)
		p.Decision, p.By, p.Reason, p.At = ev.Event, ev.Actor, ev.Reason, ev.TS
		if ev.Status != "" {
			p.Status = ev.Status
		}
		return true
	case queue.EventFinished, queue.EventTimeout, queue.EventKilled:
		p := h.entry(ev)
		p.Status, p.ExitCode, p.At = ev.Status, ev.ExitCode, ev.TS
		if p.Status == "" {
			p.Status = queue.StatusDone
		}
		if ev.Reason != "" && p.Reason == "" {
			p.Reason = ev.Reason
		}
		return true
	}
	return false
}

// entry is the History entry of ev's request, made (and the oldest
// dropped) when new.
func (h *history) entry(ev *queue.Event) *Past {
	if p, ok := h.byID[ev.ID]; ok {
		return p
	}
	what := ev.Command
	switch {
	case what == "" && ev.Path != "":
		what = ev.Path
	case what == "" && ev.Tool != "":
		what = ev.Tool
	}
	p := &Past{ID: ev.ID, Kind: ev.Kind, What: what, Agent: ev.Agent}
	h.byID[ev.ID] = p
	h.order = append(h.order, ev.ID)
	for len(h.order) > h.max {
		delete(h.byID, h.order[0])
		h.order = h.order[1:]
	}
	return p
}

func (h *history) verdict(id string) *queue.Verdict { return h.verdicts[id] }

// list is History, newest first.
func (h *history) list() []Past {
	out := make([]Past, 0, len(h.order))
	for i := len(h.order) - 1; i >= 0; i-- {
		out = append(out, *h.byID[h.order[i]])
	}
	return out
}

func (h *history) winner(id string) (string, string, bool) {
	p, ok := h.byID[id]
	if !ok || p.Decision == "" {
		return "", "", false
	}
	return string(p.Decision), p.By, true
}

// followAudit reads the audit log's last lines, then every line appended,
// until ctx ends.
func (s *Spool) followAudit(ctx context.Context) {
	path := s.AuditPath()
	if path == "" {
		p, err := audit.DefaultPath()
		if err != nil {
			s.logf("no audit log: %v", err)
			return
		}
		path = p
	}
	var off int64
	if f, err := os.Open(path); err == nil {
		if fi, err := f.Stat(); err == nil {
			// A request takes three to four lines; asks that wait long
			// need their queued line found too.
			lines, end, err := audit.Last(f, fi.Size(), 4*s.hist.max+2000, audit.Filter{})
			if err == nil {
				s.mu.Lock()
				for _, l := range lines {
					s.hist.add(l.Event)
				}
				s.notifyLocked()
				s.mu.Unlock()
				off = end
			} else {
				off = fi.Size()
			}
		}
		f.Close()
	}
	fw := audit.Follower{Path: path, Offset: off, Every: 200 * time.Millisecond}
	_ = fw.Run(ctx, func(l audit.Line) error {
		s.mu.Lock()
		if s.hist.add(l.Event) {
			for i := range s.items {
				s.items[i].Verdict = s.hist.verdict(s.items[i].ID)
			}
			s.notifyLocked()
		}
		s.mu.Unlock()
		return nil
	})
}
