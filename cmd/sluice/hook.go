package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// A hook answers an agent's "may I run this tool?" question (Claude Code's
// PreToolUse, Gemini CLI's BeforeTool, Codex's PreToolUse). It queues the
// call as a decide-mode request, waits for the console or 'sluice serve'
// to decide, and prints the agent's decision JSON. It fails closed and
// never hangs: with nobody there to decide, or no decision in time, it
// answers the fallback (ask or deny), and it exits 0 whatever happens
// except on a usage error of its own command line (2, which every agent
// treats as "blocked").

const hookHelp = `Answer an AI coding agent's pre-tool hook: the tool call the agent is about
to make (a shell command, a file edit, any other tool) is queued as a
decide-mode request; the console or 'sluice serve' decides it by policy or
by a person; the decision goes back to the agent, which runs the tool
itself.

Usage: sluice hook AGENT [--wait DUR] [--fallback ask|deny] < hook-input.json

Agents:
  claude   Claude Code PreToolUse hook
  gemini   Gemini CLI BeforeTool hook
  codex    Codex PreToolUse hook (Claude Code's format; Bash, apply_patch, MCP)

Run 'sluice hook AGENT --help' for the agent's settings snippet.
`

// hookDecision is what a hook tells the agent.
type hookDecision string

// The decisions every agent's hook protocol knows in some form.
const (
	hookAllow hookDecision = "allow"
	hookDeny  hookDecision = "deny"
	hookAsk   hookDecision = "ask" // the agent's own permission prompt takes over
)

// hookAnswer is a decision and why.
type hookAnswer struct {
	Decision hookDecision
	Reason   string
	// Input, when set, replaces the tool's input: a person edited the
	// command before approving it, and the agent must run that one.
	Input json.RawMessage
}

// hookAgent is what differs between agents: how their input becomes a
// request and how the answer is written.
type hookAgent struct {
	name     string // the subcommand: claude, gemini, codex
	agent    string // the request's agent field
	synopsis string
	help     string
	// request maps the agent's hook input to a request (without id,
	// times, mode or agent), or to an answer given at once (a malformed
	// input, an edit the agent itself would refuse).
	request func(data []byte) (*queue.Request, *hookAnswer)
	// write prints the answer in the agent's format.
	write func(w io.Writer, a hookAnswer)
}

// Limits of a hook.
const (
	maxHookInput    = queue.MaxRequestSize // bigger input is refused (deny)
	defaultHookWait = 110 * time.Second    // under the agents' hook timeouts
	hookGrace       = 2 * time.Second      // after --wait, for an actor caught mid-answer
)

func cmdHook(args []string, std stdio, g *globals) int {
	if len(args) == 0 {
		fmt.Fprint(std.err, hookHelp)
		return exitUsage
	}
	switch args[0] {
	case "claude":
		return runHook(claudeHook, args[1:], std, g)
	case "codex":
		return runHook(codexHook, args[1:], std, g)
	case "gemini":
		return runHook(geminiHook, args[1:], std, g)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(std.out, hookHelp)
		return exitOK
	}
	return usageErr(std, "hook", "unknown agent %q (want claude, gemini or codex)", args[0])
}

// runHook is one hook call for agent a.
func runHook(a *hookAgent, args []string, std stdio, g *globals) int {
	fs := newFlags("hook "+a.name, a.synopsis, a.help, std, g)
	wait := fs.Duration("wait", defaultHookWait, "answer the fallback if nobody decides within `DUR`")
	fallback := fs.String("fallback", "", "what to answer when nobody decides: `ask` (the agent's own prompt) or deny (env SLUICE_HOOK_FALLBACK; default ask)")
	pos, code, ok := fs.parse(args, true)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageErr(std, "hook "+a.name, "takes the hook input on stdin, not as arguments")
	}
	if *wait <= 0 || *wait > queue.MaxTimeout {
		return usageErr(std, "hook "+a.name, "--wait must be between 1ms and %s", queue.MaxTimeout)
	}
	fb, err := hookFallback(*fallback)
	if err != nil {
		if *fallback != "" {
			return usageErr(std, "hook "+a.name, "%v", err)
		}
		// A bad environment is not the agent's usage error: refuse every
		// call, loudly, rather than guess.
		a.write(std.out, hookAnswer{Decision: hookDeny, Reason: "sluice: " + err.Error()})
		return exitOK
	}
	ans := decideHook(a, std.in, g, *wait, fb)
	ans.Reason = show(ans.Reason)
	a.write(std.out, ans)
	return exitOK
}

// hookFallback reads --fallback, else SLUICE_HOOK_FALLBACK, else ask.
func hookFallback(flagValue string) (hookDecision, error) {
	v, from := flagValue, "--fallback"
	if v == "" {
		v, from = os.Getenv("SLUICE_HOOK_FALLBACK"), "SLUICE_HOOK_FALLBACK"
	}
	switch hookDecision(v) {
	case "", hookAsk:
		return hookAsk, nil
	case hookDeny:
		return hookDeny, nil
	}
	return "", fmt.Errorf("%s=%q is not ask or deny", from, v)
}

// decideHook reads the hook input, queues it and waits for the decision.
func decideHook(a *hookAgent, in io.Reader, g *globals, wait time.Duration, fallback hookDecision) hookAnswer {
	data, err := io.ReadAll(io.LimitReader(in, maxHookInput+1))
	switch {
	case err != nil:
		return hookAnswer{Decision: hookDeny, Reason: "sluice: cannot read the hook input: " + err.Error()}
	case len(data) > maxHookInput:
		return hookAnswer{Decision: hookDeny, Reason: fmt.Sprintf("sluice: the hook input is over the %d byte limit", maxHookInput)}
	case len(strings.TrimSpace(string(data))) == 0:
		return hookAnswer{Decision: hookDeny, Reason: "sluice: no hook input on stdin"}
	}
	req, now := a.request(data)
	if now != nil {
		return *now
	}
	created := time.Now().UTC()
	req.Version, req.ID, req.Mode, req.Agent = queue.Version, queue.NewID(), queue.ModeDecide, a.agent
	req.CreatedAt, req.ExpiresAt = created, created.Add(wait)
	if err := req.Validate(); err != nil {
		return hookAnswer{Decision: hookDeny, Reason: "sluice: " + err.Error()}
	}
	fall := func(why string) hookAnswer { return hookAnswer{Decision: fallback, Reason: "sluice: " + why} }
	sp, err := g.openSpool()
	if err != nil {
		return fall(err.Error())
	}
	// A writer with nobody to answer it would wait out --wait for nothing.
	if !sp.Serving() {
		return fall(fmt.Sprintf("no sluice console or 'sluice serve' is watching %s, so nobody can decide", sp.Dir()))
	}
	res, err := hookWait(sp, req)
	var ws errWithdrawn
	var wa errAbandoned
	switch {
	case errors.Is(err, errUnserved):
		return fall(err.Error())
	case errors.Is(err, errNoDecision):
		return fall(fmt.Sprintf("no decision within %s, and the request is still being acted on", wait+hookGrace))
	case errors.As(err, &ws), errors.As(err, &wa):
		return fall(err.Error())
	case err != nil:
		return fall("could not queue the request: " + err.Error())
	}
	ans := hookResult(res, wait, fallback)
	if ans.Decision == hookAllow && res.Command != "" && res.Command != req.Command {
		// The agent runs its own tool call: approving the original would
		// run what the person did not approve.
		if ans.Input = editedInput(data, res.Command); ans.Input == nil {
			return hookAnswer{Decision: hookDeny, Reason: "sluice: a person approved an edited command, which cannot be passed back: " + res.Command}
		}
		ans.Reason = "sluice: approved by a person, who edited the command"
	}
	return ans
}
