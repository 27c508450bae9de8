package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/sluice-dev/sluice/internal/app"
	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/queue"
)

const lsHelp = `List the requests waiting for a decision and those running, oldest first:
id, age, state, agent, kind and command (or path). Text written by agents is
shown with control characters and invisible Unicode escaped.

States: pending (waiting for a decision), running, orphaned (its actor died;
the next console answers it interrupted), bad (unreadable; the next console
moves it to bad/).

Exit status: 0; 1 when the spool cannot be read; 2 for bad flags or a
configuration that does not load.
`

// lsEntry is one line of 'sluice ls --json'.
type lsEntry struct {
	ID      string         `json:"id"`
	File    string         `json:"file"`
	State   queue.State    `json:"state"`
	Since   time.Time      `json:"since,omitzero"`
	AgeS    int64          `json:"age_s"`
	Error   string         `json:"error,omitempty"`
	Request *queue.Request `json:"request,omitempty"`
}

func cmdLs(args []string, std cli.Stdio, g *cli.Globals) int {
	fs := cli.NewFlags("ls", "[--json]", lsHelp, std, g)
	asJSON := fs.Bool("json", false, "print a JSON array instead of a table")
	pos, code, ok := fs.ParseArgs(args, true)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return cli.UsageErr(std, "ls", "takes no arguments")
	}
	// A broken configuration is said here too, not first when it matters.
	if _, err := app.LoadConfig(g.Config); err != nil {
		fmt.Fprintf(std.Err, "sluice ls: %v\n", err)
		return cli.ExitUsage
	}
	sp, err := g.OpenSpool()
	if err != nil {
		return cli.SpoolErr(std, "ls", err)
	}
	list, err := sp.List()
	if err != nil {
		fmt.Fprintf(std.Err, "sluice ls: %v\n", err)
		return cli.ExitFail
	}
	now := time.Now()
	if *asJSON {
		out := make([]lsEntry, 0, len(list))
		for _, e := range list {
			le := lsEntry{ID: e.ID, File: e.Name, State: e.State, Since: e.Since, Request: e.Request}
			if !e.Since.IsZero() {
				le.AgeS = int64(now.Sub(e.Since) / time.Second)
			}
			if e.Err != nil {
				le.Error = e.Err.Error()
			}
			out = append(out, le)
		}
		cli.WriteJSON(std.Out, out)
		return cli.ExitOK
	}
	if len(list) == 0 {
		fmt.Fprintf(std.Err, "nothing pending or running in %s\n", sp.Dir())
		return cli.ExitOK
	}
	tw := tabwriter.NewWriter(std.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAGE\tSTATE\tAGENT\tKIND\tCOMMAND")
	for _, e := range list {
		id := e.ID
		if id == "" {
			id = cli.Show(e.Name)
		}
		agent, kind, what := "-", "-", ""
		if r := e.Request; r != nil {
			agent, kind, what = cli.OrDash(cli.Show(r.Agent)), string(r.Kind), cli.Show(r.Summary())
		} else if e.Err != nil {
			what = cli.Show(e.Err.Error())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", id, age(now.Sub(e.Since)), e.State,
			cli.Clip(agent, 16), kind, cli.Clip(what, 72))
	}
	tw.Flush()
	return cli.ExitOK
}

// age prints a duration the way people read queue ages: 4s, 3m, 2h, 5d.
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}
