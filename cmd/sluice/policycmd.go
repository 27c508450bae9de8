package main

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/internal/app"
	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/policy"
	"github.com/sluice-dev/sluice/queue"
)

const policyHelp = `Inspect the policy.

  sluice policy show [--policy FILE] [--cwd DIR]
      the effective policy: the action for each category and every rule,
      each with where it comes from (the embedded default, your file, the
      project's .sluice/policy.toml)
  sluice policy lint FILE
      check a policy file (unknown keys, bad globs, bad actions, match and
      not_match examples that disagree with their rule); exit 0 if it
      loads, 2 with the file, line and a hint if not
  sluice policy rules [--policy FILE] [--cwd DIR] [--audit FILE]
      every rule with its origin (file:line), its scope (everywhere, or
      the project it is limited to) and how many past requests in the
      audit log it matched; then every network_allow and network_deny
      entry with its origin
  sluice policy revoke FILE:LINE
      take the rule starting at that line out of your policy file (as
      'sluice policy rules' names it); everything else in the file,
      comments included, stays as it is
  sluice policy revoke --host HOST [--policy FILE]
      take HOST out of your policy file's network_allow (as 'A' on a
      connection in the console put it there, with the console's comment
      above it when it was the last); networked runs then ask again
`

func cmdPolicy(args []string, std cli.Stdio, g *cli.Globals) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) == 0 {
			fmt.Fprint(std.Err, "Usage: sluice policy show|lint|rules|revoke ...\n\n"+policyHelp)
			return cli.ExitUsage
		}
		fmt.Fprint(std.Out, "Usage: sluice policy show|lint|rules|revoke ...\n\n"+policyHelp)
		return cli.ExitOK
	}
	switch args[0] {
	case "show":
		return policyShow(args[1:], std, g)
	case "lint":
		return policyLint(args[1:], std, g)
	case "rules":
		return policyRules(args[1:], std, g)
	case "revoke":
		return policyRevoke(args[1:], std, g)
	}
	return cli.UsageErr(std, "policy", "unknown subcommand %q (show, lint, rules or revoke)", args[0])
}

func policyShow(args []string, std cli.Stdio, g *cli.Globals) int {
	fs := cli.NewFlags("policy show", "[--policy FILE] [--cwd DIR]", "Print the effective policy and where each part comes from.\n", std, g)
	var pf app.PolicyFlags
	pf.Register(fs)
	pos, code, ok := fs.ParseArgs(args, true)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return cli.UsageErr(std, "policy show", "takes no arguments")
	}
	p, _, err := pf.Load()
	if err != nil {
		fmt.Fprintf(std.Err, "sluice policy show: %v\n", err)
		return cli.ExitUsage
	}
	fmt.Fprintf(std.Out, "# %d program names known to the knowledge table\n\n[defaults]\n", p.Programs())
	for c := policy.ReadOnly; c <= policy.HostEscape; c++ {
		act, origin := p.DefaultFor(c)
		fmt.Fprintf(std.Out, "%-16s = %-7q # %s\n", c, act.String(), origin)
	}
	tw := tabwriter.NewWriter(std.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(std.Out, "\n# rules (any matching deny wins, then ask, then allow)")
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
		fmt.Fprintf(std.Out, "# warning: %s\n", strings.TrimSpace(w))
	}
	return cli.ExitOK
}

func policyLint(args []string, std cli.Stdio, g *cli.Globals) int {
	fs := cli.NewFlags("policy lint", "FILE", "Check a policy file; exit 2 naming the file, line and problem if it does not load.\n", std, g)
	pos, code, ok := fs.ParseArgs(args, true)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return cli.UsageErr(std, "policy lint", "give one policy file")
	}
	if err := policy.Lint(pos[0]); err != nil {
		fmt.Fprintf(std.Err, "sluice policy lint: %v\n", err)
		return cli.ExitUsage
	}
	fmt.Fprintf(std.Out, "%s: ok\n", pos[0])
	return cli.ExitOK
}

func policyRules(args []string, std cli.Stdio, g *cli.Globals) int {
	fs := cli.NewFlags("policy rules", "[--policy FILE] [--cwd DIR] [--audit FILE]", "List every rule: origin, scope, and the past requests it matched.\n", std, g)
	var pf app.PolicyFlags
	pf.Register(fs)
	auditFile := fs.String("audit", "", app.AuditFlagHelp)
	pos, code, ok := fs.ParseArgs(args, true)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return cli.UsageErr(std, "policy rules", "takes no arguments")
	}
	// config.toml's network_allow and network_deny are listed too.
	if cfg, err := app.LoadConfig(g.Config); err == nil {
		pf.Config = cfg
	} else {
		fmt.Fprintf(std.Err, "sluice policy rules: %v (its network_allow and network_deny left out)\n", err)
	}
	p, _, err := pf.Load()
	if err != nil {
		fmt.Fprintf(std.Err, "sluice policy rules: %v\n", err)
		return cli.ExitUsage
	}
	counts := map[*policy.Rule]int{}
	path, err := app.AuditPath(*auditFile)
	if err == nil {
		if err := countRuleMatches(p, path, counts); err != nil {
			fmt.Fprintf(std.Err, "sluice policy rules: %v (counts left out)\n", err)
		}
	}
	tw := tabwriter.NewWriter(std.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ORIGIN\tACTION\tMATCH\tSCOPE\tPAST\tREASON")
	for _, r := range p.Rules() {
		match, past := "command "+cli.Show(r.Command), strconv.Itoa(counts[r])
		if r.Path != "" {
			match, past = r.Access+" "+cli.Show(r.Path), "-"
		}
		match = cli.Clip(match, 60)
		scope := "everywhere"
		if r.Project != "" {
			scope = "project " + cli.Show(app.HomeShort(r.Project))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", cli.Show(r.Origin), r.Action, match, scope, past, cli.Show(r.Reason))
	}
	// What networked runs reach besides their verdict's own hosts.
	for _, h := range p.HostRules() {
		action := "allow"
		if h.Key == "network_deny" {
			action = "deny"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", cli.Show(app.HomeShort(h.Origin)), action, "host "+cli.Clip(cli.Show(h.Host), 55), "everywhere", "-", h.Key)
	}
	tw.Flush()
	return cli.ExitOK
}

// countRuleMatches counts, for each command rule, the exec requests in the
// audit log (their queued lines) it matches.
func countRuleMatches(p *policy.Policy, logPath string, counts map[*policy.Rule]int) error {
	return audit.EachQueuedExec(logPath, func(ev *queue.Event) error {
		for _, r := range p.RulesMatching(ev.Command, policy.Env{Cwd: ev.Cwd}) {
			counts[r]++
		}
		return nil
	})
}

func policyRevoke(args []string, std cli.Stdio, g *cli.Globals) int {
	fs := cli.NewFlags("policy revoke", "FILE:LINE | --host HOST [--policy FILE]",
		"Take one rule out of your policy file, as 'sluice policy rules' names it, or one host out of its network_allow.\n", std, g).Unused("spool", "config")
	host := fs.String("host", "", "take `HOST` (as network_allow writes it: host, *.domain, host:port, IP, CIDR) out of the policy file's network_allow")
	var pf app.PolicyFlags
	pf.RegisterFile(fs)
	pos, code, ok := fs.ParseArgs(args, true)
	if !ok {
		return code
	}
	if *host != "" {
		if len(pos) > 0 {
			return cli.UsageErr(std, "policy revoke", "give either FILE:LINE or --host HOST, not both")
		}
		file := pf.UserFile()
		removed, err := policy.RemoveNetworkAllow(file, *host)
		if err != nil {
			fmt.Fprintf(std.Err, "sluice policy revoke: %s\n", cli.Show(err.Error()))
			return cli.ExitFail
		}
		fmt.Fprintf(std.Out, "removed from %s:\n", file)
		for _, l := range strings.Split(strings.TrimRight(removed, "\r\n"), "\n") {
			fmt.Fprintln(std.Out, cli.Show(strings.TrimRight(l, "\r")))
		}
		return cli.ExitOK
	}
	if len(pos) != 1 {
		return cli.UsageErr(std, "policy revoke", "which rule? give its FILE:LINE from 'sluice policy rules', or --host HOST for a network_allow entry")
	}
	i := strings.LastIndexByte(pos[0], ':')
	line, err := strconv.Atoi(pos[0][i+1:])
	if i <= 0 || err != nil {
		return cli.UsageErr(std, "policy revoke", "%q is not FILE:LINE (see 'sluice policy rules'; a host: --host HOST)", pos[0])
	}
	file := pos[0][:i]
	removed, err := policy.RemoveRule(file, line)
	if err != nil {
		if strings.Contains(err.Error(), "is not the start of a [[rule]] table") {
			err = fmt.Errorf("%w; a network_allow entry comes out with --host HOST", err)
		}
		fmt.Fprintf(std.Err, "sluice policy revoke: %s\n", cli.Show(err.Error()))
		return cli.ExitFail
	}
	fmt.Fprintf(std.Out, "removed from %s:\n%s", file, removed)
	return cli.ExitOK
}
