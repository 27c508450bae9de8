// Command sluice-console is sluice's approval console, the program 'sluice
// console' runs: the queue of what agents ask with the policy's verdict,
// one key to approve or deny, the output of what runs.
//
// It is a program of its own so that the commands an agent starts once
// per tool call (sluice run, hook, sandbox, check) link nothing of the
// Charm stack, whose package inits every such process would pay for.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	_ "github.com/sluice-dev/sluice/exec/proxyhost"
	"github.com/sluice-dev/sluice/internal/cli"
)

func main() {
	os.Exit(run(os.Args[1:], cli.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}

// run takes what 'sluice console' hands over: the global flags, then
// "console" and its own flags.
func run(args []string, std cli.Stdio) int {
	g, args, err := cli.TakeOver(args, std)
	if errors.Is(err, flag.ErrHelp) {
		return cmdConsole([]string{"--help"}, std, g)
	}
	if err != nil {
		fmt.Fprintln(std.Err, "Run 'sluice console --help' for usage.")
		return cli.ExitUsage
	}
	if len(args) == 0 || args[0] != "console" {
		fmt.Fprintln(std.Err, "sluice-console: run it as 'sluice console' (see 'sluice console --help')")
		return cli.ExitUsage
	}
	return cmdConsole(args[1:], std, g)
}
