package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

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
the rule or default that decided it, then the hosts a networked run of the
line reaches without asking (with why) and those it never reaches
(network_allow and network_deny of config.toml and the policy files).

Exit status: 0 whatever the verdict; 2 on a usage or policy-file error.
`

func cmdCheck(args []string, std cli.Stdio, g *cli.Globals) int {
	fs := cli.NewFlags("check", "[--policy FILE] [--cwd DIR] [--json] -- COMMAND...", checkHelp, std, g)
	var pf app.PolicyFlags
	pf.Register(fs)
	asJSON := fs.Bool("json", false, "print the verdict as one JSON object")
	words, code, ok := fs.ParseArgs(args, true)
	if !ok {
		return code
	}
	pf.Spool = g.Spool
	if len(words) == 0 {
		return cli.UsageErr(std, "check", "no command given (sluice check -- COMMAND...)")
	}
	// config.toml's network_allow and network_deny are in the verdict's
	// hosts; a configuration that does not load leaves them out.
	if cfg, err := app.LoadConfig(g.Config); err == nil {
		pf.Config = cfg
	} else {
		fmt.Fprintf(std.Err, "sluice check: warning: %v (its network_allow and network_deny are not applied)\n", err)
	}
	p, env, err := pf.Load()
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
		cli.WriteJSON(std.Out, struct {
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
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.Action, c.Category, cli.Clip(strings.Join(argv, " "), 48), cli.Show(c.Rule))
	}
	tw.Flush()
	if prof, err := sandbox.ParseProfile(v.Profile()); err == nil {
		fmt.Fprintf(std.Out, "runs confined: %s (%s)\n", prof, prof.Describe())
	}
	app.PrintHosts(std, v)
	if len(v.Reasons) > 0 {
		fmt.Fprintln(std.Out, "because:")
		for _, r := range v.Reasons {
			fmt.Fprintf(std.Out, "  - %s\n", cli.Show(r))
		}
	}
	return cli.ExitOK
}
