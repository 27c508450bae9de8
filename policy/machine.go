package policy

import (
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// Machine is what a verdict needs to know of the machine its request
// would run on. The policy decides; the machine only answers: how runs
// are confined under the configuration in force, whether the kernel can
// confine them, and whether runs can be checkpointed. cmd implements it
// over the runner's settings, the kernel and git. Each is asked at each
// verdict, so a reloaded config.toml applies to the next one.
type Machine interface {
	// Sandbox is the sandbox mode of the configuration in force.
	Sandbox() SandboxMode
	// CannotConfine says why this machine cannot confine a run; nil
	// when it can.
	CannotConfine() error
	// CannotCheckpoint says why no run can be checkpointed here
	// (checkpoints turned off, git missing); "" when runs can be.
	CannotCheckpoint() string
}

// SandboxMode is config.toml's sandbox: how the engine confines runs.
type SandboxMode int

const (
	// SandboxPrefer confines where the machine can, and runs unconfined
	// where it cannot.
	SandboxPrefer SandboxMode = iota
	// SandboxRequire confines where it can; where it cannot, nothing
	// runs without a person: what the policy would allow asks instead.
	SandboxRequire
	// SandboxOff never confines.
	SandboxOff
)

// finish is v, the policy p's verdict on req, as this machine and the
// agent session's trusts leave it: first what cannot run with a
// checkpoint here asks; then the session's trusts may allow what asks (a
// trusted go test runs in a hook's request too); then, under sandbox =
// "require", what would run unconfined asks.
func (j *Judge) finish(p *Policy, req *queue.Request, v *Verdict) *Verdict {
	if v.Action == AllowWithCheckpoint && j.Machine != nil {
		if why := j.cannotCheckpoint(req); why != "" {
			v.Action = Ask
			v.Reasons = append(v.Reasons, "allow_with_checkpoint asks here: "+why)
		}
	}
	if j.Trusts != nil && v.Action == Ask {
		if pats, origins := j.Trusts.trustRules(req, time.Now()); len(pats) > 0 {
			v = trusted(p, req, v, pats, origins)
		}
	}
	if v.Action != Allow || req.Kind != queue.KindExec || j.Machine == nil {
		return v
	}
	if j.Machine.Sandbox() != SandboxRequire {
		return v
	}
	if err := j.Machine.CannotConfine(); err != nil {
		v.Action = Ask
		v.Reasons = append(v.Reasons, "sandbox = \"require\" and this machine cannot confine runs: "+err.Error())
	}
	return v
}

// cannotCheckpoint says why a request the policy allows with a checkpoint
// cannot have one here (it then asks), or "".
func (j *Judge) cannotCheckpoint(req *queue.Request) string {
	switch {
	case req.EffectiveMode() == queue.ModeDecide:
		return "the agent runs it itself, so sluice cannot checkpoint the project first"
	case req.Kind == queue.KindTool:
		return "a tool call is the agent's to carry out"
	}
	if why := j.Machine.CannotCheckpoint(); why != "" {
		return why
	}
	if req.Kind != queue.KindExec {
		return ""
	}
	if j.Machine.Sandbox() == SandboxOff {
		return `sandbox = "off": the run would not be confined`
	}
	if err := j.Machine.CannotConfine(); err != nil {
		return "this machine cannot confine runs: " + err.Error()
	}
	return ""
}
