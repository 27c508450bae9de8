package cli

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
	ExitOK    = 0
	ExitFail  = 1
	ExitUsage = 2
)

type Stdio struct {
	In       io.Reader
	Out, Err io.Writer
}

// Globals are the flags every subcommand accepts.
type Globals struct {
	Spool  string
	Config string
}

func (g *Globals) Register(fs *flag.FlagSet) {
	fs.StringVar(&g.Spool, "spool", g.Spool, "spool `DIR` (env SLUICE_SPOOL)")
	fs.StringVar(&g.Config, "config", g.Config, "configuration `FILE` (env SLUICE_CONFIG; see 'sluice help config')")
}

// OpenSpool opens the spool from --spool, SLUICE_SPOOL or the default.
func (g *Globals) OpenSpool() (*queue.Spool, error) {
	dir, err := queue.DirFrom(g.Spool)
	if err != nil {
		return nil, err
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

// FlagSet is a subcommand's flags with its help text.
type FlagSet struct {
	*flag.FlagSet
	name, synopsis, help string
	std                  Stdio
	hidden               map[string]bool // accepted, but not listed by --help
}

// Unused marks global flags the subcommand has no use for: still
// accepted (scripts pass them to every command), but not listed by --help.
func (fs *FlagSet) Unused(names ...string) *FlagSet {
	if fs.hidden == nil {
		fs.hidden = map[string]bool{}
	}
	for _, n := range names {
		fs.hidden[n] = true
	}
	return fs
}

// NewFlags makes a subcommand's flag set with the global flags on it.
// synopsis and help describe the command for --help.
func NewFlags(name, synopsis, help string, std Stdio, g *Globals) *FlagSet {
	fs := &FlagSet{FlagSet: flag.NewFlagSet("sluice "+name, flag.ContinueOnError),
		name: name, synopsis: synopsis, help: help, std: std}
	// The flag package would print its errors and call Usage on each;
	// parse says them instead, with what to do, and --help prints the
	// whole text to stdout.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	g.Register(fs.FlagSet)
	return fs
}

func (fs *FlagSet) printHelp() {
	w := fs.std.Out
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
func (fs *FlagSet) ParseArgs(args []string, interspersed bool) ([]string, int, bool) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.printHelp()
				return nil, ExitOK, false
			}
			fmt.Fprint(fs.std.Err, ExplainFlagErr(fs.FlagSet, fs.hidden, err))
			fmt.Fprintf(fs.std.Err, "Run 'sluice %s --help' for usage.\n", fs.name)
			return nil, ExitUsage, false
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

// UsageErr prints a usage error for a subcommand and returns exit 2.
func UsageErr(std Stdio, name, format string, args ...any) int {
	fmt.Fprintf(std.Err, "sluice %s: %s\nRun 'sluice %s --help' for usage.\n", name, fmt.Sprintf(format, args...), name)
	return ExitUsage
}

// SpoolErr reports a spool that cannot be opened; unsafe spools are a
// configuration error (exit 2), as for the console.
func SpoolErr(std Stdio, name string, err error) int {
	fmt.Fprintf(std.Err, "sluice %s: %v\n", name, err)
	var pe *queue.PermError
	if errors.As(err, &pe) {
		return ExitUsage
	}
	return ExitFail
}

// Show makes agent-written text safe to print to a terminal.
func Show(s string) string {
	p, _ := queue.Printable(s)
	return p
}

// Args are the global flags as set, for a program this one hands over to.
func (g *Globals) Args() []string {
	var a []string
	if g.Spool != "" {
		a = append(a, "--spool", g.Spool)
	}
	if g.Config != "" {
		a = append(a, "--config", g.Config)
	}
	return a
}

// OrDash is s, or "-" for nothing (a column of a table).
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
