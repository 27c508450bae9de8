package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/internal/app"
	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/queue"
)

const tailHelp = `Show the last lines of the audit log, oldest first, as a table: time (local),
event, actor, status or exit code, and the command (or path, or tool). Text
from the log is shown with control characters and invisible Unicode
escaped, and long commands are cut to the terminal's width: a command an
agent wrote cannot rewrite your screen. A line that is not an event (torn
by a crash, or edited) is shown as such; run 'sluice audit verify'.

--json prints the log's lines as they are, one JSON object per line, except
that characters a terminal would act on are written as \u escapes (the same
JSON value); lines that are not events are left out, with a note on stderr.

-f keeps reading after the last line and shows lines as other processes
append them, until interrupted. Filters apply to what -f shows too.
`

func cmdAuditTail(args []string, std cli.Stdio, g *cli.Globals) int {
	fs := cli.NewFlags("audit tail", "[-n N] [-f] [--json] [--id ID] [--event E] [--agent A] [--since DUR] [--audit FILE]",
		tailHelp, std, g)
	n := fs.Int("n", 10, "show the last `N` lines that match")
	follow := fs.Bool("f", false, "follow: show lines as they are appended, until interrupted")
	asJSON := fs.Bool("json", false, "print the JSON lines instead of a table")
	id := fs.String("id", "", "only the events of request `ID` (or of ids starting with it)")
	events := fs.String("event", "", "only events named `E`; a comma-separated list (queued,finished)")
	agent := fs.String("agent", "", "only the events of requests from agent `A`")
	since := fs.String("since", "", "only events of the last `DUR` (30m, 2h, 48h), or since a time (2026-11-21T15:04:05Z)")
	file := fs.String("audit", "", app.AuditFlagHelp)
	pos, code, ok := fs.ParseArgs(args, true)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return cli.UsageErr(std, "audit tail", "takes no arguments; give the log with --audit FILE")
	}
	if *n < 0 {
		return cli.UsageErr(std, "audit tail", "-n %d: give a count of 0 or more", *n)
	}
	filter := audit.Filter{ID: *id, Agent: *agent}
	if *events != "" {
		for _, e := range strings.Split(*events, ",") {
			name := queue.EventName(strings.TrimSpace(e))
			if !knownEvent(name) {
				return cli.UsageErr(std, "audit tail", "--event: no event %q; events are %s", cli.Show(string(name)), eventList())
			}
			filter.Events = append(filter.Events, name)
		}
	}
	if *since != "" {
		t, err := parseSince(*since, time.Now())
		if err != nil {
			return cli.UsageErr(std, "audit tail", "--since: %v", err)
		}
		filter.Since = t
	}
	path, err := app.AuditPath(*file)
	if err != nil {
		fmt.Fprintf(std.Err, "sluice audit tail: %v\n", err)
		return cli.ExitFail
	}

	out := &tailPrinter{w: std.Out, std: std, json: *asJSON, width: termWidth(std.Out)}
	var end int64
	f, err := os.Open(path)
	switch {
	case errors.Is(err, os.ErrNotExist) && *follow:
		// The follower waits for it.
	case err != nil:
		fmt.Fprintf(std.Err, "sluice audit tail: %s\n", explainOpen(path, err))
		return cli.ExitFail
	default:
		lines, e, err := lastLines(f, *n, filter)
		f.Close()
		if err != nil {
			fmt.Fprintf(std.Err, "sluice audit tail: %s\n", cli.Show(err.Error()))
			return cli.ExitFail
		}
		end = e
		for _, l := range lines {
			out.print(l)
		}
		if len(lines) == 0 && !*follow {
			what := "no events"
			if !filter.Match(audit.Line{}) { // only the zero Filter selects a non-event
				what = "no events match"
			}
			fmt.Fprintf(std.Err, "%s in %s\n", what, cli.Show(path))
		}
	}
	if !*follow {
		return cli.ExitOK
	}
	fw := &audit.Follower{Path: path, Offset: end, Notice: func(s string) {
		fmt.Fprintf(std.Err, "sluice audit tail: %s\n", cli.Show(s))
	}}
	err = fw.Run(context.Background(), func(l audit.Line) error {
		if filter.Match(l) {
			return out.print(l)
		}
		return nil
	})
	if err != nil {
		fmt.Fprintf(std.Err, "sluice audit tail: %s\n", cli.Show(err.Error()))
		return cli.ExitFail
	}
	return cli.ExitOK
}

func lastLines(f *os.File, n int, filter audit.Filter) ([]audit.Line, int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	return audit.Last(f, fi.Size(), n, filter)
}

func knownEvent(name queue.EventName) bool {
	for _, e := range queue.EventNames() {
		if e == name {
			return true
		}
	}
	return false
}

func eventList() string {
	names := queue.EventNames()
	s := make([]string, len(names))
	for i, e := range names {
		s[i] = string(e)
	}
	return strings.Join(s, ", ")
}

// parseSince reads a duration back from now, or a time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%q is negative; give how far back to look (30m, 2h)", s)
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither a duration (30m, 2h, 48h) nor a time (2026-11-21T15:04:05Z, 2026-11-21)", cli.Show(s))
}

// tailPrinter prints lines as a table or as JSON.
type tailPrinter struct {
	w      io.Writer
	std    cli.Stdio
	json   bool
	width  int // of the terminal; 0: do not cut
	header bool
}

// The table's columns before COMMAND, and their widths.
const tailRowFormat = "%-14s %-14s %-10s %-8s %s\n"

func (p *tailPrinter) print(l audit.Line) error {
	if p.json {
		if l.Event == nil {
			fmt.Fprintf(p.std.Err, "sluice audit tail: byte %d: not an event (torn by a crash, or edited); left out; run 'sluice audit verify'\n", l.Offset)
			return nil
		}
		_, err := p.w.Write(append(queue.JSONSafe(l.Raw), '\n'))
		return err
	}
	if !p.header {
		p.header = true
		if _, err := fmt.Fprintf(p.w, tailRowFormat, "TIME", "EVENT", "ACTOR", "STATUS", "COMMAND"); err != nil {
			return err
		}
	}
	ev := l.Event
	if ev == nil {
		raw := "(over the size limit)"
		if l.Raw != nil {
			raw = string(l.Raw)
		}
		_, err := fmt.Fprintf(p.w, tailRowFormat, "-", "(not an event)", "-", "-", p.cut(cli.Show(raw)))
		return err
	}
	status := "-"
	switch {
	case ev.ExitCode != nil:
		status = "exit " + strconv.Itoa(*ev.ExitCode)
	case ev.Status != "" && string(ev.Status) != string(ev.Event):
		status = cli.Show(string(ev.Status))
	}
	_, err := fmt.Fprintf(p.w, tailRowFormat, ev.TS.Local().Format("01-02 15:04:05"), clip(cli.Show(string(ev.Event)), 14),
		clip(cli.OrDash(cli.Show(ev.Actor)), 10), clip(status, 8), p.cut(cli.Show(eventSummary(ev))))
	return err
}

// cut shortens an escaped command to what is left of the terminal's width,
// never in the middle of an escape.
func (p *tailPrinter) cut(s string) string {
	if p.width <= 0 {
		return s
	}
	return queue.ClipEscaped(s, max(p.width-48, 20))
}

// eventSummary is what the COMMAND column shows: raw log text, to escape.
func eventSummary(ev *queue.Event) string {
	switch {
	case ev.Torn != nil:
		return fmt.Sprintf("%d torn bytes at byte %d skipped", ev.Torn.Bytes, ev.Torn.Offset)
	case ev.Command != "":
		return ev.Command
	case ev.Path != "":
		return string(ev.Kind) + " " + ev.Path
	case ev.Tool != "":
		return "tool " + ev.Tool
	case ev.Kind == queue.KindPatch:
		return "patch in " + ev.Cwd
	case ev.ID != "":
		return "request " + ev.ID
	}
	return "-"
}

// termWidth is the width of the terminal w writes to, else $COLUMNS, else
// 0 (not a terminal: nothing is cut).
func termWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			return int(ws.Col)
		}
	}
	if c, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && c > 0 {
		return c
	}
	return 0
}
