package main

import (
	"fmt"
	"os"
	"syscall"

	"github.com/sluice-dev/sluice/internal/cli"
)

// mcpProgram is the program 'sluice mcp' runs (cmd/sluice-mcp). The MCP
// server is a program of its own because the SDK's packages (net/http,
// JSON schema) add ~1.5 ms to the start of every process that links them,
// and 'sluice run' and the hooks start once per command an agent runs.
const mcpProgram = "sluice-mcp"

const mcpMissing = `sluice mcp: the MCP server is a separate program, sluice-mcp, not found next to
%s nor on $PATH. Install both programs together:
  go install github.com/sluice-dev/sluice/cmd/...@latest
or, in a checkout, 'make build' (bin/sluice and bin/sluice-mcp).
`

// cmdMCP hands 'sluice mcp' over to sluice-mcp: same flags, same
// environment, same stdin and stdout. (sluice-mcp needs no configuration
// file: --config is not passed on.)
func cmdMCP(args []string, std cli.Stdio, g *cli.Globals) int {
	self, _ := os.Executable()
	prog, err := findBeside(self, mcpProgram)
	if err != nil {
		fmt.Fprintf(std.Err, mcpMissing, self)
		return cli.ExitUsage
	}
	argv := []string{prog, "mcp"}
	if g.Spool != "" {
		argv = append(argv, "--spool", g.Spool)
	}
	argv = append(argv, args...)
	err = syscall.Exec(prog, argv, os.Environ())
	fmt.Fprintf(std.Err, "sluice mcp: run %s: %v\n", prog, err)
	return cli.ExitFail
}
