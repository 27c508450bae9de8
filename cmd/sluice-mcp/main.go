// Command sluice-mcp is sluice's MCP server (the Model Context Protocol,
// on stdin and stdout): an agent's run_command, write_file and edit_file
// calls become requests the console decides. 'sluice mcp' runs it; it is
// a program of its own because the MCP SDK's packages add ~1.5 ms to the
// start of every process that links them, and 'sluice run' and the hooks
// start once per command an agent runs.
package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/sluice-dev/sluice/mcpserver"
	"github.com/sluice-dev/sluice/policy"
)

// version is set at build time: -ldflags "-X main.version=v1.2.3".
var version = ""

func main() {
	v := version
	if v == "" {
		v = "dev"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
	}
	mcpserver.Version = fmt.Sprintf("%s (%s %s/%s)", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	// Which directories a file change may touch is policy's decision.
	os.Exit(mcpserver.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, policy.Roots))
}
