package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// submitAndAwait queues req, unless no console or serve would see it, and
// waits for its result. The request is withdrawn (answered expired) if
// nobody has claimed it when the client cancels the call, the server
// stops, its expires_at passes, or no console or serve has been on the
// spool for orphanGrace (default 5s). A request already claimed is the
// actor's to finish: only a cancelled call stops waiting for it. A result
// that says the request was allowed or ran, and that m.Verify does not
// back, is a queue.UnverifiedError: never reported as run, nor as not.
func (m *Server) submitAndAwait(ctx context.Context, req *queue.Request) (*queue.Result, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if !m.Spool.Serving() {
		return nil, fmt.Errorf("no sluice console or serve is running on %s; start `sluice console` (or `sluice serve`) there, then try again", m.Spool.Dir())
	}
	wctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	defer context.AfterFunc(ctx, func() { cancel(errors.New("the MCP client cancelled the tool call")) })()
	if m.Base != nil {
		defer context.AfterFunc(m.Base, func() { cancel(errors.New("the sluice MCP server stopped")) })()
	}
	grace := m.orphanGrace
	if grace == 0 {
		grace = 5 * time.Second
	}
	m.Logf("queued %s (%s): %s", req.ID, req.Agent, req.Summary())
	res, err := m.Spool.Send(wctx, req, queue.SendOptions{Unserved: grace, Actor: func() string { return m.Actor },
		Why: func(cause error) string { return cause.Error() }, Verify: m.Verify})
	switch {
	case errors.Is(err, queue.ErrUnserved):
		err = fmt.Errorf("the sluice console or serve on %s stopped before anyone decided; the request was withdrawn. Start `sluice console`, then try again", m.Spool.Dir())
	case err == nil && res.Status == queue.StatusExpired && req.Expired(time.Now()):
		err = fmt.Errorf("nobody approved or denied the request within %s; it was withdrawn (is anyone watching the console?)", m.Wait)
	}
	if err != nil {
		m.Logf("%s: %v", req.ID, err)
		return nil, err
	}
	m.Logf("%s: %s", req.ID, res.Status)
	return res, nil
}

// describeRun is run_command's text for the agent, and whether it is an
// error result: anything but a command that ran to its end.
func describeRun(res *queue.Result, logPath string) (string, bool) {
	output := strings.ReplaceAll(res.OutputTail, "\r\n", "\n") // the pty's line ends
	var b strings.Builder
	if res.Command != "" {
		fmt.Fprintf(&b, "a person edited the command before approving it; ran: %s\n", res.Command)
	}
	isErr := true
	switch res.Status {
	case queue.StatusDone:
		isErr = false
		if res.ExitCode != nil {
			fmt.Fprintf(&b, "exit %d\n", *res.ExitCode)
		} else {
			b.WriteString("done, without an exit code\n")
		}
	case queue.StatusDenied:
		b.WriteString(denial(res) + "\n")
	case queue.StatusTimeout:
		fmt.Fprintf(&b, "killed at its timeout after %s\n", time.Duration(res.DurationMS)*time.Millisecond)
	case queue.StatusKilled:
		b.WriteString("killed by a person while it ran\n")
	case queue.StatusStopped:
		fmt.Fprintf(&b, "stopped%s\n", reasonSuffix(res.Reason))
	default:
		fmt.Fprintf(&b, "not run: %s%s\n", res.Status, reasonSuffix(res.Reason))
	}
	if n := len(res.ChangedFiles); n > 0 {
		// What the command did to the project, for the model to know.
		fmt.Fprintf(&b, "changed %d file(s):", n)
		for _, c := range res.ChangedFiles {
			fmt.Fprintf(&b, " %s (%s);", c.Path, c.Change)
		}
		b.WriteString("\n")
		if cp := res.Checkpoint; cp != nil && len(cp.Overlapped) > 0 {
			fmt.Fprintf(&b, "(it ran at the same time as %s in the same project: some of these files may be that run's)\n", strings.Join(cp.Overlapped, ", "))
		}
	}
	if res.Ran() {
		if res.OutputBytes > int64(len(res.OutputTail)) {
			fmt.Fprintf(&b, "(output: the last %d of %d bytes", len(res.OutputTail), res.OutputBytes)
			if logPath != "" {
				fmt.Fprintf(&b, "; all of it is in %s", logPath)
			}
			b.WriteString(")\n")
		}
		b.WriteString(output)
	}
	return strings.TrimRight(b.String(), "\n"), isErr
}

// describeChange is the text for a write_file or edit_file result, and
// whether it is an error result (anything but applied).
func describeChange(res *queue.Result, out fileOut) (string, bool) {
	switch res.Status {
	case queue.StatusDone:
		return fmt.Sprintf("applied to %s\n%s", out.Path, out.Diff), false
	case queue.StatusDenied:
		return fmt.Sprintf("%s\nthe change to %s was not applied", denial(res), out.Path), true
	}
	return fmt.Sprintf("not applied to %s: %s%s", out.Path, res.Status, reasonSuffix(res.Reason)), true
}

// denial says who denied a request and why.
func denial(res *queue.Result) string {
	if res.DecidedBy == queue.ByPolicy {
		return "denied by policy" + reasonSuffix(res.Reason)
	}
	if res.Reason == "" || res.Reason == "denied by a person" {
		return "denied by a person"
	}
	return "denied by a person" + reasonSuffix(res.Reason)
}

func reasonSuffix(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + reason
}
