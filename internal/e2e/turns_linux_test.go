package e2e

import (
	"encoding/json"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// changed is what an agent's 'sluice run --json' result says a run
// changed, by file name, and which runs it overlapped.
func changed(t *testing.T, ans Answer) (files, overlapped []string) {
	t.Helper()
	var r struct {
		ChangedFiles []struct {
			Path string `json:"path"`
		} `json:"changed_files"`
		Checkpoint *struct {
			Overlapped []string `json:"overlapped"`
		} `json:"checkpoint"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(ans.Stdout)), &r); err != nil {
		t.Fatalf("the agent's result: %v\n%s", err, ans.Stdout)
	}
	for _, c := range r.ChangedFiles {
		files = append(files, filepath.Base(c.Path))
	}
	slices.Sort(files)
	if r.Checkpoint != nil {
		overlapped = r.Checkpoint.Overlapped
	}
	return files, overlapped
}

// TestFaultOverlappingRuns: three mutating runs in one git project, each
// approved by its own 'sluice approve' (three terminals) while the first
// still runs. They take turns: the second and third wait for the run
// ahead (their output says for which), each agent is told only the file
// its own run changed, no result names another run, and 'sluice undo' of
// each, in any order, restores its own file and leaves the others'.
// Nothing ran twice; the chain verifies. At 5d510e7 the first run was
// told it changed all three files, and undoing it deleted the others.
func TestFaultOverlappingRuns(t *testing.T) {
	if _, err := osexec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	b := NewBox(t, BoxOptions{Policy: AskAll})
	if out, err := osexec.Command("git", "init", "-q", b.Project).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	b.Serve()
	files := []string{"a_only.txt", "b_only.txt", "c_only.txt"}
	cmds := []string{"sleep 1; echo a > a_only.txt", "echo b > b_only.txt", "echo c > c_only.txt"}
	var agents []*Agent
	var ids []string
	for _, c := range cmds {
		agents = append(agents, b.Ask(c))
		ids = append(ids, b.IDOf(c))
	}
	first := b.Start("approve", "--yes", ids[0])
	Until(t, "the first run starts", func() bool {
		for _, ev := range b.EventsOf(ids[0]) {
			if ev.Event == "started" {
				return true
			}
		}
		return false
	})
	others := []*Proc{b.Start("approve", "--yes", ids[1]), b.Start("approve", "--yes", ids[2])}
	for i, p := range append([]*Proc{first}, others...) {
		if code := p.Wait(t); code != 0 {
			t.Errorf("sluice approve %s: exit %d\n%s%s", ids[i], code, p.Stdout.String(), p.Stderr.String())
		}
	}
	waited := 0
	for _, p := range others {
		if strings.Contains(p.Stdout.String(), "sluice: waits for ") {
			waited++
		}
	}
	if waited == 0 {
		t.Errorf("neither later run said it waited for its turn:\n%s\n%s", others[0].Stdout.String(), others[1].Stdout.String())
	}
	for i, a := range agents {
		ans := a.Answer(b)
		got, overlapped := changed(t, ans)
		if ans.Code != 0 || !slices.Equal(got, []string{files[i]}) || len(overlapped) != 0 {
			t.Errorf("%q was told: exit %d, changed %q, overlapped %q; want exit 0 and only %s\n%s",
				cmds[i], ans.Code, got, overlapped, files[i], ans.Stderr)
		}
	}
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(b.Project, name))
		return err == nil
	}
	// Undo the middle one, then the first, then the last: each takes its
	// own file only.
	left := map[string]bool{files[0]: true, files[1]: true, files[2]: true}
	for _, i := range []int{1, 0, 2} {
		if code, out, errs := b.Sluice("undo", "--yes", ids[i]); code != 0 {
			t.Fatalf("sluice undo %s: exit %d\n%s%s", ids[i], code, out, errs)
		}
		delete(left, files[i])
		for _, f := range files {
			if exists(f) != left[f] {
				t.Errorf("after undoing %q: %s there %v, want %v", cmds[i], f, exists(f), left[f])
			}
		}
	}
	for _, id := range ids {
		n := 0
		for _, ev := range b.EventsOf(id) {
			if ev.Event == "started" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s started %d times", id, n)
		}
	}
	b.Verify()
}
