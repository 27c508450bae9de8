package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/checkpoint"
	sexec "github.com/sluice-dev/sluice/exec"
	"github.com/sluice-dev/sluice/internal/app"
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
		found, err := app.FindRun(logPath, id[:12])
		if err != nil {
			t.Fatal(err)
		}
		undoID := queue.NewID()
		plan, err := app.PlanUndo(ctx, st, found, undoID, logPath)
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Conflicts) > 0 {
			t.Fatalf("conflicts %v", plan.Conflicts)
		}
		if _, err := app.ApplyUndo(ctx, st, log, plan, undoID, "alice"); err != nil {
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

// TestUndoOverlappedRuns: a person let run B go ahead while run A still
// ran in the same project. A's changed files then hold B's b.txt too.
// 'sluice undo A --yes' restores A's own files and leaves b.txt, naming
// B; undoing B asks about b.txt apart (A changed it too, as far as A's
// checkpoints tell): no leaves it, yes restores it.
func TestUndoOverlappedRuns(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	proj := filepath.Join(dir, "proj")
	if out, err := exec.Command("git", "init", "-q", proj).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	logPath := filepath.Join(dir, "audit.jsonl")
	log, err := audit.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	actor := &sexec.Actor{Runner: &sexec.Runner{}, Checkpoints: &checkpoint.Store{Dir: app.CheckpointDir()}}
	type ran struct {
		req  *queue.Request
		res  queue.Result
		done chan struct{}
	}
	waiting := make(chan struct{}, 1)
	start := func(cmd string, ahead <-chan struct{}) *ran {
		r := &ran{done: make(chan struct{}), req: &queue.Request{Version: queue.Version, ID: queue.NewID(), Kind: queue.KindExec,
			Command: cmd, Cwd: proj, CreatedAt: time.Now()}}
		ro := queue.RunOptions{Verdict: queue.Verdict{Action: queue.ActionAsk, Category: "mutating", Profile: "mutating"},
			LogPath: filepath.Join(dir, r.req.ID+".log"), GoAhead: ahead, Approved: true, Unconfined: true,
			Waiting: func(h string) {
				if h != "" {
					waiting <- struct{}{}
				}
			}}
		go func() {
			defer close(r.done)
			r.res, _ = actor.Run(context.Background(), r.req, ro)
			ev := queue.NewEvent(queue.EventFinished, r.req)
			ev.Status, ev.ChangedFiles, ev.Checkpoint = r.res.Status, r.res.ChangedFiles, r.res.Checkpoint
			if err := log.Record(ev); err != nil {
				t.Error(err)
			}
		}()
		return r
	}
	a := start("while [ ! -e .go ]; do sleep 0.05; done; touch a.txt", nil)
	ahead := make(chan struct{})
	var b *ran
	for b == nil {
		// B waits only once A holds its turn: start B until it waits.
		select {
		case <-a.done:
			t.Fatal("the first run ended early")
		case <-time.After(20 * time.Millisecond):
		}
		if entries, _ := os.ReadDir(filepath.Join(app.CheckpointDir(), "turns")); len(entries) > 0 {
			b = start("touch b.txt", ahead)
		}
	}
	select {
	case <-waiting:
	case <-time.After(30 * time.Second): // a hang guard
		t.Fatal("the second run never waited for the first")
	}
	close(ahead)
	<-b.done
	if err := os.WriteFile(filepath.Join(proj, ".go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	<-a.done
	if a.res.Checkpoint == nil || len(a.res.Checkpoint.Overlapped) != 1 || a.res.Checkpoint.Overlapped[0] != b.req.ID {
		t.Fatalf("the first run's checkpoint %+v does not name the second", a.res.Checkpoint)
	}
	undo := func(stdin string, args ...string) (int, string) {
		out, errs, code := sluiceCmd(t, stdin, append([]string{"undo", "--audit", logPath}, args...)...)
		return code, out + errs
	}
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(proj, name))
		return err == nil
	}

	code, out := undo("", "--yes", a.req.ID)
	if code != 0 || exists("a.txt") || exists(".go") {
		t.Fatalf("undo A --yes: exit %d, a.txt there %v, .go there %v\n%s", code, exists("a.txt"), exists(".go"), out)
	}
	if !exists("b.txt") {
		t.Errorf("undoing A removed b.txt, which B created:\n%s", out)
	}
	if !strings.Contains(out, "also changed by "+b.req.ID) || !strings.Contains(out, "left as they are") {
		t.Errorf("undo A does not say it left B's file:\n%s", out)
	}

	code, out = undo("n\n", b.req.ID)
	if code != 1 || !exists("b.txt") || !strings.Contains(out, "also changed by "+a.req.ID) {
		t.Errorf("undo B, no to the shared file: exit %d, b.txt there %v\n%s", code, exists("b.txt"), out)
	}
	code, out = undo("y\ny\n", b.req.ID)
	if code != 0 || exists("b.txt") {
		t.Errorf("undo B, yes and yes: exit %d, b.txt there %v\n%s", code, exists("b.txt"), out)
	}
	if _, err := audit.VerifyFile(logPath); err != nil {
		t.Errorf("the audit log does not verify: %v", err)
	}
}
