//go:build mcp

package main

import "os"

// Built with -tags mcp, the test binary is sluice-mcp as well.
func init() {
	extraPrograms["sluice-mcp"] = func() { os.Exit(run(os.Args[1:], stdio{os.Stdin, os.Stdout, os.Stderr})) }
}
