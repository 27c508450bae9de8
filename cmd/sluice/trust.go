package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/internal/app"
	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/internal/engcmd"
	"github.com/sluice-dev/sluice/policy"
	"github.com/sluice-dev/sluice/queue"
)

// revokeTrust ends the trust arg names (its whole id, a unique prefix or
// the console's short form) for actor; none when arg names none.
func revokeTrust(ts *policy.TrustStore, rec queue.Recorder, arg, actor string) ([]policy.TrustEntry, error) {
	return ts.Revoke(rec, actor, func(ids []string) (string, error) {
		m := cli.MatchIDs(arg, ids)
		if len(m) > 1 {
			return "", cli.Ambiguous(arg, "trusts", m)
		}
		if len(m) == 1 {
			return m[0], nil
		}
		return "", nil
	})
}

const trustHelp = `List or revoke trust windows. T in the console approves a request and
trusts its rule for that agent session for a while ([console] trust_minutes,
default 15); the A dialog's "this session" scope trusts it for the rest of
the session. Requests of that session that the rule covers then run without
asking (a deny still wins). Trusts expire on their own; granting, expiry
and revoking are recorded in the audit log.

  sluice trust ls             the trusts in force: id, session, pattern, time left
  sluice trust revoke ID      end one now (the id, any unique prefix of it
                              of 4 or more characters, or its last 8 or
                              more, as the console shows them)

Exit status: 0; 1 when there is no such trust or the file cannot be read; 2 usage.
`

func cmdTrust(args []string, std cli.Stdio, g *cli.Globals) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		w, code := std.Out, cli.ExitOK
		if len(args) == 0 {
			w, code = std.Err, cli.ExitUsage
		}
		fmt.Fprint(w, "Usage: sluice trust ls | revoke ID\n\n"+trustHelp)
		return code
	}
	ts := policy.TrustStoreFor(app.TrustPath())
	now := time.Now()
	switch args[0] {
	case "ls":
		if len(args) > 1 {
			return cli.UsageErr(std, "trust ls", "takes no arguments")
		}
		es, err := ts.All()
		if err != nil {
			fmt.Fprintf(std.Err, "sluice trust: %s\n", cli.Show(err.Error()))
			return cli.ExitFail
		}
		tw := tabwriter.NewWriter(std.Out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSESSION\tAGENT\tPATTERN\tLEFT\tBY")
		n := 0
		for _, e := range es {
			if !now.Before(e.Until) {
				continue
			}
			n++
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.ID, cli.Show(e.Session), cli.OrDash(cli.Show(e.Agent)), cli.Show(e.Pattern),
				e.Until.Sub(now).Round(time.Second), cli.Show(e.By))
		}
		if n == 0 {
			fmt.Fprintln(std.Err, "no trust in force")
			return cli.ExitOK
		}
		tw.Flush()
		return cli.ExitOK
	case "revoke":
		if len(args) != 2 {
			return cli.UsageErr(std, "trust revoke", "which trust? give its id (see 'sluice trust ls')")
		}
		path, err := app.AuditPath("")
		if err != nil {
			fmt.Fprintf(std.Err, "sluice trust: %v\n", err)
			return cli.ExitFail
		}
		log, err := audit.Open(path)
		if err != nil {
			fmt.Fprintf(std.Err, "sluice trust: %v\n", err)
			return cli.ExitFail
		}
		defer log.Close()
		ended, err := revokeTrust(ts, log, args[1], engcmd.LoginName())
		if err != nil {
			fmt.Fprintf(std.Err, "sluice trust: %s\n", cli.Show(err.Error()))
			return cli.ExitFail
		}
		if len(ended) == 0 {
			fmt.Fprintf(std.Err, "sluice trust: no trust %s (see 'sluice trust ls')\n", cli.Show(args[1]))
			return cli.ExitFail
		}
		for _, e := range ended {
			fmt.Fprintf(std.Out, "revoked %s: %s for session %s\n", e.ID, cli.Show(e.Pattern), cli.Show(e.Session))
		}
		return cli.ExitOK
	}
	return cli.UsageErr(std, "trust", "unknown subcommand %q (ls or revoke)", args[0])
}
