package app

import (
	osexec "os/exec"
	"sync"

	"github.com/sluice-dev/sluice/exec"
	"github.com/sluice-dev/sluice/exec/sandbox"
	"github.com/sluice-dev/sluice/policy"
)

// machine is policy.Machine over the runner's settings in force (so a
// reloaded config.toml changes what it says), the kernel and git: what
// the policy asks of this machine before its verdict is whole.
type machine struct {
	runner      *exec.Runner
	checkpoints bool // runs are checkpointed (config checkpoints)
}

var _ policy.Machine = machine{}

// Sandbox implements policy.Machine.
func (m machine) Sandbox() policy.SandboxMode {
	switch c := m.runner.Confinement(); {
	case c == nil || c.Mode == exec.SandboxOff:
		return policy.SandboxOff
	case c.Mode == exec.SandboxRequire:
		return policy.SandboxRequire
	}
	return policy.SandboxPrefer
}

// CannotConfine implements policy.Machine.
func (machine) CannotConfine() error {
	_, err := sandbox.Available()
	return err
}

// CannotCheckpoint implements policy.Machine.
func (m machine) CannotCheckpoint() string {
	switch {
	case !m.checkpoints:
		return "checkpoints = false in config.toml"
	case !haveGit():
		return "git is not installed, and checkpoints need it"
	}
	return ""
}

// haveGit reports whether git is installed (looked up once).
var haveGit = sync.OnceValue(func() bool {
	_, err := osexec.LookPath("git")
	return err == nil
})

// SandboxStatus says how this machine confines runs under conf, or, with
// off true, why it does not.
func SandboxStatus(conf *exec.Confine) (text string, off bool) {
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
