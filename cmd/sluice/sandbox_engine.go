package main

import (
	osexec "os/exec"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/exec"
	"github.com/sluice-dev/sluice/exec/sandbox"
	"github.com/sluice-dev/sluice/policy"
	"github.com/sluice-dev/sluice/queue"
)

// requireSandbox is the judge under sandbox = "require": where the kernel
// cannot confine a run, nothing runs without a person, so what the policy
// would allow alone asks instead.
// The mode is read at each verdict, from the runner's settings in force,
// so a reloaded config.toml changes it.
type requireSandbox struct {
	inner       queue.Judge
	runner      *exec.Runner
	checkpoints bool        // runs are checkpointed (config checkpoints)
	trust       *trustStore // trust windows; nil: none
}

// policyJudge is the policy's judge under j (which may be wrapped in
// requireSandbox).
func policyJudge(j queue.Judge) *policy.Judge {
	if r, ok := j.(requireSandbox); ok {
		j = r.inner
	}
	return j.(*policy.Judge)
}

// sandboxStatus says how this machine confines runs under conf, or, with
// off true, why it does not.
func sandboxStatus(conf *exec.Confine) (text string, off bool) {
	if conf == nil || conf.Mode == exec.SandboxOff {
		return `sandbox = "off" in config.toml`, true
	}
	how, err := sandbox.Available()
	if err != nil {
		return err.Error(), true
	}
	if why := sandbox.BoxRefused(conf.Box); why != "" {
		return how + " (runs that write: no namespaces, " + why + ")", false
	}
	return how + ", namespaces for runs that write", false
}

// cannotCheckpoint says why a request the policy allows with a checkpoint
// cannot have one here (it then asks), or "".
func (r requireSandbox) cannotCheckpoint(req *queue.Request) string {
	switch {
	case req.EffectiveMode() == queue.ModeDecide:
		return "the agent runs it itself, so sluice cannot checkpoint the project first"
	case req.Kind == queue.KindTool:
		return "a tool call is the agent's to carry out"
	case !r.checkpoints:
		return "checkpoints = false in config.toml"
	case !haveGit():
		return "git is not installed, and checkpoints need it"
	}
	if c := r.runner.Confinement(); req.Kind == queue.KindExec && (c == nil || c.Mode == exec.SandboxOff) {
		return `sandbox = "off": the run would not be confined`
	}
	if _, err := sandbox.Available(); req.Kind == queue.KindExec && err != nil {
		return "this machine cannot confine runs: " + err.Error()
	}
	return ""
}

// haveGit reports whether git is installed (looked up once).
var haveGit = sync.OnceValue(func() bool {
	_, err := osexec.LookPath("git")
	return err == nil
})

// Judge implements queue.Judge.
func (r requireSandbox) Judge(req *queue.Request) queue.Verdict {
	v := r.inner.Judge(req)
	// First what cannot run with a checkpoint here asks; then the agent
	// session's trusts may allow what asks (a trusted go test runs in a
	// hook's request too).
	if v.Action == queue.ActionAllowWithCheckpoint {
		if why := r.cannotCheckpoint(req); why != "" {
			v.Action = queue.ActionAsk
			v.Reasons = append(v.Reasons, "allow_with_checkpoint asks here: "+why)
		}
	}
	if r.trust != nil && v.Action == queue.ActionAsk {
		if pats, origins := r.trust.trustRules(req, time.Now()); len(pats) > 0 {
			if p, err := policyJudge(r.inner).Policy(req.Cwd); err == nil {
				v = trusted(p, req, v, pats, origins)
			}
		}
	}
	if v.Action != queue.ActionAllow || req.Kind != queue.KindExec {
		return v
	}
	if c := r.runner.Confinement(); c == nil || c.Mode != exec.SandboxRequire {
		return v
	}
	if _, err := sandbox.Available(); err != nil {
		v.Action = queue.ActionAsk
		v.Reasons = append(v.Reasons, "sandbox = \"require\" and this machine cannot confine runs: "+err.Error())
	}
	return v
}
