package main

import (
	"context"
	"errors"
	"go/parser"
	"go/token"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/change"
	"github.com/sluice-dev/sluice/policy"
	"github.com/sluice-dev/sluice/queue"
)

// newDemo makes a demo project and an empty spool for one test.
func newDemo(t *testing.T) (dir string, sp *queue.Spool) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "hello")
	if err := demoProject(dir); err != nil {
		t.Fatal(err)
	}
	sp, err := queue.Open(filepath.Join(t.TempDir(), "spool"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, sp
}

// pendingDemo returns the pending requests of sp, in id order, each read
// back from its file and decoded as strictly as a console reads it.
func pendingDemo(t *testing.T, sp *queue.Spool) []*queue.Request {
	t.Helper()
	list, err := sp.List()
	if err != nil {
		t.Fatal(err)
	}
	var reqs []*queue.Request
	for _, e := range list {
		if e.State != queue.StatePending {
			t.Fatalf("%s is %s (%v), want pending", e.Name, e.State, e.Err)
		}
		data, err := os.ReadFile(sp.RequestPath(e.ID))
		if err != nil {
			t.Fatal(err)
		}
		req, err := queue.DecodeRequest(data, e.ID)
		if err != nil {
			t.Fatalf("%s: %v", e.ID, err)
		}
		reqs = append(reqs, req)
	}
	slices.SortFunc(reqs, func(a, b *queue.Request) int { return strings.Compare(a.ID, b.ID) })
	return reqs
}

func TestDemoProject(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hello")
	if err := demoProject(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"go.mod", "main.go", "main_test.go", "README.md", "Makefile", "build/version.txt", ".gitignore", ".git/HEAD"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("missing %s: %v", name, err)
		} else if fi.Size() == 0 {
			t.Errorf("%s is empty", name)
		}
	}
	for _, name := range []string{"main.go", "main_test.go"} {
		if _, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, name), nil, 0); err != nil {
			t.Errorf("%s is not Go: %v", name, err)
		}
	}
	if mk, _ := os.ReadFile(filepath.Join(dir, "Makefile")); !strings.Contains(string(mk), "\n\tgo build") {
		t.Errorf("Makefile recipes are not tab-indented:\n%s", mk)
	}
	// It never overwrites: a second run fails and leaves the files alone.
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := demoProject(dir); !errors.Is(err, os.ErrExist) {
		t.Errorf("second demoProject: %v, want a file-exists error", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "main.go")); string(b) != "mine\n" {
		t.Errorf("second demoProject overwrote main.go: %q", b)
	}
}

// TestDemoProjectGit checks that the hand-made repository is one git
// reads, so the demo's 'git status' works.
func TestDemoProjectGit(t *testing.T) {
	git, err := osexec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	dir := filepath.Join(t.TempDir(), "hello")
	if err := demoProject(dir); err != nil {
		t.Fatal(err)
	}
	cmd := osexec.Command(git, "status", "--porcelain")
	cmd.Dir = dir
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GIT_") })
	cmd.Env = append(cmd.Env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git status: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "?? main.go") || strings.Contains(string(out), "build/") {
		t.Errorf("git status --porcelain:\n%s\nwant main.go untracked and build/ ignored", out)
	}
}

func TestDemoAgent(t *testing.T) {
	dir, sp := newDemo(t)
	start := time.Now()
	ids, err := demoAgent(context.Background(), sp, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := len(demoRequests(dir))
	if len(ids) != want {
		t.Fatalf("submitted %d requests, want %d", len(ids), want)
	}
	if !slices.IsSorted(ids) {
		t.Errorf("ids are not in time order: %v", ids)
	}
	reqs := pendingDemo(t, sp)
	if len(reqs) != want {
		t.Fatalf("%d pending, want %d", len(reqs), want)
	}
	kinds := map[queue.Kind]bool{}
	hidden := 0
	for i, r := range reqs {
		if r.ID != ids[i] {
			t.Errorf("pending #%d is %s, want %s", i, r.ID, ids[i])
		}
		kinds[r.Kind] = true
		if r.Cwd != dir || r.Agent == "" || r.Session == "" || r.Note == "" || r.EffectiveMode() != queue.ModeExecute {
			t.Errorf("%s: cwd %q agent %q session %q note %q mode %q", r.Summary(), r.Cwd, r.Agent, r.Session, r.Note, r.EffectiveMode())
		}
		if r.CreatedAt.Before(start.Add(-time.Second)) || r.ExpiresAt.Sub(r.CreatedAt) != demoExpiry {
			t.Errorf("%s: created %v, expires %v", r.Summary(), r.CreatedAt, r.ExpiresAt)
		}
		if _, ok := queue.Printable(r.Command); !ok {
			hidden++
		}
		switch r.Kind {
		case queue.KindEdit, queue.KindWrite:
			// The change applies to the project as demoProject made it.
			c, err := change.Plan(r, policy.Roots(dir))
			if err != nil {
				t.Errorf("%s: %v", r.Summary(), err)
				continue
			}
			if fc := c.Files[0]; string(fc.Old) == string(fc.New) {
				t.Errorf("%s changes nothing", r.Summary())
			}
		}
	}
	for _, k := range []queue.Kind{queue.KindExec, queue.KindEdit, queue.KindWrite} {
		if !kinds[k] {
			t.Errorf("no %s request in the demo", k)
		}
	}
	if hidden == 0 {
		t.Error("no demo command holds hidden characters")
	}
}

// TestDemoAgentCancel: when ctx ends, demoAgent stops, returning the ids
// it submitted and ctx.Err().
func TestDemoAgentCancel(t *testing.T) {
	dir, sp := newDemo(t)
	ctx, cancel := context.WithCancel(context.Background())
	type ret struct {
		ids []string
		err error
	}
	done := make(chan ret, 1)
	go func() {
		ids, err := demoAgent(ctx, sp, dir, time.Hour)
		done <- ret{ids, err}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		list, err := sp.List()
		if err != nil {
			t.Fatal(err)
		}
		if len(list) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first request never arrived")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	var r ret
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("demoAgent did not stop when its context was cancelled")
	}
	if !errors.Is(r.err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", r.err)
	}
	if len(r.ids) != 1 {
		t.Errorf("submitted %v, want just the first", r.ids)
	}
	if reqs := pendingDemo(t, sp); len(reqs) != 1 || reqs[0].Command != "git status" {
		t.Errorf("pending after cancel: %d requests", len(reqs))
	}

	// A context already ended submits nothing.
	_, sp2 := newDemo(t)
	ids, err := demoAgent(ctx, sp2, dir, 0)
	if len(ids) != 0 || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled before start: %v, %v", ids, err)
	}
}

// TestDemoVerdicts judges each demo request with the embedded default
// policy, as the console would, and checks the mix: the console shows
// every action, and the Trojan-source line is flagged.
func TestDemoVerdicts(t *testing.T) {
	dir, sp := newDemo(t)
	if _, err := demoAgent(context.Background(), sp, dir, 0); err != nil {
		t.Fatal(err)
	}
	// The verdicts noted in demoRequests, in order.
	want := []queue.Action{"allow", "allow", "allow", "allow_with_checkpoint", "ask", "ask", "deny", "deny", "ask", "allow", "ask"}
	reqs := pendingDemo(t, sp)
	if len(reqs) != len(want) {
		t.Fatalf("%d requests, want %d", len(reqs), len(want))
	}
	judge := &policy.Judge{Options: policy.Options{}}
	seen := map[string]bool{}
	for i, r := range reqs {
		v := judge.Judge(r)
		seen[string(v.Action)] = true
		show, _ := queue.Printable(r.Summary())
		t.Logf("%-5s %-16s %-8s %s", v.Action, v.Category, v.Risk, show)
		if v.Action != want[i] {
			t.Errorf("%s: %s (%s), want %s; reasons %q", show, v.Action, v.Category, want[i], v.Reasons)
		}
		if _, ok := queue.Printable(r.Command); !ok {
			if !slices.ContainsFunc(v.Reasons, func(s string) bool { return strings.Contains(s, "invisible characters") }) {
				t.Errorf("%s: hidden characters not among the reasons %q", show, v.Reasons)
			}
		}
	}
	for _, a := range []string{"allow", "ask", "deny"} {
		if !seen[a] {
			t.Errorf("no demo request gets %s", a)
		}
	}
}
