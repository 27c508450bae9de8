package main

import (
	"errors"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// errNoDecision says a hook's request had no result even after the grace
// period: an actor claimed it and neither answered nor died.
var errNoDecision = errors.New("no decision")

// errUnserved says the console (or serve) went away while the request
// waited, and nobody else serves the spool: the request was withdrawn.
var errUnserved = errors.New("the sluice console (or serve) quit before anyone decided, and nothing else watches the spool; the request was withdrawn")

// hookServedEvery is how often a waiting hook checks that an engine still
// serves the spool; hookUnservedGrace how long none may before it gives up
// (a console restarting in place comes back within it).
const (
	hookServedEvery   = 250 * time.Millisecond
	hookUnservedGrace = time.Second
)

// hookWait queues req and waits for its result until req.ExpiresAt. Then
// it withdraws the request (answers it expired, as waitFor does), so that
// nobody approves it after the agent was answered; a decision that lands
// at that moment still counts. It never waits past ExpiresAt+hookGrace.
// On SIGINT, SIGTERM or SIGHUP (the agent gave up on the hook) it
// withdraws the request and returns errWithdrawn.
func hookWait(sp *queue.Spool, req *queue.Request) (*queue.Result, error) {
	w, err := sp.NewWaiter(req.ID)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	sigs := make(chan os.Signal, 1)
	// Not stopped: the process exits right after (as in sluice run).
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	if err := sp.Submit(req); err != nil {
		return nil, err
	}
	// The result arrives through the wake FIFO at once; the poll bounds
	// how late a signal or the deadline is noticed.
	lastCheck := time.Now()
	var unserved time.Time // since when no engine serves the spool; zero while one does
	until := func(deadline time.Time) (*queue.Result, error) {
		for {
			d := min(maxPoll, time.Until(deadline))
			if d <= 0 {
				return nil, queue.ErrNoResult
			}
			res, err := w.Wait(d)
			if !errors.Is(err, queue.ErrNoResult) {
				return res, err
			}
			select {
			case sig := <-sigs:
				return nil, withdraw(sp, req.ID, sig)
			default:
			}
			// The agent should not wait out --wait for a console that
			// quit: answer it (with the fallback) as soon as nothing
			// serves the spool.
			if now := time.Now(); now.Sub(lastCheck) >= hookServedEvery {
				lastCheck = now
				switch {
				case sp.Serving():
					unserved = time.Time{}
				case unserved.IsZero():
					unserved = now
				case now.Sub(unserved) >= hookUnservedGrace:
					if withdrawWhy(sp, req.ID, "withdrawn: no sluice console or serve watches the spool any more") {
						return nil, errUnserved
					}
					unserved = time.Time{} // an actor has it: its result will come
				}
			}
		}
	}
	res, err := until(req.ExpiresAt)
	if !errors.Is(err, queue.ErrNoResult) {
		return res, err
	}
	// Claim answers a request past its expires_at expired (and audits
	// it); a claim held by an actor that died is answered interrupted.
	if c, err := sp.Claim(req.ID, time.Now()); err == nil {
		c.Close() // cannot happen past expires_at; release it
	} else if errors.Is(err, queue.ErrClaimed) {
		sp.RecoverID(req.ID)
	}
	res, err = until(time.Now().Add(hookGrace))
	if errors.Is(err, queue.ErrNoResult) {
		return nil, errNoDecision
	}
	return res, err
}
