package main

import (
	"context"
	"fmt"
	"io"

	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/internal/engcmd"
	"github.com/sluice-dev/sluice/queue"
)

// submitAndWait queues req and waits for its result, streaming the log to
// logTo if not nil, and saying on errw, once per change, why it still waits
// when the engine tells (a result it cannot write yet). An interrupt (ctx,
// from signals) withdraws the request rather than leave it for
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
	return sp.Send(ctx, req, queue.SendOptions{Output: logTo, Actor: engcmd.LoginName, Verify: verifier("", sp), Notice: notice})
}
