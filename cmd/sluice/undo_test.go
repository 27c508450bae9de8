package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/checkpoint"
	"github.com/sluice-dev/sluice/queue"
)

// TestUndoOfUndo: undoing a run puts its files back; undoing that undo
// brings the run's changes back again, each step found in the audit log
// by its id as a person would give it.
func TestUndoOfUndo(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	root := filepath.Join(dir, "proj")
	mustWrite := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			return "<absent>"
		}
		return string(data)
	}
	mustWrite("a.txt", "before\n")
	st := &checkpoint.Store{Dir: filepath.Join(dir, "checkpoints")}
	logPath := filepath.Join(dir, "audit.jsonl")
	log, err := audit.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()

	// A run, as exec.Actor records it.
	run := queue.NewID()
	pre, err := st.Take(ctx, root, run+"/pre")
	if err != nil {
		t.Fatal(err)
	}
	mustWrite("a.txt", "after\n")
	mustWrite("new.txt", "created\n")
	post, err := st.Take(ctx, root, run+"/post")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := st.Changes(ctx, pre, post)
	if err != nil {
		t.Fatal(err)
	}
	ev := queue.NewEvent(queue.EventFinished, &queue.Request{ID: run, Kind: queue.KindExec, Command: "gen", Cwd: root})
	ev.Status, ev.Checkpoint = queue.StatusDone, &queue.Checkpoint{Roots: []string{root}}
	for _, c := range cs {
		ev.ChangedFiles = append(ev.ChangedFiles, queue.FileChange{Path: c.Path, Change: c.Change})
	}
	if err := log.Record(ev); err != nil {
		t.Fatal(err)
	}

	undo := func(id string) string {
		t.Helper()
		found, err := findRun(logPath, id[:12])
		if err != nil {
			t.Fatal(err)
		}
		undoID := queue.NewID()
		plan, snaps, err := planUndo(ctx, st, found, undoID)
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.conflicts) > 0 {
			t.Fatalf("conflicts %v", plan.conflicts)
		}
		if _, err := applyUndo(ctx, st, log, plan, snaps, undoID, "alice"); err != nil {
			t.Fatal(err)
		}
		return undoID
	}
	u1 := undo(run)
	if read("a.txt") != "before\n" || read("new.txt") != "<absent>" {
		t.Fatalf("after the undo: a.txt %q, new.txt %q", read("a.txt"), read("new.txt"))
	}
	undo(u1)
	if read("a.txt") != "after\n" || read("new.txt") != "created\n" {
		t.Fatalf("after undoing the undo: a.txt %q, new.txt %q", read("a.txt"), read("new.txt"))
	}
	if _, err := audit.VerifyFile(logPath); err != nil {
		t.Errorf("the audit log does not verify: %v", err)
	}
}
