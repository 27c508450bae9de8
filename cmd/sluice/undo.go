package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/checkpoint"
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

// undoPlan is what undoing a run would do.
type undoPlan struct {
	id        string   // the run (or undo) being undone
	cwd       string   // its cwd, for the undo's audit line
	roots     []string // checkpointed roots
	paths     []string // the files it changed, absolute
	conflicts []string // of paths, those changed again since
	diff      string   // what undoing applies (now → before the run)
	conflict  string   // how the conflicts changed since the run
	kept      []string // "created" by the run but there before it: left alone
	// shared are those of paths that a run overlapping this one
	// (Checkpoint.Overlapped) changed too, or may have (its changes are
	// not known yet); with names those runs; sharedDiff is what undoing
	// applies to them (diff covers the others).
	shared     []string
	with       []string
	sharedDiff string
}

// without returns the plan minus its shared files: what undo restores
// when the person keeps the other run's files.
func (p *undoPlan) without() *undoPlan {
	q := *p
	q.paths = slices.DeleteFunc(slices.Clone(p.paths), func(s string) bool { return slices.Contains(p.shared, s) })
	q.conflicts = slices.DeleteFunc(slices.Clone(p.conflicts), func(s string) bool { return slices.Contains(p.shared, s) })
	q.shared, q.sharedDiff = nil, ""
	return &q
}

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
			return nil, fmt.Errorf("%s names more than one run (%s, %s, …): give more of the id", show(id), ev.ID, e.ID)
		}
	}
	if ev == nil {
		return nil, fmt.Errorf("no run %s in %s that changed files (see 'sluice audit tail')", show(id), logPath)
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

// planUndo works out what undoing ev's run does now, taking the undo's
// own "before" checkpoint (undoID/pre) on the way. The files come from the
// checkpoints themselves, not from the log line (which names the roots
// only): an edited log cannot make undo delete what the run did not
// change. A file that was there before the run but ignored then (a run
// that edited .gitignore) is not "created" by it and is left alone.
// find looks up the runs ev overlapped (by id, as findRun does): a file
// one of them changed too is shared, and so is every file when one of
// them cannot be found (it still runs).
func planUndo(ctx context.Context, st *checkpoint.Store, ev *queue.Event, undoID string, find func(id string) (*queue.Event, error)) (*undoPlan, map[string][3]checkpoint.Snapshot, error) {
	p := &undoPlan{id: ev.ID, cwd: ev.Cwd}
	others, err := overlapping(ctx, st, ev, find)
	if err != nil {
		return nil, nil, err
	}
	snaps := map[string][3]checkpoint.Snapshot{} // root → pre, post, now
	for _, root := range ev.Checkpoint.Roots {
		if !filepath.IsAbs(root) || filepath.Clean(root) != root {
			return nil, nil, fmt.Errorf("the log names %q as a checkpointed root, which is not a clean absolute path", root)
		}
		pre, err := st.Ref(ctx, root, ev.ID+"/pre")
		if err != nil {
			return nil, nil, err
		}
		post, err := st.Ref(ctx, root, ev.ID+"/post")
		if err != nil {
			return nil, nil, err
		}
		changes, err := st.Changes(ctx, pre, post)
		if err != nil {
			return nil, nil, err
		}
		took, err := st.Time(ctx, pre)
		if err != nil {
			return nil, nil, err
		}
		var under []string
		for _, c := range changes {
			if slices.Contains(strings.Split(c.Path, string(filepath.Separator)), ".git") {
				continue // never a repository's own files
			}
			if c.Change == checkpoint.Created {
				if fi, err := os.Lstat(c.Path); err == nil && fi.ModTime().Before(took.Add(-time.Second)) {
					p.kept = append(p.kept, c.Path) // there before the run, ignored then
					continue
				}
			}
			under = append(under, c.Path)
		}
		if len(under) == 0 {
			continue
		}
		now, err := st.Take(ctx, root, undoID+"/pre")
		if err != nil {
			return nil, nil, err
		}
		snaps[root] = [3]checkpoint.Snapshot{pre, post, now}
		p.roots = append(p.roots, root)
		p.paths = append(p.paths, under...)
		var own, shared []string
		for _, path := range under {
			if by := others.changed(path); len(by) > 0 {
				shared = append(shared, path)
				for _, id := range by {
					if !slices.Contains(p.with, id) {
						p.with = append(p.with, id)
					}
				}
			} else {
				own = append(own, path)
			}
		}
		p.shared = append(p.shared, shared...)
		if len(shared) > 0 {
			d, err := st.Diff(ctx, now, pre, shared)
			if err != nil {
				return nil, nil, err
			}
			p.sharedDiff += d
		}
		conflicts, err := conflictsSince(ctx, st, post, now, under)
		if err != nil {
			return nil, nil, err
		}
		p.conflicts = append(p.conflicts, conflicts...)
		if len(conflicts) > 0 {
			d, err := st.Diff(ctx, post, now, conflicts)
			if err != nil {
				return nil, nil, err
			}
			p.conflict += d
		}
		if len(own) > 0 {
			d, err := st.Diff(ctx, now, pre, own)
			if err != nil {
				return nil, nil, err
			}
			p.diff += d
		}
	}
	slices.Sort(p.paths)
	slices.Sort(p.shared)
	slices.Sort(p.with)
	return p, snaps, nil
}

// overlaps is what the runs one run overlapped changed: path → their ids;
// unknown names the runs whose changes could not be read (every file
// counts as theirs too).
type overlaps struct {
	by      map[string][]string
	unknown []string
}

func (o overlaps) changed(path string) []string {
	return append(slices.Clone(o.by[path]), o.unknown...)
}

// overlapping reads what the runs ev names as overlapped changed, from
// their own checkpoints.
func overlapping(ctx context.Context, st *checkpoint.Store, ev *queue.Event, find func(id string) (*queue.Event, error)) (overlaps, error) {
	o := overlaps{by: map[string][]string{}}
	for _, id := range ev.Checkpoint.Overlapped {
		if !queue.ValidID(id) {
			return o, fmt.Errorf("the log names %q as a run %s overlapped, which is not a request id", id, ev.ID)
		}
		var other *queue.Event
		var err error
		if find != nil {
			other, err = find(id)
		}
		if err != nil || other == nil || other.Checkpoint == nil {
			o.unknown = append(o.unknown, id)
			continue
		}
		for _, root := range other.Checkpoint.Roots {
			pre, err := st.Ref(ctx, root, id+"/pre")
			if err != nil {
				o.unknown = append(o.unknown, id)
				break
			}
			post, err := st.Ref(ctx, root, id+"/post")
			if err != nil {
				o.unknown = append(o.unknown, id)
				break
			}
			changes, err := st.Changes(ctx, pre, post)
			if err != nil {
				return o, err
			}
			for _, c := range changes {
				if !slices.Contains(o.by[c.Path], id) {
					o.by[c.Path] = append(o.by[c.Path], id)
				}
			}
		}
	}
	return o, nil
}

// conflictsSince are those of paths that changed between the run's end
// (post) and now.
func conflictsSince(ctx context.Context, st *checkpoint.Store, post, now checkpoint.Snapshot, paths []string) ([]string, error) {
	since, err := st.Changes(ctx, post, now)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range since {
		if slices.Contains(paths, c.Path) {
			out = append(out, c.Path)
		}
	}
	return out, nil
}

// pathsUnder are the paths that lie under root.
func pathsUnder(root string, paths []string) []string {
	var out []string
	for _, p := range paths {
		if strings.HasPrefix(p, strings.TrimSuffix(root, string(filepath.Separator))+string(filepath.Separator)) {
			out = append(out, p)
		}
	}
	return out
}

// applyUndo restores plan's files, checkpoints the result (undoID/post)
// and records the undo in the audit log; it returns what the undo changed.
func applyUndo(ctx context.Context, st *checkpoint.Store, rec queue.Recorder, plan *undoPlan,
	snaps map[string][3]checkpoint.Snapshot, undoID, actor string) ([]queue.FileChange, error) {
	var changed []queue.FileChange
	var roots []string
	for _, root := range plan.roots {
		s, ok := snaps[root]
		if !ok {
			continue
		}
		// What the person saw may be stale: look again now, and refuse
		// files that changed since the plan unless they were conflicts
		// already accepted (force).
		again, err := st.Take(ctx, root, undoID+"/pre")
		if err != nil {
			return nil, err
		}
		moved, err := st.Changes(ctx, s[2], again)
		if err != nil {
			return nil, err
		}
		for _, c := range moved {
			if slices.Contains(plan.paths, c.Path) {
				return nil, fmt.Errorf("%s changed after the undo was shown; nothing was restored: look again", c.Path)
			}
		}
		s[2] = again
		if err := st.Restore(ctx, s[0], pathsUnder(root, plan.paths)); err != nil {
			return nil, err
		}
		after, err := st.Take(ctx, root, undoID+"/post")
		if err != nil {
			return nil, err
		}
		cs, err := st.Changes(ctx, s[2], after)
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			changed = append(changed, queue.FileChange{Path: c.Path, Change: c.Change})
		}
		roots = append(roots, root)
	}
	ev := queue.Event{ID: undoID, Event: queue.EventUndone, Actor: actor, Cwd: plan.cwd,
		Status: queue.StatusDone, Reason: "undid " + plan.id, ChangedFiles: changed,
		Checkpoint: &queue.Checkpoint{Roots: roots}}
	if err := rec.Record(ev); err != nil {
		return changed, fmt.Errorf("the files were restored, but the audit log did not take the undo: %w", err)
	}
	return changed, nil
}

func cmdUndo(args []string, std stdio, g *globals) int {
	fs := newFlags("undo", "[--yes] [--force] ID", undoHelp, std, g).unused("spool")
	auditFile := fs.String("audit", "", auditFlagHelp)
	yes := fs.Bool("yes", false, "do not ask before restoring")
	force := fs.Bool("force", false, "restore files that changed again since the run too (overwriting those changes)")
	pos, code, ok := fs.parse(args, true)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageErr(std, "undo", "which run? give its ID (see 'sluice audit tail')")
	}
	cfg, err := loadConfig(g.config)
	if err != nil {
		fmt.Fprintf(std.err, "sluice undo: %v\n", err)
		return exitUsage
	}
	st := cfg.checkpointStore()
	if st == nil {
		st = &checkpoint.Store{Dir: checkpointDir()} // off for new runs; old ones can still be undone
	}
	logPath, err := auditPath(*auditFile)
	if err != nil {
		fmt.Fprintf(std.err, "sluice undo: %v\n", err)
		return exitFail
	}
	ev, err := findRun(logPath, pos[0])
	if err != nil {
		fmt.Fprintf(std.err, "sluice undo: %s\n", show(err.Error()))
		return exitFail
	}
	ctx := context.Background()
	undoID := queue.NewID()
	plan, snaps, err := planUndo(ctx, st, ev, undoID, func(id string) (*queue.Event, error) { return findRun(logPath, id) })
	if err != nil {
		fmt.Fprintf(std.err, "sluice undo: %s\n", show(err.Error()))
		return exitFail
	}
	if len(plan.paths) == 0 {
		fmt.Fprintf(std.out, "%s changed no files: nothing to undo\n", ev.ID)
		return exitOK
	}
	if len(plan.shared) > 0 {
		// Files a run that ran beside this one changed too: restoring
		// them undoes that run's work as well, so it is asked apart.
		with := strings.Join(plan.with, ", ")
		fmt.Fprintf(std.err, "sluice undo: %d file(s) were also changed by %s, which ran at the same time in the same project:\n", len(plan.shared), with)
		for _, c := range plan.shared {
			fmt.Fprintf(std.err, "  %s\n", show(c))
		}
		printDiff(std.err, plan.sharedDiff)
		include := *force || (!*yes && confirm(std, fmt.Sprintf("Restore these too, undoing what %s did to them? [y/N] ", with)))
		if !include {
			plan = plan.without()
			fmt.Fprintf(std.err, "sluice undo: those are left as they are (answer y, or --force, to restore them too)\n")
		}
		if len(plan.paths) == 0 {
			fmt.Fprintln(std.err, "nothing restored")
			return exitFail
		}
	}
	if len(plan.conflicts) > 0 {
		fmt.Fprintf(std.err, "sluice undo: %d file(s) changed again since %s ran:\n", len(plan.conflicts), ev.ID)
		for _, c := range plan.conflicts {
			fmt.Fprintf(std.err, "  %s\n", show(c))
		}
		printDiff(std.err, plan.conflict)
		if !*force {
			fmt.Fprintln(std.err, "sluice undo: refused; --force restores them too, losing those changes")
			return exitFail
		}
	}
	printDiff(std.out, plan.diff)
	if !*yes && !confirm(std, fmt.Sprintf("Restore %d file(s) to before %s? [y/N] ", len(plan.paths), ev.ID)) {
		fmt.Fprintln(std.err, "nothing restored")
		return exitFail
	}
	log, err := audit.Open(logPath)
	if err != nil {
		fmt.Fprintf(std.err, "sluice undo: %v\n", err)
		return exitFail
	}
	defer log.Close()
	changed, err := applyUndo(ctx, st, log, plan, snaps, undoID, loginName())
	if err != nil {
		fmt.Fprintf(std.err, "sluice undo: %s\n", show(err.Error()))
		return exitFail
	}
	fmt.Fprintf(std.out, "undone: %d file(s) restored to before %s (undo it with 'sluice undo %s')\n", len(changed), ev.ID, undoID)
	return exitOK
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
	plan   *undoPlan
	snaps  map[string][3]checkpoint.Snapshot
	undoID string
}

func (u *consoleUndo) plan(id string) (*tui.UndoPlan, error) {
	ev, err := findRun(u.logPath, id)
	if err != nil {
		return nil, err
	}
	undoID := queue.NewID()
	p, snaps, err := planUndo(context.Background(), u.st, ev, undoID, func(id string) (*queue.Event, error) { return findRun(u.logPath, id) })
	if err != nil {
		return nil, err
	}
	return &tui.UndoPlan{ID: ev.ID, Files: p.paths, Diff: p.diff, Conflicts: p.conflicts, Since: p.conflict,
		Shared: p.shared, SharedWith: p.with, SharedDiff: p.sharedDiff,
		Token: undoToken{plan: p, snaps: snaps, undoID: undoID}}, nil
}

func (u *consoleUndo) apply(p *tui.UndoPlan, force bool) (string, error) {
	tok, ok := p.Token.(undoToken)
	if !ok {
		return "", fmt.Errorf("undo: not a plan of this console")
	}
	plan := tok.plan
	if !force {
		plan = plan.without() // another run's files only on F
	}
	if len(plan.paths) == 0 {
		return "", fmt.Errorf("not undone: every file it changed was also changed by %s; F restores them", strings.Join(plan.with, ", "))
	}
	if len(plan.conflicts) > 0 && !force {
		return "", fmt.Errorf("not undone: %d file(s) changed again since", len(plan.conflicts))
	}
	changed, err := applyUndo(context.Background(), u.st, u.rec, plan, tok.snaps, tok.undoID, u.actor)
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
		fmt.Fprintln(w, show(strings.ReplaceAll(l, "\t", "    ")))
	}
}
