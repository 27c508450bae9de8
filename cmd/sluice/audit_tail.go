package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

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
			if !cli.KnownEvent(name) {
				return cli.UsageErr(std, "audit tail", "--event: no event %q; events are %s", cli.Show(string(name)), cli.EventList())
			}
			filter.Events = append(filter.Events, name)
		}
	}
	if *since != "" {
		t, err := cli.ParseSince(*since, time.Now())
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

	out := &cli.TailPrinter{W: std.Out, Std: std, JSON: *asJSON, Width: cli.TermWidth(std.Out)}
	var end int64
	f, err := os.Open(path)
	switch {
	case errors.Is(err, os.ErrNotExist) && *follow:
		// The follower waits for it.
	case err != nil:
		fmt.Fprintf(std.Err, "sluice audit tail: %s\n", explainOpen(path, err))
		return cli.ExitFail
	default:
		lines, e, err := cli.LastLines(f, *n, filter)
		f.Close()
		if err != nil {
			fmt.Fprintf(std.Err, "sluice audit tail: %s\n", cli.Show(err.Error()))
			return cli.ExitFail
		}
		end = e
		for _, l := range lines {
			out.Print(l)
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
			return out.Print(l)
		}
		return nil
	})
	if err != nil {
		fmt.Fprintf(std.Err, "sluice audit tail: %s\n", cli.Show(err.Error()))
		return cli.ExitFail
	}
	return cli.ExitOK
}
