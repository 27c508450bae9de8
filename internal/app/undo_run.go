package app

import (
	"context"
	"fmt"
	"os"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/checkpoint"
	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/queue"
)

// FindRun reads the audit log for the last line that names what run id
// changed (finished, timeout, killed or undone, with its checkpoint).
func FindRun(logPath, id string) (*queue.Event, error) {
	id, err := cli.ResolveRunID(logPath, id)
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
		ev, err := FindRun(logPath, id)
		if err != nil {
			return nil, err
		}
		r := undoRun(ev)
		return &r, nil
	}
}

// PlanUndo works out what undoing ev's run does now (checkpoint's
// PlanUndo), its overlapping runs looked up in the audit log at logPath.
func PlanUndo(ctx context.Context, st *checkpoint.Store, ev *queue.Event, undoID, logPath string) (*checkpoint.UndoPlan, error) {
	return st.PlanUndo(ctx, undoRun(ev), undoID, runFinder(logPath))
}

// ApplyUndo carries plan out and records the undo in the audit log
// (undoID, "undone"); it returns what the undo changed.
func ApplyUndo(ctx context.Context, st *checkpoint.Store, rec queue.Recorder, plan *checkpoint.UndoPlan, undoID, actor string) ([]queue.FileChange, error) {
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
