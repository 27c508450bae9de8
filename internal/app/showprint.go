package app

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluice-dev/sluice/change"
	"github.com/sluice-dev/sluice/exec/sandbox"
	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/policy"
	"github.com/sluice-dev/sluice/queue"
)

// ShowRequest prints a request's fields, verdict and preview.
func ShowRequest(std cli.Stdio, ent *queue.Entry, pf PolicyFlags) {
	req := ent.Request
	w := std.Out
	fmt.Fprintf(w, "request   %s\n", req.ID)
	fmt.Fprintf(w, "kind      %s (%s mode)\n", req.Kind, req.EffectiveMode())
	if req.Agent != "" || req.Session != "" {
		fmt.Fprintf(w, "agent     %s %s\n", cli.Show(req.Agent), cli.Show(req.Session))
	}
	fmt.Fprintf(w, "cwd       %s\n", cli.Show(req.Cwd))
	if req.Note != "" {
		fmt.Fprintf(w, "note      %s\n", cli.Show(req.Note))
	}
	if !req.ExpiresAt.IsZero() {
		fmt.Fprintf(w, "expires   %s\n", req.ExpiresAt.Local().Format(time.DateTime))
	}
	switch req.Kind {
	case queue.KindExec:
		lines := strings.Split(req.Command, "\n")
		if len(lines) == 1 {
			fmt.Fprintf(w, "command   %s\n", cli.Show(req.Command))
		} else {
			fmt.Fprintf(w, "command   %d lines:\n", len(lines))
			for i, l := range lines {
				fmt.Fprintf(w, "  %3d  %s\n", i+1, cli.Show(l))
			}
		}
	case queue.KindTool:
		fmt.Fprintf(w, "tool      %s\n", cli.Show(req.Tool))
		fmt.Fprintf(w, "input     %s\n", cli.Show(string(req.Input)))
	default:
		if req.Path != "" {
			fmt.Fprintf(w, "path      %s\n", cli.Show(req.Path))
		}
	}
	p, _, err := pf.Load()
	if err != nil {
		fmt.Fprintf(w, "verdict   the policy cannot be loaded: %s\n", cli.Show(err.Error()))
	} else {
		v := p.CheckRequest(req)
		fmt.Fprintf(w, "verdict   %s  %s  risk %s\n", strings.ToUpper(v.Action.String()), v.Category, v.Risk)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, c := range v.Commands {
			argv := make([]string, len(c.Argv))
			for i, a := range c.Argv {
				argv[i] = cli.Show(a)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.Action, c.Category, cli.Clip(strings.Join(argv, " "), 48), cli.Show(c.Rule))
		}
		tw.Flush()
		if prof, err := sandbox.ParseProfile(v.Profile()); err == nil && req.Kind == queue.KindExec {
			fmt.Fprintf(w, "confined  %s (%s)\n", prof, prof.Describe())
		}
		for _, r := range v.Reasons {
			fmt.Fprintf(w, "  because %s\n", cli.Show(r))
		}
	}
	switch req.Kind {
	case queue.KindWrite, queue.KindEdit, queue.KindPatch:
		diff, err := change.Preview(req, policy.Roots(req.Cwd))
		switch {
		case err != nil:
			fmt.Fprintf(w, "diff      cannot be made: %s\n", cli.Show(err.Error()))
		default:
			fmt.Fprintln(w, "diff:")
			for _, l := range strings.Split(strings.TrimRight(diff, "\n"), "\n") {
				fmt.Fprintf(w, "  %s\n", cli.Show(strings.ReplaceAll(l, "\t", "    ")))
			}
		}
	}
}

// ShowResult prints how a request ended.
func ShowResult(std cli.Stdio, res *queue.Result) {
	w := std.Out
	fmt.Fprintf(w, "status    %s (%s by %s)", res.Status, res.Decision, res.DecidedBy)
	if res.ExitCode != nil {
		fmt.Fprintf(w, ", exit %d", *res.ExitCode)
	}
	if res.DurationMS > 0 {
		fmt.Fprintf(w, ", %s", time.Duration(res.DurationMS)*time.Millisecond)
	}
	fmt.Fprintln(w)
	if res.Reason != "" {
		fmt.Fprintf(w, "reason    %s\n", cli.Show(res.Reason))
	}
	if res.Command != "" {
		fmt.Fprintf(w, "ran       %s (edited by a person)\n", cli.Show(res.Command))
	}
	if res.Sandbox != "" {
		fmt.Fprintf(w, "sandbox   %s\n", cli.Show(res.Sandbox))
	}
	if res.OutputTail != "" {
		fmt.Fprintln(w, "output (tail):")
		for _, l := range strings.Split(strings.TrimRight(res.OutputTail, "\n"), "\n") {
			fmt.Fprintf(w, "  %s\n", cli.Show(strings.TrimRight(l, "\r")))
		}
	}
}
