package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/checkpoint"
	"github.com/sluice-dev/sluice/internal/app"
	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/internal/engcmd"
	"github.com/sluice-dev/sluice/queue"
)

const undoHelp = `Put back the files a run changed: each file the run created, changed or
deleted (its result's changed_files) is restored to the checkpoint taken
just before the run. ID is the request's id (any unique prefix of it of 4
or more characters, or its last 8 or more, as the console shows them), or
an earlier undo's id: an undo can be undone.

It shows the diff that undoing would apply and asks [y/N] (--yes does not
ask). A file that changed again since the run is a conflict: the undo is
refused and the conflicts are shown, unless --force, which overwrites them
too. A file that another run changed too (one a person let go ahead while
this one ran in the same project: the result's checkpoint names it as
"overlapped") is asked about on its own: undo restores it only on a
second yes, or with --force; --yes alone leaves it as it is. The undo is
checkpointed and recorded in the audit log ("undone").

Checkpoints live in a shadow git repository per project under
$XDG_STATE_HOME/sluice/checkpoints (your own repository, index, branches and
stash are never touched); files your .gitignore ignores are not
checkpointed. 'sluice checkpoints prune' drops old ones.

Exit status: 0 undone (or nothing to undo); 1 refused (a conflict, not
confirmed, no checkpoint); 2 usage.
`

func cmdUndo(args []string, std cli.Stdio, g *cli.Globals) int {
	fs := cli.NewFlags("undo", "[--yes] [--force] ID", undoHelp, std, g).Unused("spool")
	auditFile := fs.String("audit", "", app.AuditFlagHelp)
	yes := fs.Bool("yes", false, "do not ask before restoring")
	force := fs.Bool("force", false, "restore files that changed again since the run too (overwriting those changes)")
	pos, code, ok := fs.ParseArgs(args, true)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return cli.UsageErr(std, "undo", "which run? give its ID (see 'sluice audit tail')")
	}
	cfg, err := app.LoadConfig(g.Config)
	if err != nil {
		fmt.Fprintf(std.Err, "sluice undo: %v\n", err)
		return cli.ExitUsage
	}
	st := cfg.CheckpointStore()
	if st == nil {
		st = &checkpoint.Store{Dir: app.CheckpointDir()} // off for new runs; old ones can still be undone
	}
	logPath, err := app.AuditPath(*auditFile)
	if err != nil {
		fmt.Fprintf(std.Err, "sluice undo: %v\n", err)
		return cli.ExitFail
	}
	ev, err := app.FindRun(logPath, pos[0])
	if err != nil {
		fmt.Fprintf(std.Err, "sluice undo: %s\n", cli.Show(err.Error()))
		return cli.ExitFail
	}
	ctx := context.Background()
	undoID := queue.NewID()
	plan, err := app.PlanUndo(ctx, st, ev, undoID, logPath)
	if err != nil {
		fmt.Fprintf(std.Err, "sluice undo: %s\n", cli.Show(err.Error()))
		return cli.ExitFail
	}
	if len(plan.Paths) == 0 {
		fmt.Fprintf(std.Out, "%s changed no files: nothing to undo\n", ev.ID)
		return cli.ExitOK
	}
	if len(plan.Shared) > 0 {
		// Files a run that ran beside this one changed too: restoring
		// them undoes that run's work as well, so it is asked apart.
		with := strings.Join(plan.With, ", ")
		fmt.Fprintf(std.Err, "sluice undo: %d file(s) were also changed by %s, which ran at the same time in the same project:\n", len(plan.Shared), with)
		for _, c := range plan.Shared {
			fmt.Fprintf(std.Err, "  %s\n", cli.Show(c))
		}
		engcmd.PrintDiff(std.Err, plan.SharedDiff)
		include := *force || (!*yes && engcmd.Confirm(std, fmt.Sprintf("Restore these too, undoing what %s did to them? [y/N] ", with)))
		if !include {
			plan = plan.Without()
			fmt.Fprintf(std.Err, "sluice undo: those are left as they are (answer y, or --force, to restore them too)\n")
		}
		if len(plan.Paths) == 0 {
			fmt.Fprintln(std.Err, "nothing restored")
			return cli.ExitFail
		}
	}
	if len(plan.Conflicts) > 0 {
		fmt.Fprintf(std.Err, "sluice undo: %d file(s) changed again since %s ran:\n", len(plan.Conflicts), ev.ID)
		for _, c := range plan.Conflicts {
			fmt.Fprintf(std.Err, "  %s\n", cli.Show(c))
		}
		engcmd.PrintDiff(std.Err, plan.Since)
		if !*force {
			fmt.Fprintln(std.Err, "sluice undo: refused; --force restores them too, losing those changes")
			return cli.ExitFail
		}
	}
	engcmd.PrintDiff(std.Out, plan.Diff)
	if !*yes && !engcmd.Confirm(std, fmt.Sprintf("Restore %d file(s) to before %s? [y/N] ", len(plan.Paths), ev.ID)) {
		fmt.Fprintln(std.Err, "nothing restored")
		return cli.ExitFail
	}
	log, err := audit.Open(logPath)
	if err != nil {
		fmt.Fprintf(std.Err, "sluice undo: %v\n", err)
		return cli.ExitFail
	}
	defer log.Close()
	changed, err := app.ApplyUndo(ctx, st, log, plan, undoID, engcmd.LoginName())
	if err != nil {
		fmt.Fprintf(std.Err, "sluice undo: %s\n", cli.Show(err.Error()))
		return cli.ExitFail
	}
	fmt.Fprintf(std.Out, "undone: %d file(s) restored to before %s (undo it with 'sluice undo %s')\n", len(changed), ev.ID, undoID)
	return cli.ExitOK
}
