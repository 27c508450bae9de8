package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluice-dev/sluice/queue"
)

// interrupted is the cause of a writer's context when a signal ends it.
type interrupted struct{ sig os.Signal }

func (e interrupted) Error() string { return fmt.Sprintf("interrupted (%v)", e.sig) }

// signalContext ends with an interrupted cause on SIGINT, SIGTERM or
// SIGHUP, once ready has returned. The first signal.Notify of a process
// waits ~0.2 ms for the runtime's signal goroutine to start; it is done
// on a goroutine of its own, so that the writer reads its input and
// opens the spool meanwhile, and ready waits for it before anything is
// queued. The handler is not undone: the process exits right after (as
// signal.Stop costs ~0.1 ms a run).
func signalContext() (ctx context.Context, ready func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan struct{})
	go func() {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
		close(done)
		cancel(interrupted{<-sigs})
	}()
	return ctx, func() { <-done }
}

// submitAndWait queues req and waits for its result, streaming the log to
// logTo if not nil. From the moment the request is in the spool, an
// interrupt withdraws it rather than leave it for someone to approve
// unwatched (ctx, from signalContext, is ready).
func submitAndWait(ctx context.Context, sp *queue.Spool, req *queue.Request, logTo io.Writer) (*queue.Result, error) {
	return sp.Send(ctx, req, queue.SendOptions{Output: logTo, Actor: loginName})
}

// interruptCode is the exit status for a writer a signal stopped:
// 128+n, as a shell reports it; false when err is not that.
func interruptCode(err error) (int, bool) {
	var in interrupted
	if !errors.As(err, &in) {
		return 0, false
	}
	return 128 + signum(in.sig), true
}
