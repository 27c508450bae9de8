// Package engcmd holds the commands that run what agents ask: 'sluice
// serve', 'sluice approve' and 'sluice sandbox'. They are sluice's own,
// and sluice-engine's: a networked run reaches the network through a
// proxy this process hosts (package netproxy, which links net/http), and
// sluice itself links no proxy so that the commands an agent starts once
// per tool call start without net/http. sluice runs these commands itself
// where it hosts proxies (its tests), and hands them over to sluice-engine
// otherwise (Handover); sandbox does so only for a networked profile.
package engcmd

import (
	"errors"
	"flag"
	"fmt"

	"github.com/sluice-dev/sluice/exec"
	"github.com/sluice-dev/sluice/internal/cli"
)

// Commands are the commands sluice-engine runs, by name.
var Commands = map[string]func(args []string, std cli.Stdio, g *cli.Globals) int{
	"serve":   CmdServe,
	"approve": CmdApprove,
	"sandbox": CmdSandbox,
}

// Handover runs 'sluice NAME ARGS' in sluice-engine where this program
// hosts no proxy; it returns only when it could not.
func Handover(std cli.Stdio, g *cli.Globals, name string, args []string) int {
	return cli.Handover(std, name, cli.EngineProgram, append(g.Args(), append([]string{name}, args...)...))
}

// Run runs the command name here if this program hosts proxies, else in
// sluice-engine.
func Run(name string, args []string, std cli.Stdio, g *cli.Globals) int {
	if !exec.HostsProxy() {
		return Handover(std, g, name, args)
	}
	return Commands[name](args, std, g)
}

// Main is sluice-engine: it takes what sluice hands over, the global flags,
// then the command's name and its own flags.
func Main(args []string, std cli.Stdio) int {
	g, args, err := cli.TakeOver(args, std)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(std.Err, "sluice-engine runs 'sluice serve', 'sluice approve' and a networked 'sluice sandbox' (see 'sluice --help')")
		return cli.ExitOK
	}
	if err != nil {
		return cli.ExitUsage
	}
	if len(args) == 0 || Commands[args[0]] == nil || !exec.HostsProxy() {
		fmt.Fprintln(std.Err, "sluice-engine: run it as 'sluice serve', 'sluice approve' or 'sluice sandbox' (see 'sluice --help')")
		return cli.ExitUsage
	}
	return Commands[args[0]](args[1:], std, g)
}
