// Command sluice is the approval console for AI coding agents: agents queue
// shell commands and file edits in a spool, a person approves or denies
// them, approved commands run and their output goes back to the agent.
//
// main only wires things; each subcommand lives in its own file.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr}))
}
