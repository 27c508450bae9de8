// Package hook answers AI coding agents' pre-tool hooks: Claude Code's
// PreToolUse, Codex's PreToolUse (Claude Code's format) and Gemini CLI's
// BeforeTool. Each agent's input is decoded strictly (exact key names; a
// key twice, or a case variant of a known key, is refused), mapped to a
// decide-mode request, queued with queue.Spool.Send, and the decision is
// written back in the agent's own format.
//
// A hook fails closed and never hangs: with nobody there to decide, or no
// decision in time, it answers the fallback (ask or deny), and an allow is
// believed only when the audit log holds the decision.
package hook

import (
	"encoding/json"
	"io"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// Decision is what a hook tells the agent.
type Decision string

// The decisions every agent's hook protocol knows in some form.
const (
	Allow Decision = "allow"
	Deny  Decision = "deny"
	Ask   Decision = "ask" // the agent's own permission prompt takes over
)

// Answer is a decision and why.
type Answer struct {
	Decision Decision
	Reason   string
	// Input, when set, replaces the tool's input: a person edited the
	// command before approving it, or the command is to run confined.
	Input json.RawMessage
}

// Agent is what differs between agents: how their input becomes a
// request and how the answer is written.
type Agent struct {
	Name     string // the subcommand: claude, gemini, codex
	ID       string // the request's agent field: claude-code, gemini-cli, codex
	Synopsis string
	Help     string
	// request maps the agent's hook input to a request (without id,
	// times, mode or agent), or to an answer given at once (a malformed
	// input, an edit the agent itself would refuse).
	request func(data []byte) (*queue.Request, *Answer)
	// write prints the answer in the agent's format.
	write func(w io.Writer, a Answer)
	// shell is the name of the agent's shell tool, and command the
	// member of its input holding the command line.
	shell string
	// fallback is the default Fallback; nil for Ask. FallbackHelp says
	// what it is, for --help.
	fallback     func() Decision
	FallbackHelp string
}

// Write prints a in the agent's format.
func (a *Agent) Write(w io.Writer, ans Answer) { a.write(w, ans) }

// Request maps hook input to a request, or to an answer given at once.
func (a *Agent) Request(data []byte) (*queue.Request, *Answer) { return a.request(data) }

// Agents are the agents sluice answers hooks for.
var Agents = []*Agent{Claude, Codex, Gemini}

// Lookup finds an agent by its subcommand name.
func Lookup(name string) *Agent {
	for _, a := range Agents {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// Limits of a hook.
const (
	MaxInput    = queue.MaxRequestSize // bigger input is refused (deny)
	DefaultWait = 110 * time.Second    // under the agents' hook timeouts
	Grace       = 2 * time.Second      // after the wait, for an actor caught mid-answer
	// Margin is how much longer than the wait an agent's hook timeout
	// must be, so that sluice answers before the agent kills the hook.
	Margin = 10 * time.Second
	// unservedGrace is how long a waiting hook lets the spool go without
	// an engine (a console restarting in place) before it answers.
	unservedGrace = time.Second
)

// Fallback is what the agent is answered, by default, when nobody
// decides: what it honours. Claude Code shows its own prompt on ask;
// Codex runs the tool on ask (it honours only deny), and Gemini CLI
// without a terminal turns ask into a prompt nobody answers, so both get
// deny.
func (a *Agent) Fallback() Decision {
	if a.fallback != nil {
		return a.fallback()
	}
	return Ask
}
