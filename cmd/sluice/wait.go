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
// SIGHUP. The handler is not undone: the process exits right after (as
// signal.Stop costs ~0.1 ms a run).
func signalContext() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() { cancel(interrupted{<-sigs}) }()
	return ctx
}

// submitAndWait queues req and waits for its result, streaming the log to
// logTo if not nil. From the moment the request is in the spool, an
// interrupt withdraws it rather than leave it for someone to approve
// unwatched.
func submitAndWait(sp *queue.Spool, req *queue.Request, logTo io.Writer) (*queue.Result, error) {
	return sp.Send(signalContext(), req, queue.SendOptions{Output: logTo, Actor: loginName()})
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
