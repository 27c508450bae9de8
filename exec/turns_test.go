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

// turnsFixture is a git project, an actor that checkpoints it, and runs
// of approved mutating commands in it.
type turnsFixture struct {
	t     *testing.T
	proj  string
	actor *Actor
	spool string
}

func newTurnsFixture(t *testing.T) *turnsFixture {
	t.Helper()
	if _, err := osexec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	proj := t.TempDir()
	if out, err := osexec.Command("git", "-C", proj, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	return &turnsFixture{t: t, proj: proj, spool: t.TempDir(),
		actor: &Actor{Runner: testRunner(), Checkpoints: &checkpoint.Store{Dir: filepath.Join(t.TempDir(), "checkpoints")}}}
}

// turnRun is one run: its request, its output so far, what it was told,
// and the holders its Waiting hook heard.
type turnRun struct {
	req   *queue.Request
	mu    sync.Mutex
	out   strings.Builder
	waits []string
	res   queue.Result
	done  chan struct{}
}

func (r *turnRun) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

func (r *turnRun) ended() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

func (r *turnRun) waited() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.waits)
}

// start runs cmd as an approved mutating command in the background.
func (f *turnsFixture) start(ctx context.Context, cmd string, ahead <-chan struct{}) *turnRun {
	r := &turnRun{done: make(chan struct{}), req: &queue.Request{Version: queue.Version, ID: queue.NewID(),
		Kind: queue.KindExec, Command: cmd, Cwd: f.proj, CreatedAt: time.Now()}}
	ro := queue.RunOptions{Verdict: queue.Verdict{Action: queue.ActionAsk, Category: "mutating", Profile: "mutating"},
		LogPath: filepath.Join(f.spool, r.req.ID+".log"), GoAhead: ahead, Approved: true}
	ro.Output = func(b []byte) {
		r.mu.Lock()
		r.out.Write(b)
		r.mu.Unlock()
	}
	ro.Waiting = func(holder string) {
		r.mu.Lock()
		r.waits = append(r.waits, holder)
		r.mu.Unlock()
	}
	go func() {
		defer close(r.done)
		r.res, _ = f.actor.Run(ctx, r.req, ro)
	}()
	return r
}

// until polls cond, failing the test after a generous hang guard.
func (f *turnsFixture) until(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			f.t.Fatalf("never: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// holding says whether run id is listed as holding a root.
func (f *turnsFixture) holding(id string) bool {
	dir := filepath.Join(f.actor.Checkpoints.Dir, "turns")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "run-") || !strings.HasSuffix(e.Name(), ".lock") {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil && strings.Contains(string(b), id) {
			return true
		}
	}
	return false
}

func changedNames(res queue.Result) []string {
	var out []string
	for _, c := range res.ChangedFiles {
		out = append(out, filepath.Base(c.Path))
	}
	slices.Sort(out)
	return out
}

// TestOverlappingRunsTakeTurns: three approved runs in one project, the
// second and third approved while the first still runs. Each is told only
// the files it changed (the others wait, and their output says for which
// run), so that undoing one never reverts another's files.
func TestOverlappingRunsTakeTurns(t *testing.T) {
	f := newTurnsFixture(t)
	ctx := context.Background()
	a := f.start(ctx, "sleep 1; touch a_only.txt", nil)
	f.until("the first run takes its turn", func() bool { return f.holding(a.req.ID) })
	b := f.start(ctx, "touch b_only.txt", nil)
	c := f.start(ctx, "touch c_only.txt", nil)
	for _, r := range []*turnRun{a, b, c} {
		<-r.done
	}
	for r, want := range map[*turnRun]string{a: "a_only.txt", b: "b_only.txt", c: "c_only.txt"} {
		if got := changedNames(r.res); !slices.Equal(got, []string{want}) {
			t.Errorf("%s is told it changed %q, want only %s", r.req.Command, got, want)
		}
		if r.res.Checkpoint == nil || len(r.res.Checkpoint.Overlapped) != 0 {
			t.Errorf("%s: checkpoint %+v names runs it did not overlap", r.req.Command, r.res.Checkpoint)
		}
		if _, err := os.Stat(filepath.Join(f.proj, want)); err != nil {
			t.Error(err)
		}
	}
	for _, r := range []*turnRun{b, c} {
		if out := r.output(); !strings.Contains(out, "waits for "+a.req.ID) && !strings.Contains(out, "waits for ") {
			t.Errorf("%s's output does not say it waits: %q", r.req.Command, out)
		}
		if w := r.waited(); len(w) != 2 || w[0] == "" || w[1] != "" {
			t.Errorf("%s: Waiting heard %q, want a holder and then \"\"", r.req.Command, w)
		}
	}
	if !strings.Contains(b.output(), "waits for "+a.req.ID) {
		t.Errorf("the second run's output does not name the first: %q", b.output())
	}
	if w := a.waited(); len(w) != 0 {
		t.Errorf("the first run waited for %q", w)
	}
}

// TestGoAheadNamesEachOther: a person lets a waiting run go ahead while
// the first still runs. It starts at once, and both results name the
// other (Checkpoint.Overlapped), because each one's changed files may now
// hold the other's.
func TestGoAheadNamesEachOther(t *testing.T) {
	f := newTurnsFixture(t)
	ctx := context.Background()
	release := filepath.Join(f.proj, ".release")
	// The first run ends only once the second has run: without going
	// ahead the second would wait for ever (the hang guard fails it).
	a := f.start(ctx, "while [ ! -e .release ]; do sleep 0.05; done; touch a_only.txt", nil)
	f.until("the first run takes its turn", func() bool { return f.holding(a.req.ID) })
	ahead := make(chan struct{})
	b := f.start(ctx, "touch b_only.txt; touch .release", ahead)
	f.until("the second run waits", func() bool { return len(b.waited()) == 1 })
	close(ahead)
	f.until("the run let go ahead ends", b.ended)
	<-a.done
	if _, err := os.Stat(release); err != nil {
		t.Fatal(err)
	}
	if b.res.Checkpoint == nil || !slices.Equal(b.res.Checkpoint.Overlapped, []string{a.req.ID}) {
		t.Errorf("the run that went ahead: checkpoint %+v, want it to name %s", b.res.Checkpoint, a.req.ID)
	}
	if a.res.Checkpoint == nil || !slices.Equal(a.res.Checkpoint.Overlapped, []string{b.req.ID}) {
		t.Errorf("the first run: checkpoint %+v, want it to name %s", a.res.Checkpoint, b.req.ID)
	}
	if !strings.Contains(b.output(), "goes ahead while "+a.req.ID) {
		t.Errorf("the second run's output does not say it went ahead: %q", b.output())
	}
	if got := changedNames(b.res); !slices.Contains(got, "b_only.txt") {
		t.Errorf("the second run is told it changed %q", got)
	}
	// A third run after both waits for nobody and names nobody.
	c := f.start(ctx, "touch c_only.txt", nil)
	<-c.done
	if w := c.waited(); len(w) != 0 || c.res.Checkpoint == nil || len(c.res.Checkpoint.Overlapped) != 0 {
		t.Errorf("a later run waited for %q, checkpoint %+v", w, c.res.Checkpoint)
	}
}

// TestKillEndsTheWait: a run killed while it waits for its turn ends at
// once, killed, and its command never starts.
func TestKillEndsTheWait(t *testing.T) {
	f := newTurnsFixture(t)
	a := f.start(context.Background(), "while [ ! -e .release ]; do sleep 0.05; done", nil)
	f.until("the first run takes its turn", func() bool { return f.holding(a.req.ID) })
	ctx, cancel := context.WithCancel(context.Background())
	b := f.start(ctx, "touch b_ran.txt", nil)
	f.until("the second run waits", func() bool { return len(b.waited()) == 1 })
	cancel()
	f.until("the killed waiter ends while the first still runs", b.ended)
	if b.res.Status != queue.StatusKilled || !strings.Contains(b.res.Reason, "never started") {
		t.Errorf("the killed waiter was told %s: %s", b.res.Status, b.res.Reason)
	}
	if err := os.WriteFile(filepath.Join(f.proj, ".release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	<-a.done
	if _, err := os.Stat(filepath.Join(f.proj, "b_ran.txt")); err == nil {
		t.Error("the killed waiter's command ran")
	}
	if f.holding(b.req.ID) {
		t.Error("the killed waiter still holds a turn")
	}
}

// TestDeadHolderHoldsNothing: a run whose engine was SIGKILLed stays
// listed as holding the project, but its run lock is free: the next run
// does not wait for it.
func TestDeadHolderHoldsNothing(t *testing.T) {
	f := newTurnsFixture(t)
	dir := filepath.Join(f.actor.Checkpoints.Dir, "turns")
	dead := queue.NewID()
	// What a killed engine leaves: its id listed under the root, its run
	// lock file present but held by nobody.
	tt, err := takeTurn(context.Background(), dir, []string{f.proj}, dead, func(string) {}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tt.self.Close() // the lock goes with the process; the list stays
	if !f.holding(dead) {
		t.Fatal("the dead run is not listed: the test does not test anything")
	}
	b := f.start(context.Background(), "touch b_only.txt", nil)
	f.until("the run ends", b.ended)
	if w := b.waited(); len(w) != 0 {
		t.Errorf("the run waited for %q, a run that is gone", w)
	}
	if b.res.Status != queue.StatusDone {
		t.Errorf("the run: %s %s", b.res.Status, b.res.Reason)
	}
	if f.holding(dead) {
		t.Error("the dead run is still listed after another took the turn")
	}
}

// TestCheckpointNote: before a run, the actor says when a run that may
// change files will not be checkpointed (no git project), and says
// nothing for one that will be or needs none.
func TestCheckpointNote(t *testing.T) {
	f := newTurnsFixture(t)
	mutating := queue.Verdict{Action: queue.ActionAsk, Category: "mutating", Profile: "mutating"}
	if n := f.actor.CheckpointNote(&queue.Request{Kind: queue.KindExec, Command: "touch x", Cwd: f.proj}, mutating); n != "" {
		t.Errorf("in a git project: %q", n)
	}
	if n := f.actor.CheckpointNote(&queue.Request{Kind: queue.KindExec, Command: "touch x", Cwd: t.TempDir()}, mutating); !strings.Contains(n, "not in a git project") {
		t.Errorf("outside a git project: %q", n)
	}
	readOnly := queue.Verdict{Action: queue.ActionAsk, Category: "read_only", Profile: "read_only"}
	if n := f.actor.CheckpointNote(&queue.Request{Kind: queue.KindExec, Command: "cat x", Cwd: t.TempDir()}, readOnly); n != "" {
		t.Errorf("a read-only run: %q", n)
	}
}
