//go:build mcp

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// How often a waiting tool call looks at its request besides the wake-up
// the result brings: the client's cancellation is noticed within mcpPoll,
// a console gone (or an actor dead) within mcpCheck.
const (
	mcpPoll  = 100 * time.Millisecond
	mcpCheck = time.Second
)

// submitAndAwait queues req, unless no console or serve would see it, and
// waits for its result.
func (m *mcpServer) submitAndAwait(ctx context.Context, req *queue.Request) (*queue.Result, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if !m.sp.Serving() {
		return nil, fmt.Errorf("no sluice console or serve is running on %s; start `sluice console` (or `sluice serve`) there, then try again", m.sp.Dir())
	}
	w, err := m.sp.NewWaiter(req.ID)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	if err := m.sp.Submit(req); err != nil {
		return nil, err
	}
	m.logf("queued %s (%s): %s", req.ID, req.Agent, req.Summary())
	res, err := m.await(ctx, w, req)
	if err != nil {
		m.logf("%s: %v", req.ID, err)
		return nil, err
	}
	m.logf("%s: %s", req.ID, res.Status)
	return res, nil
}

// await waits for req's result. The request is withdrawn (answered
// expired) if nobody has claimed it when the client cancels the call, the
// server stops, its expires_at passes, or no console or serve has been
// on the spool for orphanGrace. A request already claimed is the actor's
// to finish: only a cancelled call stops waiting for it.
func (m *mcpServer) await(ctx context.Context, w *queue.Waiter, req *queue.Request) (*queue.Result, error) {
	grace, every := m.orphanGrace, m.checkEvery
	if grace == 0 {
		grace = 5 * time.Second
	}
	if every == 0 {
		every = mcpCheck
	}
	lastCheck := time.Now()
	var unserved time.Time // since when no engine is on the spool; zero while one is
	for {
		res, err := w.Wait(mcpPoll)
		if err == nil {
			return res, nil
		}
		if !errors.Is(err, queue.ErrNoResult) {
			return nil, err
		}
		now := time.Now()
		if ctx.Err() != nil || m.base.Err() != nil {
			why := "the MCP client cancelled the tool call"
			if ctx.Err() == nil {
				why = "the sluice MCP server stopped"
			}
			if m.withdraw(req.ID, "withdrawn: "+why) {
				return nil, fmt.Errorf("%s; the request was withdrawn before anyone acted on it", why)
			}
			return nil, fmt.Errorf("%s while the request was being acted on; its result will still be written", why)
		}
		if req.Expired(now) && m.withdraw(req.ID, fmt.Sprintf("withdrawn: nobody decided within %s", m.wait)) {
			return nil, fmt.Errorf("nobody approved or denied the request within %s; it was withdrawn (is anyone watching the console?)", m.wait)
		}
		if now.Sub(lastCheck) < every {
			continue
		}
		lastCheck = now
		// An actor that died mid-run leaves its claim orphaned; answer it.
		m.sp.RecoverID(req.ID)
		if !m.pending(req.ID) || m.sp.Serving() {
			unserved = time.Time{}
			continue
		}
		if unserved.IsZero() {
			unserved = now
		}
		if now.Sub(unserved) >= grace && m.withdraw(req.ID, "withdrawn: no console or serve was left on the spool") {
			return nil, fmt.Errorf("the sluice console or serve on %s stopped before anyone decided; the request was withdrawn. Start `sluice console`, then try again", m.sp.Dir())
		}
	}
}

// pending reports whether request id waits in new/.
func (m *mcpServer) pending(id string) bool {
	_, err := os.Lstat(m.sp.RequestPath(id))
	return err == nil
}

// withdraw takes back request id if nobody has claimed it, answering it
// expired with reason (recorded first, as wait.go's withdraw does), and
// reports whether it did.
func (m *mcpServer) withdraw(id, reason string) bool {
	c, err := m.sp.Claim(id, time.Now())
	if errors.Is(err, queue.ErrExpired) {
		return true // Claim answered it expired itself
	}
	if err != nil {
		return false
	}
	if m.sp.Recorder != nil {
		ev := queue.NewEvent(queue.EventExpired, c.Request)
		ev.Actor, ev.Status, ev.Reason = loginName(), queue.StatusExpired, reason
		if err := m.sp.Recorder.Record(ev); err != nil {
			// Unrecorded, it must not be answered: the next actor recovers
			// the claim (answered interrupted, and recorded).
			m.logf("%s: %v", id, err)
			c.Close()
			return true
		}
	}
	if err := c.Finish(queue.Result{Status: queue.StatusExpired, Decision: queue.Deny, DecidedBy: queue.ByHuman, Reason: reason}); err != nil {
		m.logf("%s: %v", id, err)
	}
	return true
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
	default:
		fmt.Fprintf(&b, "not run: %s%s\n", res.Status, reasonSuffix(res.Reason))
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
