package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGlobBounded: a pattern that would walk more directory entries than
// the judge looks at is ask, with the reason, rather than holding the
// judge; within the bound, matches are judged as before.
func TestGlobBounded(t *testing.T) {
	dir := t.TempDir()
	for i := range 40 {
		sub := filepath.Join(dir, fmt.Sprintf("d%02d", i))
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		for j := range 10 {
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%d", j)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	old := globEntries
	globEntries = 100
	t.Cleanup(func() { globEntries = old })
	if m, complete := boundedGlob(filepath.Join(dir, "d0*", "f1")); !complete || len(m) != 10 {
		t.Fatalf("within the bound: %d matches, complete %v", len(m), complete)
	}
	if _, complete := boundedGlob(filepath.Join(dir, "*", "*")); complete {
		t.Fatal("440 entries against a bound of 100: complete")
	}
	p := Default()
	env := Env{Cwd: dir, Home: tableEnv.Home, Roots: []string{dir}}
	v := p.Check("ls "+filepath.Join(dir, "*", "*"), env)
	if v.Action != Ask || !strings.Contains(strings.Join(v.Reasons, "; "), "names more files than the judge looks at") {
		t.Fatalf("over the bound: %s %v", v.Action, v.Reasons)
	}
	if v := p.Check("ls "+filepath.Join(dir, "d01", "*"), env); v.Action != Allow {
		t.Fatalf("within the bound: %s %v", v.Action, v.Reasons)
	}
}

// TestPythonShadowing: python -m runs the project's own module of that
// name first (the working directory leads sys.path), so a known
// read-only module is no longer read-only where the project shadows it.
func TestPythonShadowing(t *testing.T) {
	t.Parallel()
	p := Default()
	plain, shadow := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(shadow, "json"), 0o755); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]Action{plain: Allow, shadow: Ask} {
		env := Env{Cwd: dir, Home: tableEnv.Home, Roots: []string{dir}}
		if v := p.Check("python3 -m json.tool data.json", env); v.Action != want {
			t.Errorf("in %s: %s %v, want %s", dir, v.Action, v.Reasons, want)
		}
	}
}
