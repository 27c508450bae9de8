package app

import (
	"fmt"
	"text/tabwriter"

	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/policy"
)

// PrintHosts shows the hosts a networked run of the line reaches without
// asking, each with why, and those it never reaches.
func PrintHosts(std cli.Stdio, v *policy.Verdict) {
	if len(v.Hosts) > 0 {
		what := "reaches without asking"
		if v.Profile() != "networked" {
			what = "would reach without asking, if its run had the network"
		}
		fmt.Fprintf(std.Out, "hosts it %s (others are asked about):\n", what)
		tw := tabwriter.NewWriter(std.Out, 0, 0, 2, ' ', 0)
		for _, h := range v.Hosts {
			fmt.Fprintf(tw, "  %s\t%s\n", cli.Show(h), cli.Show(v.HostsBy[h]))
		}
		tw.Flush()
	}
	if len(v.HostsDenied) > 0 {
		fmt.Fprintln(std.Out, "hosts it never reaches:")
		tw := tabwriter.NewWriter(std.Out, 0, 0, 2, ' ', 0)
		for _, h := range v.HostsDenied {
			fmt.Fprintf(tw, "  %s\t%s\n", cli.Show(h), cli.Show(v.HostsDeniedBy[h]))
		}
		tw.Flush()
	}
}
