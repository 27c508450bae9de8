package change

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/queue"
)

// TestPreview: the preview is the diff of the plan, computed against the
// roots it is given and writing nothing.
func TestPreview(t *testing.T) {
	dir, jail := project(t)
	put(t, filepath.Join(dir, "main.go"), mainGo, 0o644)
	req := editReq(dir, "main.go", `"hello"`, `"hi"`, false)
	d, err := Preview(req, jail)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Plan(req, jail)
	if err != nil {
		t.Fatal(err)
	}
	if d != c.Diff() || !strings.Contains(d, `+	fmt.Println("hi", args)`) {
		t.Fatalf("Preview:\n%s\nwant the plan's diff:\n%s", d, c.Diff())
	}
	if get(t, filepath.Join(dir, "main.go")) != mainGo {
		t.Fatal("Preview wrote the file")
	}

	outside := t.TempDir()
	if _, err := Preview(writeReq(dir, filepath.Join(outside, "x.go"), "package x\n"), jail); err == nil || !strings.Contains(err.Error(), "outside the jail") {
		t.Fatalf("Preview outside the roots: %v, want outside the jail", err)
	}
	if _, err := Preview(&queue.Request{Kind: queue.KindExec, Cwd: dir, Command: "true"}, jail); err == nil {
		t.Fatal("Preview of an exec request: no error")
	}
}
