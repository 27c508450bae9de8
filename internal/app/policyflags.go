package app

import (
	"os"
	"path/filepath"

	"github.com/sluice-dev/sluice/exec"
	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/policy"
)

// PolicyFlags are the flags that choose a policy and where it applies.
type PolicyFlags struct {
	file  string
	cwd   string
	Spool string // the --spool in effect, to protect it
	// Config, when set, is the configuration whose network_allow and
	// network_deny the verdicts take.
	Config *Config
}

func (pf *PolicyFlags) Register(fs *cli.FlagSet) {
	pf.RegisterFile(fs)
	fs.StringVar(&pf.cwd, "cwd", "", "judge as if run in `DIR` (default: the current directory)")
}

// RegisterFile registers --policy alone, for a command that changes the
// file.
func (pf *PolicyFlags) RegisterFile(fs *cli.FlagSet) {
	fs.StringVar(&pf.file, "policy", "", "policy `FILE` layered over the embedded default (env SLUICE_POLICY; default $XDG_CONFIG_HOME/sluice/policy.toml)")
}

// UserFile is the person's policy file pf names: --policy, else
// SLUICE_POLICY, else the default place.
func (pf *PolicyFlags) UserFile() string {
	if pf.file != "" {
		return pf.file
	}
	if env := os.Getenv("SLUICE_POLICY"); env != "" {
		return env
	}
	return DefaultPolicyFile()
}

// Load loads the policy for pf.cwd: the embedded default, the user's file
// and the project's .sluice/policy.toml.
func (pf *PolicyFlags) Load() (*policy.Policy, policy.Env, error) {
	dir, err := cli.AbsDir(pf.cwd)
	if err != nil {
		return nil, policy.Env{}, err
	}
	opts := policy.Options{User: pf.file, UserRequired: pf.file != "", Project: policy.ProjectFile(dir),
		ProgramDirs: filepath.SplitList(os.Getenv("PATH")), Shell: exec.ShellDialect()}
	if opts.User == "" {
		if env := os.Getenv("SLUICE_POLICY"); env != "" {
			opts.User, opts.UserRequired = env, true
		} else {
			opts.User = DefaultPolicyFile()
		}
	}
	opts.Protect = OwnPaths(opts.User, pf.Spool)
	if pf.Config != nil {
		opts.NetworkAllow, opts.NetworkDeny = pf.Config.NetworkAllow, pf.Config.NetworkDeny
	}
	p, err := policy.Load(opts)
	return p, policy.Env{Cwd: dir, Roots: policy.Roots(dir)}, err
}
