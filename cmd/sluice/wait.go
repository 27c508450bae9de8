package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/queue"
)

// interrupted is the cause of a writer's context when a signal ends it.
type interrupted struct{ sig os.Signal }

func (e interrupted) Error() string { return fmt.Sprintf("interrupted (%v)", e.sig) }

// signalContext ends with an interrupted cause on SIGINT, SIGTERM or
// SIGHUP, so that the writer withdraws its request itself, names who did
// it, and exits 128+n. The handler is installed on a goroutine of its
// own and nothing waits for it: the first signal.Notify of a process
// takes ~0.2 ms, which an agent's every command would otherwise pay. A
// signal that comes before it is in place kills the writer as it would
// any program, and the engine withdraws the request it left, as it does
// for a writer killed with SIGKILL (queue.Spool.WriterGone). The handler
// is not undone: the process exits right after.
func signalContext() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
		cancel(interrupted{<-sigs})
	}()
	return ctx
}

// submitAndWait queues req and waits for its result, streaming the log to
// logTo if not nil, and saying on errw, once per change, why it still waits
// when the engine tells (a result it cannot write yet). An interrupt (ctx,
// from signalContext) withdraws the request rather than leave it for
// someone to approve unwatched. A result that says the request was allowed
// or ran, and that the audit log does not back, is a queue.UnverifiedError.
func submitAndWait(ctx context.Context, sp *queue.Spool, req *queue.Request, logTo, errw io.Writer, name string) (*queue.Result, error) {
	last := ""
	notice := func(text string) {
		if text != last {
			last = text
			fmt.Fprintf(errw, "sluice %s: still waiting: %s\n", name, cli.Show(text))
		}
	}
	return sp.Send(ctx, req, queue.SendOptions{Output: logTo, Actor: loginName, Verify: verifier("", sp), Notice: notice})
}

// interruptCode is the exit status for a writer a signal stopped:
// 128+n, as a shell reports it; false when err is not that.
func interruptCode(err error) (int, bool) {
	var in interrupted
	if !errors.As(err, &in) {
		return 0, false
	}
	return 128 + cli.Signum(in.sig), true
}
