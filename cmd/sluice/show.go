package main

import (
	"fmt"
	"time"

	"github.com/sluice-dev/sluice/internal/app"
	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/queue"
)

const showHelp = `Show one request as the console shows it, without deciding it: its
fields, the policy's verdict with each part of the line, the diff a file
request would apply (against the file as it is now), and where it stands
(pending, running, or its result). ID is the request's id, any unique
prefix of it of 4 or more characters, or its last 8 or more (the short form
the console shows); pending requests are matched first, then running and
answered ones (see 'sluice ls').

Everything the agent wrote is shown with control and invisible characters
escaped; a command of several lines shows every line, numbered.

Exit status: 0, 1 when there is no such request.
`

func cmdShow(args []string, std cli.Stdio, g *cli.Globals) int {
	fs := cli.NewFlags("show", "[--policy FILE] ID", showHelp, std, g).Unused("config", "cwd")
	var pf app.PolicyFlags
	pf.Register(fs)
	ids, code, ok := fs.ParseArgs(args, true)
	if !ok {
		return code
	}
	if len(ids) != 1 {
		return cli.UsageErr(std, "show", "give one request ID (see 'sluice ls')")
	}
	sp, err := g.OpenSpool()
	if err != nil {
		return cli.SpoolErr(std, "show", err)
	}
	id, err := cli.ResolveID(sp, ids[0])
	if err != nil {
		fmt.Fprintf(std.Err, "sluice show: %v\n", err)
		return cli.ExitFail
	}
	var ent *queue.Entry
	if list, err := sp.List(); err == nil {
		for i := range list {
			if list[i].ID == id && list[i].Request != nil {
				ent = &list[i]
			}
		}
	}
	res, resErr := sp.ReadResult(id)
	if ent == nil && resErr != nil {
		fmt.Fprintf(std.Err, "sluice show: no request %s in %s (pending, running or answered); see 'sluice ls'\n", cli.Show(id), sp.Dir())
		return cli.ExitFail
	}
	if ent != nil {
		pf.Spool = g.Spool
		app.ShowRequest(std, ent, pf)
	}
	switch {
	case resErr == nil:
		app.ShowResult(std, res)
	case ent != nil && ent.State == queue.StatePending:
		fmt.Fprintf(std.Out, "status    pending for %s; 'sluice approve %s' or 'sluice deny %s'\n",
			age(time.Since(ent.Since)), id, id)
	case ent != nil:
		fmt.Fprintf(std.Out, "status    %s for %s\n", ent.State, age(time.Since(ent.Since)))
	}
	return cli.ExitOK
}
