package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/exec/sandbox"
	"github.com/sluice-dev/sluice/queue"
)

// Exit codes shared by every subcommand. `sluice run` adds its own
// (protocol section 5): the command's code, 126 denied, 124 timeout, 125 other.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(args []string, std stdio, g *globals) int
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
func run(args []string, std stdio) int {
	g := &globals{}
	fs := flag.NewFlagSet("sluice", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are said below, with what to do
	fs.Usage = func() {}     // --help prints to stdout below; errors get the hint
	g.register(fs)
	showVersion := fs.Bool("version", false, "print the version (sluice version)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(std.out)
			return exitOK
		}
		fmt.Fprint(std.err, explainFlagErr(fs, nil, err))
		fmt.Fprintln(std.err, "Run 'sluice --help' for usage.")
		return exitUsage
	}
	if *showVersion {
		return cmdVersion(fs.Args(), std, g)
	}
	args = fs.Args()
	if len(args) == 0 {
		usage(std.err)
		return exitUsage
	}
	name, args := args[0], args[1:]
	if name == "help" {
		if len(args) == 0 {
			usage(std.out)
			return exitOK
		}
		if args[0] == "config" {
			fmt.Fprint(std.out, configHelp)
			return exitOK
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
	if near := didYouMean(name, names); len(near) > 0 {
		hint = " (did you mean " + orList(near, func(n string) string { return "'sluice " + n + "'" }) + "?)"
	}
	fmt.Fprintf(std.err, "sluice: unknown command %q%s; run 'sluice --help' for the list\n", name, hint)
	return exitUsage
}

// globals are the flags every subcommand accepts.
type globals struct {
	spool  string
	config string
}

func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.spool, "spool", g.spool, "spool `DIR` (env SLUICE_SPOOL)")
	fs.StringVar(&g.config, "config", g.config, "configuration `FILE` (env SLUICE_CONFIG; see 'sluice help config')")
}

// openSpool opens the spool from --spool, SLUICE_SPOOL or the default.
func (g *globals) openSpool() (*queue.Spool, error) {
	dir := g.spool
	if dir == "" {
		dir = os.Getenv("SLUICE_SPOOL")
	}
	if dir == "" {
		d, err := queue.DefaultDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	sp, err := queue.Open(dir)
	if err != nil {
		return nil, err
	}
	// What the spool answers on its own (an expired or invalid request, an
	// orphaned claim) is audited like everything else; commands with an
	// --audit flag replace this with their log.
	sp.Recorder = &audit.Lazy{Path: func() (string, error) { return writerAudit(sp) }}
	// Whoever answers a run whose actor died "stopped" (an engine, or
	// the writer waiting for it) first kills what the run left running.
	sp.StopOrphans = sandbox.KillOrphans
	return sp, nil
}

// writerAudit is the audit log a writer records its own steps in (a
// request withdrawn): SLUICE_AUDIT, else the one the engine serving the
// spool published, else the default.
func writerAudit(sp *queue.Spool) (string, error) {
	if p := os.Getenv("SLUICE_AUDIT"); p != "" {
		return p, nil
	}
	if p := sp.AuditPath(); p != "" {
		return p, nil
	}
	return audit.DefaultPath()
}

// flagSet is a subcommand's flags with its help text.
type flagSet struct {
	*flag.FlagSet
	name, synopsis, help string
	std                  stdio
	hidden               map[string]bool // accepted, but not listed by --help
}

// unused marks global flags the subcommand has no use for: still
// accepted (scripts pass them to every command), but not listed by --help.
func (fs *flagSet) unused(names ...string) *flagSet {
	if fs.hidden == nil {
		fs.hidden = map[string]bool{}
	}
	for _, n := range names {
		fs.hidden[n] = true
	}
	return fs
}

// newFlags makes a subcommand's flag set with the global flags on it.
// synopsis and help describe the command for --help.
func newFlags(name, synopsis, help string, std stdio, g *globals) *flagSet {
	fs := &flagSet{FlagSet: flag.NewFlagSet("sluice "+name, flag.ContinueOnError),
		name: name, synopsis: synopsis, help: help, std: std}
	// The flag package would print its errors and call Usage on each;
	// parse says them instead, with what to do, and --help prints the
	// whole text to stdout.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	g.register(fs.FlagSet)
	return fs
}

func (fs *flagSet) printHelp() {
	w := fs.std.out
	fmt.Fprintf(w, "Usage: %s\n\n%s", strings.TrimSpace("sluice "+fs.name+" "+fs.synopsis), fs.help)
	shown := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		if !fs.hidden[f.Name] {
			shown.Var(f.Value, f.Name, f.Usage)
			n++
		}
	})
	if n == 0 {
		return
	}
	fmt.Fprint(w, "\nFlags:\n")
	shown.SetOutput(w)
	shown.PrintDefaults()
}

// parse parses the flags. With interspersed set, flags may also follow the
// positional arguments ("deny ID --reason x"); otherwise the first word
// that is not a flag ends them ('run ls -la'). "--" always ends them. It
// returns the positional arguments, or false and the exit code when the
// command should stop (help shown: 0; bad flags: 2).
func (fs *flagSet) parse(args []string, interspersed bool) ([]string, int, bool) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.printHelp()
				return nil, exitOK, false
			}
			fmt.Fprint(fs.std.err, explainFlagErr(fs.FlagSet, fs.hidden, err))
			fmt.Fprintf(fs.std.err, "Run 'sluice %s --help' for usage.\n", fs.name)
			return nil, exitUsage, false
		}
		rest := fs.Args()
		if !interspersed || len(rest) == 0 {
			return append(pos, rest...), 0, true
		}
		if len(rest) < len(args) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), 0, true
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// usageErr prints a usage error for a subcommand and returns exit 2.
func usageErr(std stdio, name, format string, args ...any) int {
	fmt.Fprintf(std.err, "sluice %s: %s\nRun 'sluice %s --help' for usage.\n", name, fmt.Sprintf(format, args...), name)
	return exitUsage
}

// spoolErr reports a spool that cannot be opened; unsafe spools are a
// configuration error (exit 2), as for the console.
func spoolErr(std stdio, name string, err error) int {
	fmt.Fprintf(std.err, "sluice %s: %v\n", name, err)
	var pe *queue.PermError
	if errors.As(err, &pe) {
		return exitUsage
	}
	return exitFail
}

// show makes agent-written text safe to print to a terminal.
func show(s string) string {
	p, _ := queue.Printable(s)
	return p
}
