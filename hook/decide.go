package hook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// Options tune one hook call.
type Options struct {
	// Wait is how long the request waits for a decision (its
	// expires_at); the fallback answers after it (and Grace).
	Wait time.Duration
	// Fallback answers when nobody decides: Ask or Deny.
	Fallback Decision
	// Actor is who the audit log names when the hook withdraws its
	// request (called only then).
	Actor func() string
	// Verify checks an allow before it is believed
	// (queue.SendOptions.Verify): the caller's audit.Verifier, so that
	// package hook does not read the audit log itself. An allow it does
	// not back (nil backs none) is denied, saying the result could not be
	// verified.
	Verify queue.Verifier
	// Confine, when set, gives the command line that runs an allowed
	// shell command confined to its verdict's profile, or "" to run it
	// as the agent asked; the answer then carries it as updated input.
	Confine func(req *queue.Request, res *queue.Result) string
}

// Decide reads a hook's input from in, queues it on sp and waits for the
// decision. It always answers: malformed input is denied, and whatever
// keeps a decision from arriving answers opt.Fallback. ctx ending (the
// agent gave up on the hook) withdraws the request.
func Decide(ctx context.Context, a *Agent, in io.Reader, sp *queue.Spool, opt Options) Answer {
	data, err := io.ReadAll(io.LimitReader(in, MaxInput+1))
	switch {
	case err != nil:
		return Answer{Decision: Deny, Reason: "sluice: cannot read the hook input: " + err.Error()}
	case len(data) > MaxInput:
		return Answer{Decision: Deny, Reason: fmt.Sprintf("sluice: the hook input is over the %d byte limit", MaxInput)}
	case len(strings.TrimSpace(string(data))) == 0:
		return Answer{Decision: Deny, Reason: "sluice: no hook input on stdin"}
	}
	req, now := a.request(data)
	if now != nil {
		return *now
	}
	created := time.Now().UTC()
	req.Version, req.ID, req.Mode, req.Agent = queue.Version, queue.NewID(), queue.ModeDecide, a.ID
	req.CreatedAt, req.ExpiresAt = created, created.Add(opt.Wait)
	if err := req.Validate(); err != nil {
		return Answer{Decision: Deny, Reason: "sluice: " + err.Error()}
	}
	fall := func(why string) Answer { return Answer{Decision: opt.Fallback, Reason: "sluice: " + why} }
	if sp == nil {
		return fall("no spool to queue the request in")
	}
	// A writer with nobody to answer it would wait out the wait for
	// nothing.
	if !sp.Serving() {
		return fall(fmt.Sprintf("no sluice console or 'sluice serve' is watching %s, so nobody can decide; start 'sluice console' there", sp.Dir()))
	}
	res, err := sp.Send(ctx, req, queue.SendOptions{
		Unserved: unservedGrace, AfterExpiry: Grace, Actor: opt.Actor,
		Why:    func(error) string { return "the agent stopped waiting for the hook" },
		Verify: opt.Verify,
	})
	switch {
	case errors.Is(err, queue.ErrUnverified):
		// Not the fallback: someone answered in the engine's place.
		return Answer{Decision: Deny, Reason: "sluice: " + err.Error()}
	case errors.Is(err, queue.ErrNoDecision):
		return fall(fmt.Sprintf("no decision within %s, and the request is still being acted on", opt.Wait+Grace))
	case errors.Is(err, queue.ErrUnserved), errors.Is(err, queue.ErrWithdrawn), errors.Is(err, queue.ErrAbandoned):
		return fall(err.Error())
	case err != nil:
		return fall("could not queue the request: " + err.Error())
	}
	ans := FromResult(res, opt.Wait, opt.Fallback)
	if ans.Decision != Allow {
		return ans
	}
	if res.Command != "" && res.Command != req.Command {
		// The agent runs its own tool call: approving the original would
		// run what the person did not approve.
		if ans.Input = editedInput(data, res.Command); ans.Input == nil {
			return Answer{Decision: Deny, Reason: "sluice: a person approved an edited command, which cannot be passed back: " + res.Command}
		}
		ans.Reason = "sluice: approved by a person, who edited the command"
	}
	if opt.Confine != nil && req.Kind == queue.KindExec {
		cmd := res.Command
		if cmd == "" {
			cmd = req.Command
		}
		r := *req
		r.Command = cmd
		if wrapped := opt.Confine(&r, res); wrapped != "" {
			if in := editedInput(data, wrapped); in != nil {
				ans.Input = in
				ans.Reason += "; runs confined: " + wrapped
			}
		}
	}
	return ans
}
