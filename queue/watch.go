package queue

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// WatchOp says what a WatchEvent reports.
type WatchOp int

// The watch operations.
const (
	// Pending: a request is waiting for a decision, or its file was
	// replaced (compare Request.Same).
	Pending WatchOp = iota + 1
	// Gone: a pending request left new/ (claimed by some process).
	Gone
	// Expired: the watcher answered a request expired.
	Expired
	// Invalid: the watcher moved a bad file to bad/ (Err says why).
	Invalid
	// Interrupted: the watcher answered interrupted a request whose actor
	// died.
	Interrupted
	// Problem: the watcher hit an error it works around (Err says which).
	Problem
)

func (op WatchOp) String() string {
	switch op {
	case Pending:
		return "pending"
	case Gone:
		return "gone"
	case Expired:
		return "expired"
	case Invalid:
		return "invalid"
	case Interrupted:
		return "interrupted"
	case Problem:
		return "problem"
	}
	return fmt.Sprintf("WatchOp(%d)", int(op))
}

// WatchEvent is one thing a watcher saw or did. ID is empty for a bad file
// whose name is not an id, and for Problem.
type WatchEvent struct {
	Op      WatchOp
	ID      string
	Request *Request // for Pending
	Err     error    // for Invalid and Problem
}

// WatchOptions tune Watch. The zero value is ready to use.
type WatchOptions struct {
	// Rescan is how often the whole spool is rescanned: the safety net for
	// lost events and the polling fallback where inotify/kqueue is not
	// available (network filesystems). Default 2 s, or 250 ms when polling.
	Rescan time.Duration
	// Now is the clock for expiry; default time.Now.
	Now func() time.Time
}

// Watch reports pending requests as they arrive and leave, until ctx ends;
// then the channel is closed. On start, and on every rescan, it answers
// interrupted the requests whose actors died (Recover). Bad files are
// quarantined and expired requests answered as they are seen; each such
// act is reported too. Watch starts listening before its first scan, so
// no request slips between the two.
func (s *Spool) Watch(ctx context.Context, opt WatchOptions) <-chan WatchEvent {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	w := &watcher{s: s, opt: opt, out: make(chan WatchEvent, 256),
		pending: make(map[string]pendingFile), finished: make(map[string]bool), faults: map[string]string{}}
	fw, err := fsnotify.NewWatcher()
	if err == nil {
		if err = fw.Add(s.path(dirNew, "")); err != nil {
			fw.Close()
			fw = nil
		}
	}
	if w.opt.Rescan <= 0 {
		w.opt.Rescan = 2 * time.Second
		if fw == nil {
			w.opt.Rescan = 250 * time.Millisecond
		}
	}
	go w.run(ctx, fw, err)
	return w.out
}

// pendingFile is what a watcher keeps of a pending request: enough to
// tell it again (its digest and file stamp) and when it expires, not the
// request itself (10,000 pending requests would hold ~5 MB).
type pendingFile struct {
	id      string
	digest  [32]byte
	expires time.Time
	stat    fileStamp
	seen    uint64 // the rescan that last saw it
}

func (p *pendingFile) expired(now time.Time) bool {
	return !p.expires.IsZero() && !now.Before(p.expires)
}

// fileStamp tells whether a name now points at a different file.
type fileStamp struct {
	ino, size int64
	mtime     time.Time
}

func stampOf(fi os.FileInfo) fileStamp {
	st := fileStamp{size: fi.Size(), mtime: fi.ModTime()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = int64(sys.Ino)
	}
	return st
}

type watcher struct {
	s        *Spool
	opt      WatchOptions
	out      chan WatchEvent
	ctx      context.Context
	pending  map[string]pendingFile // by file name in new/
	finished map[string]bool        // ids in cur/ known to have results
	faults   map[string]string      // ids whose answer could not be written: the error last said
	scan     uint64                 // rescans so far
}

func (w *watcher) run(ctx context.Context, fw *fsnotify.Watcher, startErr error) {
	defer close(w.out)
	w.ctx = ctx
	var events <-chan fsnotify.Event
	var errs <-chan error
	if fw != nil {
		defer fw.Close()
		events, errs = fw.Events, fw.Errors
	} else {
		w.emit(WatchEvent{Op: Problem, Err: fmt.Errorf("queue: no file events (%v); polling every %s", startErr, w.opt.Rescan)})
	}
	tick := time.NewTicker(w.opt.Rescan)
	defer tick.Stop()
	w.rescan()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			w.handle(ev)
		case err, ok := <-errs:
			if !ok {
				return
			}
			if !errors.Is(err, fsnotify.ErrEventOverflow) {
				w.emit(WatchEvent{Op: Problem, Err: fmt.Errorf("queue: watch: %w", err)})
			}
			w.rescan()
		case <-tick.C:
			w.rescan()
		}
	}
}

func (w *watcher) emit(ev WatchEvent) {
	select {
	case w.out <- ev:
	case <-w.ctx.Done():
	}
}

func (w *watcher) handle(ev fsnotify.Event) {
	name := filepath.Base(ev.Name)
	if ev.Has(fsnotify.Create) {
		w.look(name)
		return
	}
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		if _, known := w.pending[name]; known && !exists(w.s.path(dirNew, name)) {
			w.drop(name)
		}
	}
}

func (w *watcher) drop(name string) {
	p := w.pending[name]
	delete(w.pending, name)
	w.emit(WatchEvent{Op: Gone, ID: p.id})
}

// look settles one name in new/ and reports what happened to it.
func (w *watcher) look(name string) {
	req, err := w.s.settle(name, w.opt.Now())
	w.settled(name, req, err)
}

// lookAll looks at names, a rescan's batch, settling them on a few
// goroutines at once (reading and decoding every file is most of what a
// rescan of a flood costs) and reporting each, in order, as soon as it and
// those before it are settled, as look would.
func (w *watcher) lookAll(names []string) {
	workers := min(runtime.GOMAXPROCS(0), 4, len(names))
	if workers < 2 {
		for _, name := range names {
			w.look(name)
		}
		return
	}
	type settled struct {
		req  *Request
		err  error
		done chan struct{}
	}
	out := make([]settled, len(names))
	for i := range out {
		out[i].done = make(chan struct{})
	}
	now := w.opt.Now()
	var next atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(names); i = int(next.Add(1) - 1) {
				select {
				case <-stop:
					return
				default:
				}
				out[i].req, out[i].err = w.s.settle(names[i], now)
				close(out[i].done)
			}
		})
	}
	defer wg.Wait()
	defer close(stop)
	for i, name := range names {
		select {
		case <-out[i].done:
		case <-w.ctx.Done():
			return
		}
		w.settled(name, out[i].req, out[i].err)
		out[i] = settled{}
	}
}

// settled records and reports what settling name gave.
func (w *watcher) settled(name string, req *Request, err error) {
	old, known := w.pending[name]
	switch {
	case err == nil:
		w.pending[name] = pendingFile{id: req.ID, digest: req.digest, expires: req.ExpiresAt, stat: req.stamp, seen: w.scan}
		if !known || old.digest == [32]byte{} || old.digest != req.digest {
			w.emit(WatchEvent{Op: Pending, ID: req.ID, Request: req})
		}
		return
	case errors.Is(err, ErrBusy):
		// Another process is acting on it; its event will follow. Still
		// in new/: not to be dropped by this rescan.
		if known {
			old.seen = w.scan
			w.pending[name] = old
		}
		return
	}
	if known {
		delete(w.pending, name)
	}
	var inv *InvalidError
	switch {
	case errors.As(err, &inv):
		w.emit(WatchEvent{Op: Invalid, ID: stemOf(name), Err: err})
	case errors.Is(err, ErrExpired):
		w.emit(WatchEvent{Op: Expired, ID: stemOf(name)})
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrClaimed), errors.Is(err, ErrResulted):
		if known {
			w.emit(WatchEvent{Op: Gone, ID: stemOf(name)})
		}
	default:
		if known {
			w.emit(WatchEvent{Op: Gone, ID: stemOf(name)})
		}
		w.emit(WatchEvent{Op: Problem, ID: stemOf(name), Err: err})
	}
}

// rescan compares new/ with what the watcher knows, expires what is due
// (and what its writer abandoned), and recovers orphaned claims in cur/.
func (w *watcher) rescan() {
	w.recover()
	dir, err := os.Open(w.s.path(dirNew, ""))
	if err != nil {
		w.emit(WatchEvent{Op: Problem, Err: fmt.Errorf("queue: scan: %w", err)})
		return
	}
	defer dir.Close()
	w.scan++
	now := w.opt.Now()
	for {
		// A batch at a time: a burst of 10,000 requests is not read
		// into memory at once.
		entries, err := dir.ReadDir(1024)
		var look []string
		for _, e := range entries {
			name := e.Name()
			p, known := w.pending[name]
			if known && !p.expired(now) && !w.s.WriterGone(p.id) {
				if fi, err := e.Info(); err == nil && stampOf(fi) == p.stat {
					p.seen = w.scan
					w.pending[name] = p
					continue
				}
			}
			look = append(look, name)
		}
		w.lookAll(look)
		if w.ctx.Err() != nil {
			return // a batch cut short: nothing is dropped for it
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			w.emit(WatchEvent{Op: Problem, Err: fmt.Errorf("queue: scan: %w", err)})
			return // nothing dropped on a partial scan
		}
	}
	for name, p := range w.pending {
		if p.seen != w.scan {
			w.drop(name)
		}
	}
}

// recover answers interrupted the orphaned claims in cur/. Ids already
// known to be finished are skipped without a stat.
func (w *watcher) recover() {
	ids, err := w.s.claimedIDs()
	if err != nil {
		w.emit(WatchEvent{Op: Problem, Err: err})
		return
	}
	for _, id := range ids {
		if w.finished[id] {
			continue
		}
		if exists(w.s.ResultPath(id)) {
			w.finished[id] = true
			continue
		}
		ok, err := w.s.recoverOne(id, false)
		switch {
		case ok:
			w.finished[id] = true
			delete(w.faults, id)
			w.emit(WatchEvent{Op: Interrupted, ID: id})
		case err != nil && w.faults[id] != faultKind(err):
			// Said once per fault, not at every rescan.
			w.faults[id] = faultKind(err)
			w.emit(WatchEvent{Op: Problem, ID: id, Err: err})
		}
	}
}
