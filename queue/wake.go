package queue

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// notifyWake writes one byte to out/<id>.wake, if that is a FIFO, without
// blocking, and removes it. No reader, or no FIFO, is not an error: the
// writer falls back to polling.
func (s *Spool) notifyWake(id string) {
	p := s.WakePath(id)
	fi, err := os.Lstat(p)
	if err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		return
	}
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == nil {
		// The agent may swap the FIFO for a file between the Lstat and the
		// open: write only to what is really a FIFO.
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO {
			_, _ = unix.Write(fd, []byte{1})
		}
		unix.Close(fd)
	}
	os.Remove(p)
}

// WriterGone reports whether request id's writer has stopped waiting
// without withdrawing it: its wake FIFO is there, was made over
// writerGrace ago, and nobody holds it open for reading (a non-blocking
// open for writing fails with ENXIO), so the process that made it exited
// or was killed (SIGKILL included). A writer that made no FIFO (it polls,
// or does not wait) is never gone; one that opens its FIFO only after it
// submitted has writerGrace to do so.
func (s *Spool) WriterGone(id string) bool {
	if !s.localFIFOs() {
		// A spool shared between machines (or with a VM): the writer's
		// FIFO is open on another kernel, and this one sees no reader.
		return false
	}
	p := s.WakePath(id)
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if !errors.Is(err, unix.ENXIO) {
			return false // no FIFO (ENOENT), or not one (ELOOP, EACCES...)
		}
		// ENXIO is also what a socket gives: only a FIFO counts.
		fi, lerr := os.Lstat(p)
		return lerr == nil && fi.Mode()&fs.ModeNamedPipe != 0 && time.Since(fi.ModTime()) >= writerGrace
	}
	unix.Close(fd)
	return false
}

// writerGrace is how long after making its FIFO a writer may leave it
// without a reader (protocol section 3).
var writerGrace = time.Second

// ErrWriterGone: a claim found the request's writer gone (WriterGone) and
// answered it expired instead; it comes wrapped with ErrExpired.
var ErrWriterGone = errors.New("the process that submitted it stopped waiting (exited or was killed), so it was withdrawn")

// writerGoneReason is what the audit log and the result say about a
// request withdrawn because its writer is gone.
const writerGoneReason = "withdrawn: the process that submitted it stopped waiting (exited or was killed) before anyone acted on it"

// Waiter waits for one request's result. Create it before submitting the
// request: it makes the FIFO out/<id>.wake, which the actor writes to once
// the result is in place. Where FIFOs are not possible it polls.
//
// Short-lived writers use a Waiter rather than inotify: a process that
// exits holding an inotify watch is held up by the kernel (about 14 ms).
type Waiter struct {
	s      *Spool
	id     string
	rd, wr int      // FIFO ends; -1 when polling
	rf     *os.File // rd in the runtime's poller
	notice string   // what the actor said last through the FIFO, not yet taken
}

// noticeMark starts a line an actor writes into a writer's FIFO to say why
// the writer still waits (TellWriter); a wake byte is 1.
const noticeMark = 2

// maxNotice bounds a notice: one write of it is atomic on a FIFO.
const maxNotice = 512

// TellWriter says to request id's waiting writer, through its FIFO (which
// needs no space on a full disk), why it still waits. The FIFO stays, for
// the wake that comes with the result. A writer that polls hears nothing.
func (s *Spool) TellWriter(id, text string) {
	p := s.WakePath(id)
	fi, err := os.Lstat(p)
	if err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		return
	}
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return
	}
	text = strings.ReplaceAll(text, "\n", " ")
	if len(text) > maxNotice-2 {
		text = text[:maxNotice-2]
	}
	_, _ = unix.Write(fd, append(append([]byte{noticeMark}, text...), '\n'))
}

// Notice returns what the actor last said through the FIFO about why the
// writer waits (TellWriter), once, or "".
func (w *Waiter) Notice() string {
	n := w.notice
	w.notice = ""
	return n
}

// NewWaiter prepares to wait for request id's result.
func (s *Spool) NewWaiter(id string) (*Waiter, error) {
	if !ValidID(id) {
		return nil, fmt.Errorf("queue: wait: %q is not a request id", id)
	}
	w := &Waiter{s: s, id: id, rd: -1, wr: -1}
	p := s.WakePath(id)
	if err := unix.Mkfifo(p, 0o600); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("%w: %s (its wake FIFO exists)", ErrExists, id)
		}
		return w, nil // e.g. a filesystem without FIFOs: poll
	}
	rd, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		os.Remove(p)
		return w, nil
	}
	// Holding a write end ourselves keeps poll from reporting a hang-up
	// once the actor's write end closes (and on systems that report one
	// before any writer came), so poll wakes only for the byte.
	wr, err := unix.Open(p, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(rd)
		os.Remove(p)
		return w, nil
	}
	w.rd, w.wr = rd, wr
	// rd is non-blocking, so the runtime's poller takes it: a wait parks
	// the goroutine instead of holding a thread in poll(2), which the
	// runtime answers by starting another thread and polling itself.
	w.rf = os.NewFile(uintptr(rd), "wake")
	return w, nil
}

// Wait waits up to d for the result and returns it, or ErrNoResult if it
// has not come. Callers loop, doing other work (following the log) between
// calls.
func (w *Waiter) Wait(d time.Duration) (*Result, error) {
	if res, err := w.s.ReadResult(w.id); !errors.Is(err, ErrNoResult) {
		return res, err
	}
	if w.rf == nil {
		time.Sleep(d)
	} else {
		var buf [maxNotice + 16]byte
		if err := w.rf.SetReadDeadline(time.Now().Add(d)); err != nil {
			time.Sleep(d)
		} else if n, err := w.rf.Read(buf[:]); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			time.Sleep(d) // not for the byte (cannot happen while we hold a write end)
		} else if i := bytes.IndexByte(buf[:n], noticeMark); i >= 0 {
			if line, _, ok := bytes.Cut(buf[i+1:n], []byte{'\n'}); ok {
				w.notice = string(line)
			}
		}
	}
	return w.s.ReadResult(w.id)
}

// Close releases the FIFO and removes it if the actor did not.
func (w *Waiter) Close() {
	if w.rd >= 0 {
		w.rf.Close() // and rd with it
		unix.Close(w.wr)
		w.rd, w.wr, w.rf = -1, -1, nil
		if fi, err := os.Lstat(w.s.WakePath(w.id)); err == nil && fi.Mode()&fs.ModeNamedPipe != 0 {
			os.Remove(w.s.WakePath(w.id))
		}
	}
}
