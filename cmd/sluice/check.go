package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/sluice-dev/sluice/exec"
	"github.com/sluice-dev/sluice/exec/sandbox"
	"github.com/sluice-dev/sluice/internal/app"
	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/policy"
)

const checkHelp = `Print the policy's verdict for one command line, without queueing it.
The words after -- are joined with single spaces and parsed as one shell
line, so both of these work:
  sluice check -- 'git status; rm -rf ~'
  sluice check -- git status

Every simple command in the line is judged (pipelines, lists, subshells,
substitutions, the commands that sudo, env, xargs, find -exec, sh -c …
run); the line gets the strictest action and the most severe category of
its parts. The human format shows each part, its category, its action and
the rule or default that decided it.

Exit status: 0 whatever the verdict; 2 on a usage or policy-file error.
`

// policyFlags are the flags that choose a policy and where it applies.
type policyFlags struct {
	file  string
	cwd   string
	spool string // the --spool in effect, to protect it
}

func (pf *policyFlags) register(fs *cli.FlagSet) {
	fs.StringVar(&pf.file, "policy", "", "policy `FILE` layered over the embedded default (env SLUICE_POLICY; default $XDG_CONFIG_HOME/sluice/policy.toml)")
	fs.StringVar(&pf.cwd, "cwd", "", "judge as if run in `DIR` (default: the current directory)")
}

// load loads the policy for pf.cwd: the embedded default, the user's file
// and the project's .sluice/policy.toml.
func (pf *policyFlags) load() (*policy.Policy, policy.Env, error) {
	dir, err := absDir(pf.cwd)
	if err != nil {
		return nil, policy.Env{}, err
	}
	opts := policy.Options{User: pf.file, UserRequired: pf.file != "", Project: policy.ProjectFile(dir),
		ProgramDirs: filepath.SplitList(os.Getenv("PATH")), Shell: exec.ShellDialect()}
	if opts.User == "" {
		if env := os.Getenv("SLUICE_POLICY"); env != "" {
			opts.User, opts.UserRequired = env, true
		} else {
			opts.User = app.DefaultPolicyFile()
		}
	}
	opts.Protect = app.OwnPaths(opts.User, pf.spool)
	p, err := policy.Load(opts)
	return p, policy.Env{Cwd: dir, Roots: policy.Roots(dir)}, err
}

func cmdCheck(args []string, std cli.Stdio, g *cli.Globals) int {
	fs := cli.NewFlags("check", "[--policy FILE] [--cwd DIR] [--json] -- COMMAND...", checkHelp, std, g).Unused("config")
	var pf policyFlags
	pf.register(fs)
	asJSON := fs.Bool("json", false, "print the verdict as one JSON object")
	words, code, ok := fs.ParseArgs(args, true)
	if !ok {
		return code
	}
	pf.spool = g.Spool
	if len(words) == 0 {
		return cli.UsageErr(std, "check", "no command given (sluice check -- COMMAND...)")
	}
	p, env, err := pf.load()
	if err != nil {
		fmt.Fprintf(std.Err, "sluice check: %v\n", err)
		return cli.ExitUsage
	}
	for _, w := range p.Warnings() {
		fmt.Fprintf(std.Err, "sluice check: warning: %s\n", w)
	}
	v := p.Check(strings.Join(words, " "), env)
	if *asJSON {
		// The verdict of protocol section 4, and the profile a run of the line
		// would be confined to.
		writeJSON(std.Out, struct {
			*policy.Verdict
			Profile string `json:"profile"`
		}{v, v.Profile()})
		return cli.ExitOK
	}
	fmt.Fprintf(std.Out, "%s  %s  risk %s\n", strings.ToUpper(v.Action.String()), v.Category, v.Risk)
	tw := tabwriter.NewWriter(std.Out, 0, 0, 2, ' ', 0)
	for _, c := range v.Commands {
		argv := make([]string, len(c.Argv))
		for i, a := range c.Argv {
			argv[i] = cli.Show(a)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.Action, c.Category, clip(strings.Join(argv, " "), 48), cli.Show(c.Rule))
	}
	tw.Flush()
	if prof, err := sandbox.ParseProfile(v.Profile()); err == nil {
		fmt.Fprintf(std.Out, "runs confined: %s (%s)\n", prof, prof.Describe())
	}
	if len(v.Reasons) > 0 {
		fmt.Fprintln(std.Out, "because:")
		for _, r := range v.Reasons {
			fmt.Fprintf(std.Out, "  - %s\n", cli.Show(r))
		}
	}
	return cli.ExitOK
}
