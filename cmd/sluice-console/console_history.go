package main

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/queue"
)

// historyEvents are the audit events History is built from: every step
// of a request after it was queued.
var historyEvents = func() []queue.EventName {
	var out []queue.EventName
	for _, e := range queue.EventNames() {
		if e != queue.EventQueued && e != queue.EventAuditRepaired {
			out = append(out, e)
		}
	}
	return out
}()

// followHistory hands the console the audit log's last events (enough for
// about n requests), then every event appended to it until ctx ends: so
// History shows what earlier sessions, other consoles and 'sluice
// approve' or 'deny' decided, not only this console.
func followHistory(ctx context.Context, path string, n int, logged func([]queue.Event)) {
	var off int64
	if f, err := os.Open(path); err == nil {
		if fi, err := f.Stat(); err == nil && n > 0 {
			// A request takes two to three lines after queued.
			lines, end, err := audit.Last(f, fi.Size(), 3*n, audit.Filter{Events: historyEvents})
			if err == nil {
				logged(events(lines))
				off = end
			} else {
				off = fi.Size()
			}
		} else if err == nil {
			off = fi.Size()
		}
		f.Close()
	}
	fw := audit.Follower{Path: path, Offset: off, Every: 250 * time.Millisecond}
	_ = fw.Run(ctx, func(l audit.Line) error {
		if l.Event != nil && l.Event.Event != queue.EventQueued {
			logged([]queue.Event{*l.Event})
		}
		return nil
	})
}

// ownSpool passes on the events of spool dir only: one audit log may
// serve several spools, and a console's History is its own spool's. Lines
// that name no spool (older ones, undos, trusts) pass.
//
// A spool may be named through different paths (a symlinked parent): a
// name is compared by where it leads, each name resolved once.
func ownSpool(dir string, logged func([]queue.Event)) func([]queue.Event) {
	resolve := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return p
	}
	own := resolve(dir)
	var mu sync.Mutex
	seen := map[string]bool{dir: true, own: true} // name → names this spool
	mine := func(name string) bool {
		mu.Lock()
		defer mu.Unlock()
		is, ok := seen[name]
		if !ok {
			if len(seen) > 64 {
				seen = map[string]bool{dir: true, own: true}
			}
			is = resolve(name) == own
			seen[name] = is
		}
		return is
	}
	return func(evs []queue.Event) {
		kept := evs[:0:0]
		for _, ev := range evs {
			if ev.Spool == "" || mine(ev.Spool) {
				kept = append(kept, ev)
			}
		}
		if len(kept) > 0 {
			logged(kept)
		}
	}
}

// events are the decoded events among lines.
func events(lines []audit.Line) []queue.Event {
	out := make([]queue.Event, 0, len(lines))
	for _, l := range lines {
		if l.Event != nil {
			out = append(out, *l.Event)
		}
	}
	return out
}
