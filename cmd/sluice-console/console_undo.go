package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/sluice-dev/sluice/checkpoint"
	"github.com/sluice-dev/sluice/internal/app"
	"github.com/sluice-dev/sluice/queue"
	"github.com/sluice-dev/sluice/tui"
)

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
	ev, err := app.FindRun(u.logPath, id)
	if err != nil {
		return nil, err
	}
	undoID := queue.NewID()
	p, err := app.PlanUndo(context.Background(), u.st, ev, undoID, u.logPath)
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
	changed, err := app.ApplyUndo(context.Background(), u.st, u.rec, plan, tok.undoID, u.actor)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("undone %s: %d file(s) restored (History shows the undo; u on it redoes)", p.ID, len(changed)), nil
}
