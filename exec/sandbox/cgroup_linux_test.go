package sandbox

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"testing"
)

// TestCgroupReuse: a cgroup that held a run and was left empty takes the
// next run, whose process must live to its own exit; a cgroup whose
// leftovers were killed is not reused (this kernel kills what
// CLONE_INTO_CGROUP puts into a cgroup after a cgroup.kill).
func TestCgroupReuse(t *testing.T) {
	var p Cgroups
	defer p.Close()
	first, err := p.Get()
	if err != nil {
		t.Skipf("no cgroups here: %v", err)
	}
	run := func(g *Cgroup, script string) error {
		t.Helper()
		cmd := osexec.Command("/bin/sh", "-c", script)
		if err := Start(cmd, nil, g); err != nil {
			t.Fatal(err)
		}
		return cmd.Wait()
	}
	if err := run(first, "exit 3"); err == nil || err.Error() != "exit status 3" {
		t.Fatalf("first run: %v, want exit status 3", err)
	}
	p.Put(first)
	second, _ := p.Get()
	if second != first {
		t.Errorf("the empty cgroup was not reused")
	}
	marker := filepath.Join(t.TempDir(), "done")
	if err := run(second, "sleep 0.05; touch "+marker+"; exit 4"); err == nil || err.Error() != "exit status 4" {
		t.Fatalf("run in a reused cgroup: %v, want exit status 4", err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the run in a reused cgroup did not finish: %v", err)
	}

	// Leave a process behind, so that Put must kill it.
	if err := run(second, "sleep 1000 & exit 0"); err != nil {
		t.Fatal(err)
	}
	p.Put(second)
	third, _ := p.Get()
	if third == second {
		t.Fatal("a cgroup killed through cgroup.kill was handed out again")
	}
	if err := run(third, "exit 5"); err == nil || err.Error() != "exit status 5" {
		t.Fatalf("run after a kill: %v, want exit status 5", err)
	}
	p.Put(third)
}
