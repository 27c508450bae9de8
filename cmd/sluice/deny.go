package main

import (
	"fmt"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/internal/app"
	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/internal/engcmd"
	"github.com/sluice-dev/sluice/queue"
)

const denyHelp = `Deny pending requests: the waiting agent gets status "denied" with the
reason (for 'sluice run', exit status 126). ID is a pending request's id
(as 'sluice ls' shows it), any unique prefix of it of 4 or more
characters, or its last 8 or more (the short form the console shows).
Each denial is recorded in the audit log (durably) before the agent is
answered.

--as NAME records NAME as who denied it instead of your login name: the hub
bridge ('sluice hub box') says so for a person at a console of the hub.

Exit status: 0 when every request was denied; 1 when one was not pending
(already decided, or no such id) or the audit log failed; 2 for bad flags.
`

func cmdDeny(args []string, std cli.Stdio, g *cli.Globals) int {
	fs := cli.NewFlags("deny", "[--reason TEXT] [--as NAME] ID...", denyHelp, std, g).Unused("config")
	reason := fs.String("reason", "", "tell the agent why (it sees this text)")
	as := fs.String("as", "", "record `NAME` as who denied it (default: your login name)")
	auditFile := fs.String("audit", "", app.AuditFlagHelp)
	ids, code, ok := fs.ParseArgs(args, true)
	if !ok {
		return code
	}
	if len(ids) == 0 {
		return cli.UsageErr(std, "deny", "which request? give its ID (see 'sluice ls')")
	}
	sp, err := g.OpenSpool()
	if err != nil {
		return cli.SpoolErr(std, "deny", err)
	}
	// The decision is recorded before it is acted on: a log that cannot be
	// opened stops the denial before anything changes.
	logPath, err := app.AuditPath(*auditFile)
	if err != nil {
		fmt.Fprintf(std.Err, "sluice deny: %v\n", err)
		return cli.ExitFail
	}
	log, err := audit.Open(logPath)
	if err != nil {
		fmt.Fprintf(std.Err, "sluice deny: %v\n", err)
		return cli.ExitFail
	}
	defer log.Close()
	sp.Recorder = log
	// The engine's own Deny: recorded first, and a decide-mode request
	// (an agent's hook) answered "decided" as the console answers it.
	eng := &queue.Engine{Spool: sp, Recorder: log, AuditPath: log.Path()}
	why := *reason
	if why == "" {
		why = "denied by a person with sluice deny"
	}
	status := cli.ExitOK
	for _, arg := range ids {
		id, err := cli.ResolveID(sp, arg)
		if err == nil {
			if _, err = eng.Deny(id, engcmd.ActorName(*as), why); err != nil {
				err = engcmd.ExplainClaim(sp, id, err)
			}
		}
		if err != nil {
			fmt.Fprintf(std.Err, "sluice deny: %v\n", err)
			status = cli.ExitFail
			continue
		}
		fmt.Fprintf(std.Out, "denied %s\n", id)
	}
	return status
}
