package audit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluice-dev/sluice/queue"
)

// Log is an audit log opened for appending. It is safe for concurrent use
// by goroutines, and any number of processes may append to one file: each
// append holds an exclusive flock on the file while it reads the last line
// and writes its own.
type Log struct {
	path string
	now  func() time.Time

	mu     sync.Mutex // serialises writes in this process; flock does across processes
	f      *os.File   // nil after a failed reopen, until the next append reopens it
	closed bool
	enc    *encoder
	buf    []byte

	// Group commit (commit): appends waiting for the one being written.
	qmu        sync.Mutex
	queue      []*pendingAppend
	committing bool
}

var _ queue.Recorder = (*Log)(nil)

// ErrNotLog is returned by Append when the end of the file is not audit
// events and is more than a crash could leave: the file is not an audit
// log, or was damaged beyond what the log repairs by itself.
var ErrNotLog = errors.New("audit: not an audit log, or damaged at its end")

// PermError says why an audit log is unsafe to append to and how to fix it.
type PermError struct {
	Path    string
	Problem string
	Fix     string
}

func (e *PermError) Error() string {
	return fmt.Sprintf("audit: %s %s; %s", e.Path, e.Problem, e.Fix)
}

// The most a crash leaves after the last event: the line it cut short, and
// the cut-short repairs of later crashes, should the repairs crash too.
const (
	maxTornLines = 16
	maxTornBytes = 4 << 20
)

// Open opens the audit log at path for appending, creating it (mode 0600)
// and its directory (mode 0700) if missing. It refuses, with a *PermError,
// a log that is not a regular file, is owned by another user, or is
// writable by group or others, and a directory others may write to (unless
// it is sticky, as /tmp is).
func Open(path string) (*Log, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("audit: log path: %w", err)
	}
	l := &Log{path: abs, now: time.Now, enc: newEncoder()}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *Log) open() error {
	dir := filepath.Dir(l.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("audit: create log directory: %w", err)
	}
	if err := checkDir(dir); err != nil {
		return err
	}
	f, err := os.OpenFile(l.path, os.O_RDWR|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if errors.Is(err, syscall.ELOOP) {
		return &PermError{l.path, "is a symlink", "point --audit (or SLUICE_AUDIT) at the real file"}
	}
	if err != nil {
		return fmt.Errorf("audit: open log: %w", err)
	}
	if err := checkFile(f, l.path); err != nil {
		f.Close()
		return err
	}
	l.f = f
	return nil
}

func checkDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("audit: log directory: %w", err)
	}
	if !fi.IsDir() {
		return &PermError{dir, "is not a directory", "point --audit (or SLUICE_AUDIT) at a file in a directory"}
	}
	if perm := fi.Mode(); perm.Perm()&0o022 != 0 && perm&fs.ModeSticky == 0 {
		return &PermError{dir, fmt.Sprintf("is writable by group or others (mode %04o), who could replace the log", perm.Perm()),
			fmt.Sprintf("fix it with: chmod 700 %s", dir)}
	}
	return nil
}

func checkFile(f *os.File, p string) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("audit: log: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return &PermError{p, "is not a regular file", "point --audit (or SLUICE_AUDIT) at a regular file"}
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return &PermError{p, fmt.Sprintf("is owned by uid %d, not by you (uid %d)", st.Uid, os.Geteuid()),
			"use a log of your own (--audit or SLUICE_AUDIT)"}
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return &PermError{p, fmt.Sprintf("is writable by group or others (mode %04o)", perm),
			fmt.Sprintf("fix it with: chmod 600 %s", p)}
	}
	return nil
}

// Path returns the log's absolute path.
func (l *Log) Path() string { return l.path }

// Close closes the log.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// Record implements queue.Recorder.
func (l *Log) Record(ev queue.Event) error {
	_, err := l.Append(ev)
	return err
}

// Append writes ev as the next line and syncs it to disk before returning.
// It sets Seq, TS (now, UTC), Prev and Hash, whatever ev held there, and
// returns the event as written. Every other field is data, recorded as it
// is (an invalid request's id too). If the file ends in a line cut short by
// a crash, an EventAuditRepaired line naming those bytes comes first.
func (l *Log) Append(ev queue.Event) (queue.Event, error) {
	if ev.Event == "" {
		return ev, errors.New("audit: append: the event has no name")
	}
	evs := []queue.Event{ev}
	err := l.commit(evs)
	switch {
	case err == nil, errors.Is(err, ErrNotLog):
		return evs[0], err
	}
	return evs[0], fmt.Errorf("audit: append %s event to %s: %w", ev.Event, l.path, err)
}

// RecordAll appends evs as consecutive lines with one write and one sync:
// all are durable when it returns nil. It implements queue.BatchRecorder
// (the engine records "queued", "auto_allowed" and "started" together:
// two fsyncs less per run, 0.2-0.4 ms each on a virtual disk).
func (l *Log) RecordAll(evs []queue.Event) error {
	for _, ev := range evs {
		if ev.Event == "" {
			return errors.New("audit: append: an event has no name")
		}
	}
	evs = append([]queue.Event(nil), evs...)
	err := l.commit(evs)
	if err != nil && !errors.Is(err, ErrNotLog) {
		return fmt.Errorf("audit: append %d events to %s: %w", len(evs), l.path, err)
	}
	return err
}

// An append waiting to be committed: its events (filled in as written)
// and, once done is closed, its error. lead tells a waiter woken before
// its append was written that it is to commit the next group itself.
type pendingAppend struct {
	evs  []queue.Event
	err  error
	lead bool
	done chan struct{}
}

// commit writes evs (Seq, TS, Prev and Hash filled in) and syncs them.
// Group commit: appends that arrive while another goroutine's write and
// fsync are under way wait, and the next committer writes all of them
// with one write and one fsync. Each append's lines stay consecutive; one
// that cannot be encoded fails alone.
func (l *Log) commit(evs []queue.Event) error {
	me := &pendingAppend{evs: evs, done: make(chan struct{})}
	l.qmu.Lock()
	l.queue = append(l.queue, me)
	if l.committing {
		l.qmu.Unlock()
		<-me.done
		if !me.lead {
			return me.err
		}
	} else {
		l.committing = true
		l.qmu.Unlock()
	}
	// This goroutine commits the group that has gathered, itself in it.
	l.qmu.Lock()
	group := l.queue
	l.queue = nil
	l.qmu.Unlock()
	l.write(group)
	l.qmu.Lock()
	if len(l.queue) > 0 {
		next := l.queue[0]
		next.lead = true
		close(next.done)
	} else {
		l.committing = false
	}
	l.qmu.Unlock()
	for _, p := range group {
		if p != me {
			close(p.done)
		}
	}
	return me.err
}

// write appends group's events under the file lock and sets each one's
// error.
func (l *Log) write(group []*pendingAppend) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fail := func(err error) {
		for _, p := range group {
			if p.err == nil {
				p.err = err
			}
		}
	}
	if l.closed {
		fail(errors.New("audit: append: the log is closed"))
		return
	}
	if l.f == nil {
		if err := l.open(); err != nil {
			fail(err)
			return
		}
	}
	if err := l.lock(); err != nil {
		fail(err)
		return
	}
	defer unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	fail(l.appendLocked(group))
}

// lock takes the exclusive lock on the log file, reopening the path first
// if the file was moved or removed since it was opened (log rotation).
func (l *Log) lock() error {
	for tries := 0; ; tries++ {
		if err := flock(l.f, unix.LOCK_EX); err != nil {
			return fmt.Errorf("audit: lock %s: %w", l.path, err)
		}
		if queue.SameFile(l.f, l.path) || tries == 3 {
			return nil
		}
		l.f.Close()
		l.f = nil
		if err := l.open(); err != nil {
			return err
		}
	}
}

// appendLocked writes group's events after the last line and syncs them.
// An append whose events cannot be encoded gets its error and is left
// out; the others are written. The returned error is the write's or the
// sync's, which every append in the group shares.
func (l *Log) appendLocked(group []*pendingAppend) error {
	fi, err := l.f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	st, err := scanTail(l.f, size)
	if errors.Is(err, ErrNotLog) {
		return fmt.Errorf("%w: %s: %v; if it is not your audit log, point --audit (or SLUICE_AUDIT) elsewhere, else move it aside and see what 'sluice audit verify' says of it",
			ErrNotLog, l.path, err)
	}
	if err != nil {
		return err
	}
	now := l.now().UTC().Truncate(time.Microsecond)
	l.buf = l.buf[:0]
	if st.needNewline {
		l.buf = append(l.buf, '\n')
	}
	if st.tornOff < size {
		rep, err := l.repairEvent(st, size, now)
		if err != nil {
			return err
		}
		if l.buf, err = l.enc.appendLine(l.buf, &rep); err != nil {
			return err
		}
		st.seq, st.hash = rep.Seq, rep.Hash
	}
	written := 0
	for _, p := range group {
		mark, seq, hash := len(l.buf), st.seq, st.hash
		for i := range p.evs {
			ev := &p.evs[i]
			ev.Seq, ev.TS, ev.Prev = seq+1, now, hash
			start := len(l.buf)
			if l.buf, err = l.enc.appendLine(l.buf, ev); err != nil {
				p.err = err
				break
			}
			if n := int64(len(l.buf) - start); n > maxLine {
				p.err = fmt.Errorf("the line would be %d bytes, over the %d byte limit", n, maxLine)
				break
			}
			seq, hash = ev.Seq, ev.Hash
		}
		if p.err != nil {
			l.buf = l.buf[:mark] // none of its lines, the chain goes on from the last append
			continue
		}
		st.seq, st.hash = seq, hash
		written++
	}
	if written == 0 && !st.needNewline && st.tornOff >= size {
		return nil
	}
	if err := writeAll(l.f, l.buf); err != nil {
		return err
	}
	// fdatasync was no faster here: an append changes the size, which
	// fdatasync must sync too.
	return l.f.Sync()
}

// testHookWrite, when set by a test, replaces the write of a line so the
// test can cut it short.
var testHookWrite func(f *os.File, p []byte) error

func writeAll(f *os.File, p []byte) error {
	if testHookWrite != nil {
		return testHookWrite(f, p)
	}
	_, err := f.Write(p) // os.File.Write writes it all or returns an error
	return err
}

// flock takes a lock on f, waiting for it.
func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
