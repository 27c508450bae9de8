package main

import (
	"github.com/sluice-dev/sluice/internal/cli"
)

// cmdHub hands 'sluice hub' over to sluice-hub, with --spool passed on.
func cmdHub(args []string, std cli.Stdio, g *cli.Globals) int {
	argv := []string{"hub"}
	if g.Spool != "" && len(args) > 0 && args[0] == "box" {
		argv = append(argv, "box", "--spool", g.Spool)
		args = args[1:]
	}
	return cli.Handover(std, "hub", cli.HubProgram, append(argv, args...))
}
