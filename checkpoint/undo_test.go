package checkpoint

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestPlanAndApplyUndo: a run's files come back as they were before it;
// a file changed again since is a conflict; a file a run beside it
// changed too is shared, and Without leaves it; a file that changed
// after the plan was shown refuses the whole undo.
func TestPlanAndApplyUndo(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	ctx := context.Background()
	root := t.TempDir()
	st := &Store{Dir: filepath.Join(t.TempDir(), "store")}
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			return "<absent>"
		}
		return string(b)
	}
	take := func(ref string) {
		t.Helper()
		if _, err := st.Take(ctx, root, ref); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt", "before\n")
	// Run A changes a.txt and creates shared.txt; run B, beside it,
	// creates shared.txt too (the same file, in both windows).
	take("RUNA/pre")
	write("a.txt", "after\n")
	take("RUNB/pre")
	write("shared.txt", "both\n")
	take("RUNB/post")
	take("RUNA/post")

	find := func(id string) (*Run, error) { return &Run{ID: id, Roots: []string{root}}, nil }
	p, err := st.PlanUndo(ctx, Run{ID: "RUNA", Roots: []string{root}, Overlapped: []string{"RUNB"}}, "UNDO1", find)
	if err != nil {
		t.Fatal(err)
	}
	a, shared := filepath.Join(root, "a.txt"), filepath.Join(root, "shared.txt")
	if !slices.Equal(p.Paths, []string{a, shared}) || !slices.Equal(p.Shared, []string{shared}) || !slices.Equal(p.With, []string{"RUNB"}) {
		t.Fatalf("plan: paths %q shared %q with %q", p.Paths, p.Shared, p.With)
	}
	if _, _, err := st.ApplyUndo(ctx, p.Without()); err != nil {
		t.Fatal(err)
	}
	if read("a.txt") != "before\n" || read("shared.txt") != "both\n" {
		t.Errorf("after undoing A's own: a.txt %q, shared.txt %q", read("a.txt"), read("shared.txt"))
	}

	// A conflict, then a change after the plan was shown.
	take("RUNC/pre")
	write("a.txt", "by C\n")
	take("RUNC/post")
	write("a.txt", "changed since\n")
	p, err = st.PlanUndo(ctx, Run{ID: "RUNC", Roots: []string{root}}, "UNDO2", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Conflicts, []string{a}) || p.Since == "" {
		t.Fatalf("conflicts %q, since %q", p.Conflicts, p.Since)
	}
	write("a.txt", "and again\n")
	if _, _, err := st.ApplyUndo(ctx, p); err == nil || read("a.txt") != "and again\n" {
		t.Errorf("a file changed after the plan: err %v, a.txt %q", err, read("a.txt"))
	}
	if _, err := st.PlanUndo(ctx, Run{ID: "../x", Roots: []string{root}}, "UNDO3", nil); err == nil {
		t.Error("a run id that is a path was taken")
	}
}
