//go:build !mcp

package main

import (
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"syscall"
)

// mcpProgram is the program 'sluice mcp' runs. The MCP server is a
// program of its own, built from this package with -tags mcp, because the
// SDK's packages (net/http, JSON schema) add ~1.5 ms to the start of every
// process that links them, and 'sluice run' and the hooks start once per
// command an agent runs.
const mcpProgram = "sluice-mcp"

const mcpMissing = `sluice mcp: the MCP server is a separate program, sluice-mcp, not found next to
%s nor on $PATH. Build it with 'make build' (bin/sluice-mcp), or:
  go build -tags mcp -o "$(go env GOPATH)/bin/sluice-mcp" github.com/sluice-dev/sluice/cmd/sluice
`

// cmdMCP hands 'sluice mcp' over to sluice-mcp: same flags, same
// environment, same stdin and stdout.
func cmdMCP(args []string, std stdio, g *globals) int {
	self, _ := os.Executable()
	prog, err := findMCP(self)
	if err != nil {
		fmt.Fprintf(std.err, mcpMissing, self)
		return exitUsage
	}
	argv := []string{prog, "mcp"}
	if g.spool != "" {
		argv = append(argv, "--spool", g.spool)
	}
	if g.config != "" {
		argv = append(argv, "--config", g.config)
	}
	argv = append(argv, args...)
	err = syscall.Exec(prog, argv, os.Environ())
	fmt.Fprintf(std.err, "sluice mcp: run %s: %v\n", prog, err)
	return exitFail
}

// findMCP looks for sluice-mcp beside this program, then on $PATH.
func findMCP(self string) (string, error) {
	if self != "" {
		p := filepath.Join(filepath.Dir(self), mcpProgram)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := osexec.LookPath(mcpProgram)
	if err != nil {
		return "", errors.New("sluice-mcp not found")
	}
	return filepath.Abs(p)
}
