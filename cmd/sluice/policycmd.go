package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/sluice-dev/sluice/policy"
)

const policyHelp = `Inspect the policy.

  sluice policy show [--policy FILE] [--cwd DIR]
      the effective policy: the action for each category and every rule,
      each with where it comes from (the embedded default, your file, the
      project's .sluice/policy.toml)
  sluice policy lint FILE
      check a policy file (unknown keys, bad globs, bad actions); exit 0 if
      it loads, 2 with the file, line and a hint if not
`

func cmdPolicy(args []string, std stdio, g *globals) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) == 0 {
			fmt.Fprint(std.err, "Usage: sluice policy show|lint ...\n\n"+policyHelp)
			return exitUsage
		}
		fmt.Fprint(std.out, "Usage: sluice policy show|lint ...\n\n"+policyHelp)
		return exitOK
	}
	switch args[0] {
	case "show":
		return policyShow(args[1:], std, g)
	case "lint":
		return policyLint(args[1:], std, g)
	}
	return usageErr(std, "policy", "unknown subcommand %q (show or lint)", args[0])
}

func policyShow(args []string, std stdio, g *globals) int {
	fs := newFlags("policy show", "[--policy FILE] [--cwd DIR]", "Print the effective policy and where each part comes from.\n", std, g)
	var pf policyFlags
	pf.register(fs)
	pos, code, ok := fs.parse(args, true)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageErr(std, "policy show", "takes no arguments")
	}
	p, _, err := pf.load()
	if err != nil {
		fmt.Fprintf(std.err, "sluice policy show: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(std.out, "# %d program names known to the knowledge table\n\n[defaults]\n", p.Programs())
	for c := policy.ReadOnly; c <= policy.HostEscape; c++ {
		act, origin := p.DefaultFor(c)
		fmt.Fprintf(std.out, "%-16s = %-7q # %s\n", c, act.String(), origin)
	}
	tw := tabwriter.NewWriter(std.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(std.out, "\n# rules (any matching deny wins, then ask, then allow)")
	fmt.Fprintln(tw, "ACTION\tMATCH\tORIGIN\tREASON")
	for _, r := range p.Rules() {
		match := "command " + r.Command
		if r.Path != "" {
			match = r.Access + " " + r.Path
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Action, match, r.Origin, r.Reason)
	}
	tw.Flush()
	for _, w := range p.Warnings() {
		fmt.Fprintf(std.out, "# warning: %s\n", strings.TrimSpace(w))
	}
	return exitOK
}

func policyLint(args []string, std stdio, g *globals) int {
	fs := newFlags("policy lint", "FILE", "Check a policy file; exit 2 naming the file, line and problem if it does not load.\n", std, g)
	pos, code, ok := fs.parse(args, true)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageErr(std, "policy lint", "give one policy file")
	}
	if err := policy.Lint(pos[0]); err != nil {
		fmt.Fprintf(std.err, "sluice policy lint: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(std.out, "%s: ok\n", pos[0])
	return exitOK
}
