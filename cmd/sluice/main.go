// Command sluice is the approval console for AI coding agents: agents queue
// shell commands and file edits in a spool, a person approves or denies
// them, approved commands run and their output goes back to the agent.
//
// main only wires things; each subcommand lives in its own file.
package main

import (
	"os"

	"github.com/sluice-dev/sluice/internal/cli"
)

func main() {
	os.Exit(run(os.Args[1:], cli.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}
