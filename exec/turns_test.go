package exec

import (
	"context"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/checkpoint"
	"github.com/sluice-dev/sluice/queue"
)

// TestOverlappingRunsTakeTurns: two approved runs in one project, the
// second approved while the first still runs. Each is told only the files
// it changed (the second waits for the first, and its output says for
// which run), so undo of the first would never touch the second's file.
func TestOverlappingRunsTakeTurns(t *testing.T) {
	if _, err := osexec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	proj := t.TempDir()
	if out, err := osexec.Command("git", "-C", proj, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	a := &Actor{Runner: testRunner(), Checkpoints: &checkpoint.Store{Dir: filepath.Join(t.TempDir(), "checkpoints")}}
	spool := t.TempDir()
	mutating := queue.RunOptions{Verdict: queue.Verdict{Action: queue.ActionAsk, Category: "mutating", Profile: "mutating"}}
	run := func(cmd string, out *strings.Builder, mu *sync.Mutex) (*queue.Request, queue.Result) {
		req := &queue.Request{Version: queue.Version, ID: queue.NewID(), Kind: queue.KindExec, Command: cmd, Cwd: proj,
			CreatedAt: time.Now()}
		ro := mutating
		ro.LogPath = filepath.Join(spool, req.ID+".log")
		ro.Output = func(b []byte) {
			mu.Lock()
			out.Write(b)
			mu.Unlock()
		}
		res, _ := a.Run(context.Background(), req, ro)
		return req, res
	}
	var mu sync.Mutex
	var outA, outB strings.Builder
	var reqA *queue.Request
	var resA queue.Result
	done := make(chan struct{})
	go func() {
		defer close(done)
		reqA, resA = run("sleep 1; touch a_only.txt", &outA, &mu)
	}()
	// B comes once A has taken its turn: A's lock file names it.
	deadline := time.Now().Add(30 * time.Second) // a hang guard
	for !aHolds(t, a.Checkpoints.Dir) {
		if time.Now().After(deadline) {
			t.Fatal("the first run never took its turn")
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, resB := run("touch b_only.txt", &outB, &mu)
	<-done

	names := func(res queue.Result) []string {
		var out []string
		for _, c := range res.ChangedFiles {
			out = append(out, filepath.Base(c.Path))
		}
		return out
	}
	if got := names(resA); !slices.Equal(got, []string{"a_only.txt"}) {
		t.Errorf("the first run is told it changed %q, want only a_only.txt", got)
	}
	if got := names(resB); !slices.Equal(got, []string{"b_only.txt"}) {
		t.Errorf("the second run is told it changed %q, want only b_only.txt", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(outB.String(), "waits for "+reqA.ID) {
		t.Errorf("the second run's output does not say it waits for %s: %q", reqA.ID, outB.String())
	}
	if _, err := os.Stat(filepath.Join(proj, "b_only.txt")); err != nil {
		t.Error(err)
	}
}

// aHolds reports whether some run holds a turn under the store dir.
func aHolds(t *testing.T, dir string) bool {
	t.Helper()
	entries, _ := os.ReadDir(filepath.Join(dir, "turns"))
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join(dir, "turns", e.Name())); err == nil && len(b) > 0 {
			return true
		}
	}
	return false
}
