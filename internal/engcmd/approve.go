package engcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/sluice-dev/sluice/change"
	"github.com/sluice-dev/sluice/internal/app"
	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/policy"
	"github.com/sluice-dev/sluice/queue"
)

const approveHelp = `Approve a pending request and carry it out in this process: the command
runs under a pty, its output streams to stdout (and to out/<id>.log for the
waiting agent), and sluice approve exits with the command's exit status
(124 timeout, 125 not run). A decide-mode request is answered "allow" and
not run here. ID is the request's id, any unique prefix of it of 4 or
more characters, or its last 8 or more (the short form the console shows;
see 'sluice ls'). A request the policy denies cannot be approved: change
the policy.
The approval is recorded in the audit log before anything runs. Ctrl-C
kills the command (answered "killed").

The command runs confined to its verdict's profile (read_only, mutating,
networked; see 'sluice sandbox --help'). --unconfined runs this one request
without confinement, and the audit log says so.

A file change sluice applies (write, edit, patch in execute mode) is shown
as the diff it will apply to the file as it is now, and applied only after
you answer y (--yes does not ask). The command's output reaches your terminal as text: escape sequences
(a clipboard write, a title, cursor moves) and control characters are
dropped; out/<id>.log keeps every byte. 'sluice show ID' shows a request
without deciding it.

A connect request (a networked run asks to reach a host outside its
verdict's set; its proxy holds the connection meanwhile) is answered
"allow" for the connections waiting on it; --run allows that host and port
for the rest of the run.

--digest SHA256 approves the request only if its file is, byte for byte,
the one with that SHA-256 (hex; the hub publishes it with the request): a request
changed since it was shown elsewhere is refused. --as NAME records NAME as
who approved it. The hub bridge ('sluice hub box') uses both for a person
at a console of the hub.

Exit status: the command's own; 126 the policy denies it; 124 timeout; 125
not run; 1 no such request or not confirmed; 2 usage; 130/143 interrupted.
`

func CmdApprove(args []string, std cli.Stdio, g *cli.Globals) int {
	fs := cli.NewFlags("approve", "[--policy FILE] [--audit FILE] [--unconfined] [--yes] [--run] [--digest SHA256] [--as NAME] ID", approveHelp, std, g)
	a := app.New(g)
	a.RegisterEngine(fs)
	unconfined := fs.Bool("unconfined", false, "run the command WITHOUT its confinement (it can read your secrets, write anywhere, use the network); audited as unconfined")
	yes := fs.Bool("yes", false, "apply a file change without showing its diff and asking")
	digest := fs.String("digest", "", "approve only the request file with this `SHA256` (hex)")
	as := fs.String("as", "", "record `NAME` as who approved it (default: your login name)")
	forRun := fs.Bool("run", false, "a connect request: allow the host for the rest of its run, not once")
	ids, code, ok := fs.ParseArgs(args, true)
	if !ok {
		return code
	}
	if len(ids) != 1 {
		return cli.UsageErr(std, "approve", "give one request ID (see 'sluice ls')")
	}
	if _, err := a.Config(); err != nil {
		fmt.Fprintf(std.Err, "sluice approve: %v\n", err)
		return cli.ExitUsage
	}
	sp, err := a.Spool()
	if err != nil {
		return cli.SpoolErr(std, "approve", err)
	}
	id, err := cli.ResolveID(sp, ids[0])
	if err != nil {
		fmt.Fprintf(std.Err, "sluice approve: %v\n", err)
		return cli.ExitFail
	}
	if !*yes && !confirmFileChange(std, sp, id) {
		fmt.Fprintf(std.Err, "sluice approve: %s not approved; it is still pending\n", id)
		return cli.ExitFail
	}
	// What goes wrong while the approved request is carried out (its
	// result cannot be written yet: a full disk) is said as it happens.
	a.Logf = func(format string, args ...any) {
		fmt.Fprintf(std.Err, "sluice approve: %s\n", cli.Show(fmt.Sprintf(format, args...)))
	}
	eng, err := a.Engine()
	if err != nil {
		fmt.Fprintf(std.Err, "sluice approve: %v\n", err)
		return app.EngineErrExit(err)
	}
	defer a.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// Say what runs: it is what the claimed file holds, which is what the
	// policy judges and the audit log records.
	started := func(req *queue.Request) {
		fmt.Fprintf(std.Err, "sluice approve: %s (%s) in %s: %s\n", id, req.Kind, cli.Show(req.Cwd), cli.Show(req.Summary()))
		if *unconfined && req.Kind == queue.KindExec {
			fmt.Fprintf(std.Err, "sluice approve: running it UNCONFINED, as asked\n")
		}
	}
	// The output goes to a person's terminal: text only.
	out := io.Writer(&queue.TermSafe{W: std.Out})
	res, err := eng.ApproveAs(ctx, id, queue.Approval{Actor: ActorName(*as), Claimed: started, ShownDigest: *digest,
		Output: func(p []byte) { out.Write(p) }, Unconfined: *unconfined, Scope: scopeFlag(*forRun)})
	if err != nil {
		if errors.Is(err, queue.ErrPolicyDenies) {
			fmt.Fprintf(std.Err, "sluice approve: %s: %s\n", id, cli.Show(err.Error()))
			return cli.ExitDenied
		}
		if errors.Is(err, queue.ErrChangedSinceShown) {
			fmt.Fprintf(std.Err, "sluice approve: %s: the request file is not the one with digest %s: it changed since it was shown, so it was refused (answered denied)\n", id, cli.Show(*digest))
			return cli.ExitFail
		}
		fmt.Fprintf(std.Err, "sluice approve: %s\n", cli.Show(ExplainClaim(sp, id, err).Error()))
		return cli.ExitFail
	}
	if res.Status == queue.StatusDecided && res.Scope != "" {
		fmt.Fprintf(std.Out, "approved %s (a connection; for %s)\n", id, map[queue.Scope]string{queue.ScopeRun: "the rest of the run", queue.ScopeOnce: "this once"}[res.Scope])
		return cli.ExitOK
	}
	if res.Status == queue.StatusDecided {
		fmt.Fprintf(std.Out, "approved %s (decide mode: the agent runs it)\n", id)
		return cli.ExitOK
	}
	return cli.ExitFor("approve", &res, std)
}

// confirmFileChange shows the diff a pending file request would apply and
// asks; true for a request that is not a file change (or not pending:
// approving it then says what became of it).
func confirmFileChange(std cli.Stdio, sp *queue.Spool, id string) bool {
	list, err := sp.List()
	if err != nil {
		return true
	}
	for _, e := range list {
		if e.ID != id || e.State != queue.StatePending || e.Request == nil {
			continue
		}
		req := e.Request
		if req.Kind != queue.KindWrite && req.Kind != queue.KindEdit && req.Kind != queue.KindPatch ||
			req.EffectiveMode() == queue.ModeDecide {
			return true // a decide-mode change is the agent's to apply
		}
		diff, err := change.Preview(req, policy.Roots(req.Cwd))
		if err != nil {
			fmt.Fprintf(std.Err, "sluice approve: %s: %s\n", id, cli.Show(err.Error()))
			return true // ApproveAs refuses it the same way, and answers the agent
		}
		PrintDiff(std.Out, diff)
		return Confirm(std, fmt.Sprintf("Apply this %s to %s? [y/N] ", req.Kind, cli.Show(req.Path)))
	}
	return true
}

// scopeFlag is --run's scope.
func scopeFlag(forRun bool) queue.Scope {
	if forRun {
		return queue.ScopeRun
	}
	return queue.ScopeOnce
}
