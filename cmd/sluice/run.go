package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/charmbracelet/x/term"

	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/queue"
)

// Exit codes of 'sluice run' besides the command's own (protocol section 5).
const (
	exitDenied  = 126
	exitTimeout = 124
	exitNotRun  = 125
	exitStopped = 123
)

const runHelp = `Queue COMMAND as an exec request and wait until a person (or the policy)
decides. While it runs, its output streams to stdout; then sluice exits with
the command's own exit code.

The words after -- are joined with spaces and run with bash -c (/bin/sh
-c where there is no bash), so
  sluice run -- 'go test ./... && go vet ./...'
  sluice run -- go test ./...
both work.

When a person edited the command before approving it, the edited command
is what runs, and sluice run says so on stderr, naming it.

Exit status:
  the command's    it ran
  126              denied (the reason goes to stderr)
  124              killed at its timeout
  123              stopped part way: it started, and the sluice process
                   running it stopped (crash or kill); check its effects
                   before running it again
  125              not run: expired, invalid, interrupted, failed, killed,
                   an allow the audit log does not hold, or sluice itself
                   failed
  130, 143         sluice run got SIGINT or SIGTERM (a request nobody had
                   claimed yet is withdrawn)
  2                usage error
`

func cmdRun(args []string, std cli.Stdio, g *cli.Globals) int {
	ctx := signalContext()
	fs := cli.NewFlags("run", "[flags] -- COMMAND...", runHelp, std, g).Unused("config")
	cwd := fs.String("cwd", "", "run in `DIR` (default: the current directory)")
	timeout := fs.Duration("timeout", 0, "kill the command after `DUR`, such as 30s, 5m or 1h (default: the console's configured default)")
	expires := fs.Duration("expires", 10*time.Minute, "give up if nobody decides within `DUR`")
	note := fs.String("note", "", "a note for the person deciding: why the command is needed")
	agent := fs.String("agent", os.Getenv("SLUICE_AGENT"), "the agent's `NAME` (env SLUICE_AGENT)")
	session := fs.String("session", os.Getenv("SLUICE_SESSION"), "the agent's session `ID` (env SLUICE_SESSION)")
	asJSON := fs.Bool("json", false, "print the result JSON instead of the output")
	// The command's own words must reach it untouched, so flags end at the
	// first word that is not one ('sluice run ls -la').
	words, code, ok := fs.ParseArgs(args, false)
	if !ok {
		return code
	}
	if len(words) == 0 || strings.TrimSpace(strings.Join(words, "")) == "" {
		return cli.UsageErr(std, "run", "no command given (sluice run -- COMMAND...)")
	}
	if *timeout < 0 || *timeout > queue.MaxTimeout {
		return cli.UsageErr(std, "run", "--timeout must be between 1s and %s", queue.MaxTimeout)
	}
	if *expires <= 0 {
		return cli.UsageErr(std, "run", "--expires must be positive")
	}
	dir, err := absDir(*cwd)
	if err != nil {
		return cli.UsageErr(std, "run", "%v", err)
	}
	if *agent == "" {
		*agent = "cli"
	}
	now := time.Now().UTC()
	req := &queue.Request{
		Version:   queue.Version,
		ID:        queue.NewID(),
		Kind:      queue.KindExec,
		Mode:      queue.ModeExecute,
		Command:   strings.Join(words, " "),
		Cwd:       dir,
		TimeoutS:  int((*timeout + time.Second - 1) / time.Second),
		Agent:     *agent,
		Session:   *session,
		Note:      *note,
		CreatedAt: now,
		ExpiresAt: now.Add(*expires),
	}
	// A terminal only when the output goes to one: a script or an agent
	// reading it gets it through pipes, without colour codes.
	if !stdoutIsTerminal(std) {
		req.TTY = new(bool)
	}
	if err := req.Validate(); err != nil {
		return cli.UsageErr(std, "run", "%v", err)
	}
	sp, err := g.OpenSpool()
	if err != nil {
		fmt.Fprintf(std.Err, "sluice run: %v\n", err)
		return exitNotRun
	}
	if !sp.Serving() {
		// The request still waits (an engine may start), but the agent's
		// person should not wait in silence.
		fmt.Fprintf(std.Err, "sluice run: nothing serves the spool %s yet: start 'sluice console' (or 'sluice serve') with the same spool; waiting up to %s\n", cli.Show(sp.Dir()), *expires)
	}
	var logTo io.Writer = std.Out
	if *asJSON {
		logTo = nil
	}
	res, err := submitAndWait(ctx, sp, req, logTo, std.Err, "run")
	if err != nil {
		fmt.Fprintf(std.Err, "sluice run: %s\n", cli.Show(err.Error()))
		if code, ok := interruptCode(err); ok {
			return code
		}
		return exitNotRun
	}
	// (Output the log lacks, none kept or some lost, came from the
	// result's tail as the wait ended: queue's logFollower.fill.)
	if *asJSON {
		writeJSON(std.Out, res)
	}
	return runExit(res, std)
}

// runExit maps a result to the exit status of protocol section 5 and says on
// stderr why a command did not run.
func runExit(res *queue.Result, std cli.Stdio) int { return exitFor("run", res, std) }

// exitFor is runExit for command name (run, approve).
func exitFor(name string, res *queue.Result, std cli.Stdio) int {
	if res.Command != "" {
		// What ran is not what was asked for: the agent must not take
		// the output for its own command's.
		what := "approved it as"
		if res.Ran() {
			what = "what ran is"
		}
		fmt.Fprintf(std.Err, "sluice %s: a person edited the command before approving it; %s: %s\n", name, what, cli.Show(res.Command))
	}
	if s := changedText(res); s != "" {
		fmt.Fprintf(std.Err, "sluice %s: %s\n", name, s)
	}
	reason := ""
	if res.Reason != "" {
		reason = ": " + cli.Show(res.Reason)
	}
	switch res.Status {
	case queue.StatusDone:
		if res.ExitCode != nil && *res.ExitCode >= 0 && *res.ExitCode <= 255 {
			return *res.ExitCode
		}
		if res.ExitCode != nil {
			fmt.Fprintf(std.Err, "sluice %s: the result's exit code %d is not 0-255%s\n", name, *res.ExitCode, reason)
		} else {
			fmt.Fprintf(std.Err, "sluice %s: done without an exit code%s\n", name, reason)
		}
		return exitNotRun
	case queue.StatusDenied:
		by := ""
		if res.DecidedBy != "" {
			by = " by " + cli.Show(string(res.DecidedBy))
		}
		fmt.Fprintf(std.Err, "sluice %s: denied%s%s\n", name, by, reason)
		return exitDenied
	case queue.StatusTimeout:
		fmt.Fprintf(std.Err, "sluice %s: killed at its timeout after %s%s\n", name,
			time.Duration(res.DurationMS)*time.Millisecond, reason)
		return exitTimeout
	case queue.StatusKilled:
		fmt.Fprintf(std.Err, "sluice %s: killed by a person while it ran%s\n", name, reason)
		return exitNotRun
	case queue.StatusStopped:
		fmt.Fprintf(std.Err, "sluice %s: stopped%s\n", name, reason)
		return exitStopped
	}
	fmt.Fprintf(std.Err, "sluice %s: not run: %s%s\n", name, cli.Show(string(res.Status)), reason)
	return exitNotRun
}

// changedText says which files a run changed and how to put them back;
// "" when it changed none.
func changedText(res *queue.Result) string {
	n := len(res.ChangedFiles)
	if n == 0 {
		return ""
	}
	var parts []string
	for i, c := range res.ChangedFiles {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("and %d more", n-10))
			break
		}
		parts = append(parts, cli.Show(c.Path)+" ("+c.Change+")")
	}
	s := fmt.Sprintf("changed %d file(s): %s; 'sluice undo %s' puts them back", n, strings.Join(parts, ", "), res.ID)
	if cp := res.Checkpoint; cp != nil && len(cp.Overlapped) > 0 {
		s += fmt.Sprintf(" (it ran at the same time as %s in the same project: some of these may be that run's)", strings.Join(cp.Overlapped, ", "))
	}
	return s
}

// stdoutIsTerminal reports whether the command's output goes to a
// terminal.
func stdoutIsTerminal(std cli.Stdio) bool {
	f, ok := std.Out.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

func absDir(dir string) (string, error) {
	if dir == "" {
		return os.Getwd()
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("--cwd: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("--cwd: %s is not a directory", abs)
	}
	return abs, nil
}

// writeJSON prints v as indented JSON in which every character a terminal
// would act on (C1 controls, bidi and invisible format characters, which
// encoding/json leaves as they are) is a \u escape: the same value, safe
// to print.
func writeJSON(w io.Writer, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
	out := make([]byte, 0, buf.Len())
	for _, line := range bytes.SplitAfter(buf.Bytes(), []byte("\n")) {
		body := bytes.TrimSuffix(line, []byte("\n"))
		out = append(out, queue.JSONSafe(body)...)
		if len(body) < len(line) {
			out = append(out, '\n')
		}
	}
	_, _ = w.Write(out)
}

// signum is a signal's number, for the conventional exit status 128+n.
func signum(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return int(s)
	}
	return 1
}
