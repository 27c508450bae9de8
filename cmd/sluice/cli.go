package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/sluice-dev/sluice/internal/app"
	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/internal/engcmd"
)

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(args []string, std cli.Stdio, g *cli.Globals) int
}

var commands = []command{
	{"console", "the approval console (a TUI): see, approve, deny, watch output", cmdConsole},
	{"run", "queue a shell command, wait for approval, stream its output", cmdRun},
	{"submit", "queue a request of any kind from JSON on stdin", cmdSubmit},
	{"ls", "list pending and running requests", cmdLs},
	{"show", "show one request: fields, verdict with its parts, diff, status", cmdShow},
	{"approve", "approve a pending request and run it here", cmdApprove},
	{"deny", "deny a pending request", cmdDeny},
	{"undo", "put back the files a run changed, from its checkpoint", cmdUndo},
	{"checkpoints", "prune the checkpoints runs leave (sluice checkpoints prune)", cmdCheckpoints},
	{"trust", "list or revoke trust windows (a rule trusted for one agent session)", cmdTrust},
	{"serve", "the headless engine: act on what the policy decides alone", cmdServe},
	{"mcp", "an MCP server (stdio) that puts run_command, write_file and edit_file behind the console", cmdMCP},
	{"web", "approve from a browser, on a phone or a laptop: a web app over this spool (runs sluice-web)", cmdWeb},
	{"hub", "many machines, one place to decide: the fleet hub and its bridges (runs sluice-hub)", cmdHub},
	{"audit", "verify or read the audit log", cmdAudit},
	{"check", "print the policy's verdict for a command line", cmdCheck},
	{"policy", "show the effective policy, or lint a policy file", cmdPolicy},
	{"sandbox", "run a command confined to a profile (read_only, mutating, networked)", cmdSandbox},
	{"hook", "answer an agent's pre-tool hook: Claude Code, Gemini CLI, Codex", cmdHook},
	{"install", "set an agent up to ask sluice (its hook, MCP server), so it cannot fail open", cmdInstall},
	{"uninstall", "take sluice out of an agent's configuration", cmdUninstall},
	{"doctor", "check sluice and each agent's setup for what would let a tool run unasked", cmdDoctor},
	{"version", "print the version", cmdVersion},
}

const rootUsage = `sluice puts a person between AI coding agents and the commands and file
edits they want to make. Agents queue requests in a spool directory; a person
approves or denies each one; approved commands run and their output goes
back to the agent.

Usage: sluice [--spool DIR] COMMAND [flags] [args]
       sluice --version

Commands:
%s
Run 'sluice COMMAND --help' for a command's flags.

A command that takes a request's ID takes the whole id, any unique prefix
of it of 4 or more characters, or its last 8 or more: the short form the
console shows.

Environment:
  SLUICE_SPOOL    the spool directory (--spool); default $XDG_RUNTIME_DIR/sluice,
                  else /run/user/UID/sluice when that is yours, else
                  $XDG_STATE_HOME/sluice/spool (~/.local/state/sluice/spool)
  SLUICE_AGENT    the agent name 'sluice run' records (--agent)
  SLUICE_SESSION  the session id 'sluice run' records
  SLUICE_AUDIT    the audit log (--audit); see 'sluice audit --help'
`

func usage(w io.Writer) {
	var b strings.Builder
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, rootUsage, b.String())
}

// run is the whole program; main only exits with its code.
func run(args []string, std cli.Stdio) int {
	g := &cli.Globals{}
	fs := flag.NewFlagSet("sluice", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are said below, with what to do
	fs.Usage = func() {}     // --help prints to stdout below; errors get the hint
	g.Register(fs)
	showVersion := fs.Bool("version", false, "print the version (sluice version)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(std.Out)
			return cli.ExitOK
		}
		fmt.Fprint(std.Err, cli.ExplainFlagErr(fs, nil, err))
		fmt.Fprintln(std.Err, "Run 'sluice --help' for usage.")
		return cli.ExitUsage
	}
	if *showVersion {
		return cmdVersion(fs.Args(), std, g)
	}
	args = fs.Args()
	if len(args) == 0 {
		usage(std.Err)
		return cli.ExitUsage
	}
	name, args := args[0], args[1:]
	if name == "help" {
		if len(args) == 0 {
			usage(std.Out)
			return cli.ExitOK
		}
		if args[0] == "config" {
			fmt.Fprint(std.Out, app.ConfigHelp)
			return cli.ExitOK
		}
		name, args = args[0], []string{"--help"}
	}
	names := []string{"help"}
	for _, c := range commands {
		if c.name == name {
			return c.run(args, std, g)
		}
		names = append(names, c.name)
	}
	hint := ""
	if near := cli.DidYouMean(name, names); len(near) > 0 {
		hint = " (did you mean " + cli.OrList(near, func(n string) string { return "'sluice " + n + "'" }) + "?)"
	}
	fmt.Fprintf(std.Err, "sluice: unknown command %q%s; run 'sluice --help' for the list\n", name, hint)
	return cli.ExitUsage
}

// cmdConsole hands 'sluice console' over to sluice-console
// (cmd/sluice-console) with the global flags passed on: the console links
// the Charm stack, which every agent-side command would pay for at start.
func cmdConsole(args []string, std cli.Stdio, g *cli.Globals) int {
	return cli.Handover(std, "console", cli.ConsoleProgram, append(g.Args(), append([]string{"console"}, args...)...))
}

// serve and approve run commands, a networked one through a proxy this
// process hosts: sluice-engine does (package engcmd); sandbox hands over a
// networked profile only.
func cmdServe(args []string, std cli.Stdio, g *cli.Globals) int {
	return engcmd.Run("serve", args, std, g)
}

func cmdApprove(args []string, std cli.Stdio, g *cli.Globals) int {
	return engcmd.Run("approve", args, std, g)
}

func cmdSandbox(args []string, std cli.Stdio, g *cli.Globals) int {
	return engcmd.CmdSandbox(args, std, g)
}
