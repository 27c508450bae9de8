package cli

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
	"unicode/utf8"

	"github.com/charmbracelet/x/term"
	"github.com/sluice-dev/sluice/queue"
)

// Exit codes of 'sluice run' besides the command's own (protocol section 5).
const (
	ExitDenied  = 126
	exitTimeout = 124
	ExitNotRun  = 125
	exitStopped = 123
)

// ExitFor is runExit for command name (run, approve).
func ExitFor(name string, res *queue.Result, std Stdio) int {
	if res.Command != "" {
		// What ran is not what was asked for: the agent must not take
		// the output for its own command's.
		what := "approved it as"
		if res.Ran() {
			what = "what ran is"
		}
		fmt.Fprintf(std.Err, "sluice %s: a person edited the command before approving it; %s: %s\n", name, what, Show(res.Command))
	}
	if s := changedText(res); s != "" {
		fmt.Fprintf(std.Err, "sluice %s: %s\n", name, s)
	}
	reason := ""
	if res.Reason != "" {
		reason = ": " + Show(res.Reason)
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
		return ExitNotRun
	case queue.StatusDenied:
		by := ""
		if res.DecidedBy != "" {
			by = " by " + Show(string(res.DecidedBy))
		}
		fmt.Fprintf(std.Err, "sluice %s: denied%s%s\n", name, by, reason)
		return ExitDenied
	case queue.StatusTimeout:
		fmt.Fprintf(std.Err, "sluice %s: killed at its timeout after %s%s\n", name,
			time.Duration(res.DurationMS)*time.Millisecond, reason)
		return exitTimeout
	case queue.StatusKilled:
		fmt.Fprintf(std.Err, "sluice %s: killed by a person while it ran%s\n", name, reason)
		return ExitNotRun
	case queue.StatusStopped:
		fmt.Fprintf(std.Err, "sluice %s: stopped%s\n", name, reason)
		return exitStopped
	}
	fmt.Fprintf(std.Err, "sluice %s: not run: %s%s\n", name, Show(string(res.Status)), reason)
	return ExitNotRun
}

// RunExit maps a result to the exit status of protocol section 5 and says on
// stderr why a command did not run.
func RunExit(res *queue.Result, std Stdio) int { return ExitFor("run", res, std) }

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
		parts = append(parts, Show(c.Path)+" ("+c.Change+")")
	}
	s := fmt.Sprintf("changed %d file(s): %s; 'sluice undo %s' puts them back", n, strings.Join(parts, ", "), res.ID)
	if cp := res.Checkpoint; cp != nil && len(cp.Overlapped) > 0 {
		s += fmt.Sprintf(" (it ran at the same time as %s in the same project: some of these may be that run's)", strings.Join(cp.Overlapped, ", "))
	}
	return s
}

// StdoutIsTerminal reports whether the command's output goes to a
// terminal.
func StdoutIsTerminal(std Stdio) bool {
	f, ok := std.Out.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

func AbsDir(dir string) (string, error) {
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

// WriteJSON prints v as indented JSON in which every character a terminal
// would act on (C1 controls, bidi and invisible format characters, which
// encoding/json leaves as they are) is a \u escape: the same value, safe
// to print.
func WriteJSON(w io.Writer, v any) {
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

// Signum is a signal's number, for the conventional exit status 128+n.
func Signum(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return int(s)
	}
	return 1
}

// Clip shortens s to n runes, marking the cut.
func Clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:n-1]), " ") + "…"
}
