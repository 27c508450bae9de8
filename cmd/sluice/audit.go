package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/internal/app"
	"github.com/sluice-dev/sluice/internal/cli"
)

const auditUsage = `Usage: sluice audit verify [--audit FILE]
       sluice audit tail [-n N] [-f] [--json] [--id ID] [--event E] [--agent A] [--since DUR] [--audit FILE]

The audit log holds one JSON line per event, each with the SHA-256 of the
line before it, so that an edited, removed, reordered or inserted line
breaks the chain where it was done. The events (the "event" member):

  queued, auto_allowed, auto_denied, approved, denied, started, finished,
  timeout, killed, expired, interrupted, invalid
                the steps of a request, from its arrival to its end
  undone        a person restored the files a run changed ('sluice undo',
                u in the console); its id is the undo's own, and an undo can
                be undone in turn
  trusted       a person trusted a command's rule for one agent session
                (T, or the A dialog's "this session")
  trust_ended   a trust expired or was revoked ('sluice trust revoke')
  audit_repaired
                the log's own note: a line torn by a crash was skipped by
                the chain, and nothing before it was touched
  web_paired, web_revoked, web_passkey_added
                'sluice web': a device paired with a code, a device
                revoked, a device's passkey added

  verify   check the chain: exit 0 and a summary, or exit 1 and the first
           line that breaks it
  tail     show the last lines, as a table or as JSON; -f keeps following

The log is --audit FILE, else $SLUICE_AUDIT, else
$XDG_STATE_HOME/sluice/audit.jsonl (~/.local/state/sluice/audit.jsonl).
Run 'sluice audit verify --help' or 'sluice audit tail --help' for flags.
`

func cmdAudit(args []string, std cli.Stdio, g *cli.Globals) int {
	if len(args) == 0 {
		return cli.UsageErr(std, "audit", "verify or tail? ('sluice audit verify', 'sluice audit tail')")
	}
	switch args[0] {
	case "verify":
		return cmdAuditVerify(args[1:], std, g)
	case "tail":
		return cmdAuditTail(args[1:], std, g)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(std.Out, auditUsage)
		return cli.ExitOK
	}
	return cli.UsageErr(std, "audit", "unknown subcommand %q; use verify or tail", cli.Show(args[0]))
}

const verifyHelp = `Check the audit log's hash chain: every line's hash matches its content,
every line names the hash of the line before it, and seq counts 1, 2, 3, ...

Exit 0 with a one-line summary on stdout: the number of lines, the times of
the first and last, and the head hash (the last line's: note it somewhere
else to check later that nothing was cut from the end or rewritten).

Exit 1 naming, on stderr, the first line that breaks the chain and how:
  edited     a line was changed after it was written
  removed    lines are missing before this one
  reordered  this line is out of its place
  inserted   this line was never part of the chain
  torn       the log ends in a line cut short by a crash (not tampering);
             the next append records it as repaired and carries on
`

func cmdAuditVerify(args []string, std cli.Stdio, g *cli.Globals) int {
	fs := cli.NewFlags("audit verify", "[--audit FILE]", verifyHelp, std, g)
	file := fs.String("audit", "", app.AuditFlagHelp)
	pos, code, ok := fs.ParseArgs(args, true)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return cli.UsageErr(std, "audit verify", "takes no arguments; give the log with --audit FILE")
	}
	path, err := app.AuditPath(*file)
	if err != nil {
		fmt.Fprintf(std.Err, "sluice audit verify: %v\n", err)
		return cli.ExitFail
	}
	rep, err := audit.VerifyFile(path)
	var ce *audit.ChainError
	switch {
	case errors.As(err, &ce):
		intact := ""
		if ce.Line > 1 {
			intact = fmt.Sprintf("; lines 1-%d verify", ce.Line-1)
		}
		fmt.Fprintf(std.Err, "sluice audit verify: %s: line %d: %s: %s%s\n", cli.Show(path), ce.Line, ce.Kind, ce.Detail, intact)
		return cli.ExitFail
	case err != nil:
		fmt.Fprintf(std.Err, "sluice audit verify: %s\n", explainOpen(path, err))
		return cli.ExitFail
	}
	if rep.Lines == 0 {
		fmt.Fprintf(std.Out, "%s: ok, empty\n", cli.Show(path))
		return cli.ExitOK
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ok, %d lines, %s to %s, head %s", cli.Show(path), rep.Lines,
		rep.First.UTC().Format(time.RFC3339), rep.Last.UTC().Format(time.RFC3339), rep.Head)
	if n := len(rep.Repaired); n > 0 {
		lines := make([]string, n)
		for i, r := range rep.Repaired {
			lines[i] = strconv.FormatInt(r.Line, 10)
		}
		fmt.Fprintf(&b, "; %d torn by a crash and repaired (line %s)", n, strings.Join(lines, ", "))
	}
	fmt.Fprintln(std.Out, b.String())
	return cli.ExitOK
}

// explainOpen says what to do about a log that cannot be read.
func explainOpen(path string, err error) string {
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Sprintf("no audit log at %s: nothing was recorded there yet, or it was removed; point --audit (or SLUICE_AUDIT) at the log", cli.Show(path))
	}
	return cli.Show(err.Error())
}
