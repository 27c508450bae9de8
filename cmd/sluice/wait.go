package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// How often a waiting writer looks at the log while no wake-up came: fast
// while output flows, backing off to maxPoll when idle. The result itself
// arrives through the wake FIFO at once.
const (
	minPoll = 5 * time.Millisecond
	maxPoll = 100 * time.Millisecond
)

// errWithdrawn says the writer was interrupted and took its request back.
type errWithdrawn struct{ sig os.Signal }

func (e errWithdrawn) Error() string {
	return fmt.Sprintf("interrupted (%v); the request was withdrawn before anyone acted on it", e.sig)
}

// errAbandoned says the writer was interrupted while its request ran.
type errAbandoned struct{ sig os.Signal }

func (e errAbandoned) Error() string {
	return fmt.Sprintf("interrupted (%v) while the request was being acted on; its result will still be written", e.sig)
}

// waitFor waits for request req's result, following its log into logTo
// (when not nil) while it runs. When the request's expires_at has passed
// and nobody answered it, waitFor answers it expired itself, so a writer
// never waits forever for a console that is not running. On SIGINT, SIGTERM
// or SIGHUP (delivered on sigs) it withdraws a request nobody has claimed
// yet.
func waitFor(sp *queue.Spool, w *queue.Waiter, req *queue.Request, logTo io.Writer, sigs <-chan os.Signal) (*queue.Result, error) {
	lf := &logFollower{path: sp.LogPath(req.ID), to: logTo}
	defer lf.close()
	poll := minPoll
	lastRecover := time.Now()
	for {
		res, err := w.Wait(poll)
		if err == nil {
			lf.drain()
			return res, nil
		}
		if !errors.Is(err, queue.ErrNoResult) {
			return nil, err
		}
		if lf.drain() > 0 {
			poll = minPoll
		} else {
			poll = min(poll*2, maxPoll)
		}
		select {
		case sig := <-sigs:
			return nil, withdraw(sp, req.ID, sig)
		default:
		}
		// An actor that died mid-run leaves the claim orphaned; with no
		// console running nobody would answer it, so check now and then.
		if time.Since(lastRecover) > 2*time.Second {
			lastRecover = time.Now()
			sp.RecoverID(req.ID)
		}
		if req.Expired(time.Now()) {
			// Claim answers an expired request itself; a request someone is
			// running is theirs to finish.
			if c, err := sp.Claim(req.ID, time.Now()); err == nil {
				c.Close() // cannot happen for an expired request; release it
			}
		}
	}
}

// withdraw takes back a request nobody has claimed, answering it expired.
func withdraw(sp *queue.Spool, id string, sig os.Signal) error {
	if !withdrawWhy(sp, id, "withdrawn: the waiting writer was interrupted") {
		return errAbandoned{sig}
	}
	return errWithdrawn{sig}
}

// withdrawWhy takes back a request nobody has claimed, answering it
// expired with reason, and reports whether it was still unclaimed (false:
// an actor has it, and its result will come).
func withdrawWhy(sp *queue.Spool, id, reason string) bool {
	c, err := sp.Claim(id, time.Now())
	if err != nil {
		return false
	}
	if sp.Recorder != nil {
		ev := queue.NewEvent(queue.EventExpired, c.Request)
		ev.Actor, ev.Status, ev.Reason = loginName(), queue.StatusExpired, reason
		if sp.Recorder.Record(ev) != nil {
			// Unrecorded, it must not be answered: the claim is left to be
			// recovered (answered interrupted, and recorded) by the next
			// actor.
			c.Close()
			return true
		}
	}
	_ = c.Finish(queue.Result{Status: queue.StatusExpired, Decision: queue.Deny, DecidedBy: queue.ByHuman, Reason: reason})
	return true
}

// logFollower copies what is appended to a request's log.
type logFollower struct {
	path string
	to   io.Writer
	f    *os.File
	buf  []byte
}

// drain copies everything new in the log and returns how many bytes.
func (l *logFollower) drain() int {
	if l.to == nil {
		return 0
	}
	if l.f == nil {
		f, err := os.OpenFile(l.path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != nil {
			return 0
		}
		if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
			f.Close()
			return 0
		}
		l.f = f
		l.buf = make([]byte, 64<<10)
	}
	total := 0
	for {
		n, err := l.f.Read(l.buf)
		if n > 0 {
			l.to.Write(l.buf[:n])
			total += n
		}
		if err != nil || n == 0 {
			return total
		}
	}
}

func (l *logFollower) close() {
	if l.f != nil {
		l.f.Close()
	}
}
