package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/checkpoint"
	"github.com/sluice-dev/sluice/internal/app"
	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/queue"
	"github.com/sluice-dev/sluice/tui"
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

// findRun reads the audit log for the last line that names what run id
// changed (finished, timeout, killed or undone, with its checkpoint).
func findRun(logPath, id string) (*queue.Event, error) {
	id, err := resolveRunID(logPath, id)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(logPath)
	if err != nil {
		return nil, fmt.Errorf("read the audit log: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	lines, _, err := audit.Last(f, fi.Size(), 50, audit.Filter{ID: id,
		Events: []queue.EventName{queue.EventFinished, queue.EventTimeout, queue.EventKilled, queue.EventUndone}})
	if err != nil {
		return nil, err
	}
	var ev *queue.Event
	for i := len(lines) - 1; i >= 0; i-- {
		e := lines[i].Event
		switch {
		case e == nil:
		case ev == nil:
			ev = e
		case e.ID != ev.ID:
			return nil, fmt.Errorf("%s names more than one run (%s, %s, …): give more of the id", cli.Show(id), ev.ID, e.ID)
		}
	}
	if ev == nil {
		return nil, fmt.Errorf("no run %s in %s that changed files (see 'sluice audit tail')", cli.Show(id), logPath)
	}
	if ev.Checkpoint == nil || len(ev.Checkpoint.Roots) == 0 {
		why := "it was not checkpointed"
		if ev.Checkpoint != nil && ev.Checkpoint.Error != "" {
			why += ": " + ev.Checkpoint.Error
		}
		return nil, fmt.Errorf("cannot undo %s: %s", ev.ID, why)
	}
	return ev, nil
}

// undoRun is the checkpointed run an audit line names, as undo needs it.
func undoRun(ev *queue.Event) checkpoint.Run {
	r := checkpoint.Run{ID: ev.ID, Cwd: ev.Cwd}
	if ev.Checkpoint != nil {
		r.Roots, r.Overlapped = ev.Checkpoint.Roots, ev.Checkpoint.Overlapped
	}
	return r
}

// runFinder looks runs up in the audit log at logPath, for the plan's
// overlapping runs.
func runFinder(logPath string) func(id string) (*checkpoint.Run, error) {
	return func(id string) (*checkpoint.Run, error) {
		ev, err := findRun(logPath, id)
		if err != nil {
			return nil, err
		}
		r := undoRun(ev)
		return &r, nil
	}
}

// planUndo works out what undoing ev's run does now (checkpoint's
// PlanUndo), its overlapping runs looked up in the audit log at logPath.
func planUndo(ctx context.Context, st *checkpoint.Store, ev *queue.Event, undoID, logPath string) (*checkpoint.UndoPlan, error) {
	return st.PlanUndo(ctx, undoRun(ev), undoID, runFinder(logPath))
}

// applyUndo carries plan out and records the undo in the audit log
// (undoID, "undone"); it returns what the undo changed.
func applyUndo(ctx context.Context, st *checkpoint.Store, rec queue.Recorder, plan *checkpoint.UndoPlan, undoID, actor string) ([]queue.FileChange, error) {
	cs, roots, err := st.ApplyUndo(ctx, plan)
	if err != nil {
		return nil, err
	}
	changed := make([]queue.FileChange, 0, len(cs))
	for _, c := range cs {
		changed = append(changed, queue.FileChange{Path: c.Path, Change: c.Change})
	}
	ev := queue.Event{ID: undoID, Event: queue.EventUndone, Actor: actor, Cwd: plan.Run.Cwd,
		Status: queue.StatusDone, Reason: "undid " + plan.Run.ID, ChangedFiles: changed,
		Checkpoint: &queue.Checkpoint{Roots: roots}}
	if err := rec.Record(ev); err != nil {
		return changed, fmt.Errorf("the files were restored, but the audit log did not take the undo: %w", err)
	}
	return changed, nil
}

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
	ev, err := findRun(logPath, pos[0])
	if err != nil {
		fmt.Fprintf(std.Err, "sluice undo: %s\n", cli.Show(err.Error()))
		return cli.ExitFail
	}
	ctx := context.Background()
	undoID := queue.NewID()
	plan, err := planUndo(ctx, st, ev, undoID, logPath)
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
		printDiff(std.Err, plan.SharedDiff)
		include := *force || (!*yes && confirm(std, fmt.Sprintf("Restore these too, undoing what %s did to them? [y/N] ", with)))
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
		printDiff(std.Err, plan.Since)
		if !*force {
			fmt.Fprintln(std.Err, "sluice undo: refused; --force restores them too, losing those changes")
			return cli.ExitFail
		}
	}
	printDiff(std.Out, plan.Diff)
	if !*yes && !confirm(std, fmt.Sprintf("Restore %d file(s) to before %s? [y/N] ", len(plan.Paths), ev.ID)) {
		fmt.Fprintln(std.Err, "nothing restored")
		return cli.ExitFail
	}
	log, err := audit.Open(logPath)
	if err != nil {
		fmt.Fprintf(std.Err, "sluice undo: %v\n", err)
		return cli.ExitFail
	}
	defer log.Close()
	changed, err := applyUndo(ctx, st, log, plan, undoID, loginName())
	if err != nil {
		fmt.Fprintf(std.Err, "sluice undo: %s\n", cli.Show(err.Error()))
		return cli.ExitFail
	}
	fmt.Fprintf(std.Out, "undone: %d file(s) restored to before %s (undo it with 'sluice undo %s')\n", len(changed), ev.ID, undoID)
	return cli.ExitOK
}

// consoleUndo gives the console its u key: plans and undos against the
// audit log the console's engine writes.
type consoleUndo struct {
	st      *checkpoint.Store
	logPath string
	rec     queue.Recorder
	actor   string
}

// undoToken is what ApplyUndo needs of a plan.
type undoToken struct {
	plan   *checkpoint.UndoPlan
	undoID string
}

func (u *consoleUndo) plan(id string) (*tui.UndoPlan, error) {
	ev, err := findRun(u.logPath, id)
	if err != nil {
		return nil, err
	}
	undoID := queue.NewID()
	p, err := planUndo(context.Background(), u.st, ev, undoID, u.logPath)
	if err != nil {
		return nil, err
	}
	return &tui.UndoPlan{ID: ev.ID, Files: p.Paths, Diff: p.Diff, Conflicts: p.Conflicts, Since: p.Since,
		Shared: p.Shared, SharedWith: p.With, SharedDiff: p.SharedDiff,
		Token: undoToken{plan: p, undoID: undoID}}, nil
}

func (u *consoleUndo) apply(p *tui.UndoPlan, force bool) (string, error) {
	tok, ok := p.Token.(undoToken)
	if !ok {
		return "", fmt.Errorf("undo: not a plan of this console")
	}
	plan := tok.plan
	if !force {
		plan = plan.Without() // another run's files only on F
	}
	if len(plan.Paths) == 0 {
		return "", fmt.Errorf("not undone: every file it changed was also changed by %s; F restores them", strings.Join(plan.With, ", "))
	}
	if len(plan.Conflicts) > 0 && !force {
		return "", fmt.Errorf("not undone: %d file(s) changed again since", len(plan.Conflicts))
	}
	changed, err := applyUndo(context.Background(), u.st, u.rec, plan, tok.undoID, u.actor)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("undone %s: %d file(s) restored (History shows the undo; u on it redoes)", p.ID, len(changed)), nil
}

// printDiff writes a diff of files an agent wrote, line by line, as
// text: what a terminal would act on is shown escaped.
func printDiff(w io.Writer, diff string) {
	if diff == "" {
		return
	}
	for _, l := range strings.Split(strings.TrimRight(diff, "\n"), "\n") {
		fmt.Fprintln(w, cli.Show(strings.ReplaceAll(l, "\t", "    ")))
	}
}
