package main

import (
	"github.com/sluice-dev/sluice/internal/cli"
)

// cmdMCP hands 'sluice mcp' over to sluice-mcp (cmd/sluice-mcp): same
// flags, same environment, same stdin and stdout. (sluice-mcp needs no
// configuration file: --config is not passed on.)
func cmdMCP(args []string, std cli.Stdio, g *cli.Globals) int {
	argv := []string{"mcp"}
	if g.Spool != "" {
		argv = append(argv, "--spool", g.Spool)
	}
	return cli.Handover(std, "mcp", cli.MCPProgram, append(argv, args...))
}
