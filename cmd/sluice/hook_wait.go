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
