package change

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/queue"
)

// TestApplyCodexChunks: what Codex's apply_patch makes of a file, which
// is what the diff preview shows.
func TestApplyCodexChunks(t *testing.T) {
	t.Parallel()
	file := "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"one\")\n}\n\nfunc helper() {\n\tfmt.Println(\"one\")\n}\n"
	tests := []struct {
		name, patch, want, err string
	}{
		{"the @@ line picks the second of two equal lines",
			"@@ func helper() {\n-\tfmt.Println(\"one\")\n+\tfmt.Println(\"two\")\n",
			strings.Replace(file, "helper() {\n\tfmt.Println(\"one\")", "helper() {\n\tfmt.Println(\"two\")", 1), ""},
		{"no @@ line: the first match",
			"@@\n-\tfmt.Println(\"one\")\n+\tfmt.Println(\"two\")\n",
			strings.Replace(file, "\tfmt.Println(\"one\")", "\tfmt.Println(\"two\")", 1), ""},
		{"trailing white space in the patch matches; its lines are written as they are",
			"@@\n import \"fmt\"   \n-\n+// x\n",
			strings.Replace(file, "import \"fmt\"\n\n", "import \"fmt\"   \n// x\n", 1), ""},
		{"added lines alone go at the end",
			"@@\n+// end\n", file + "// end\n", ""},
		{"lines that are not there",
			"@@\n-\tfmt.Println(\"three\")\n+\tfmt.Println(\"four\")\n", "", "the lines to change are not in the file"},
		{"a @@ line that is not there",
			"@@ func nowhere() {\n-x\n+y\n", "", "the context line \"func nowhere() {\" is not in the file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks, _, err := parseCodexChunks(strings.Split(strings.TrimSuffix(tt.patch, "\n"), "\n"), 0)
			if err != nil {
				t.Fatal(err)
			}
			got, err := applyCodexChunks(file, chunks)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %q, %v; want error %q", got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %v\n%s\nwant\n%s", err, got, tt.want)
			}
		})
	}
}

// TestPreviewCodexPatch: an apply_patch's preview is the diff of the
// change Codex makes, or says why there is none.
func TestPreviewCodexPatch(t *testing.T) {
	t.Parallel()
	cwd := t.TempDir()
	if err := os.WriteFile(filepath.Join(cwd, "old.txt"), []byte("a\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	diff, err := PreviewCodexPatch(cwd, "*** Begin Patch\n*** Delete File: old.txt\n*** Add File: new.txt\n+hello\n*** End Patch")
	if err != nil {
		t.Fatal(err)
	}
	want := "diff --git a/old.txt b/old.txt\ndeleted file mode 100644\n--- a/old.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n" +
		"diff --git a/new.txt b/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hello\n"
	if diff != want {
		t.Fatalf("diff\n%s\nwant\n%s", diff, want)
	}
	for _, tt := range []struct{ patch, err string }{
		{"*** Begin Patch\n*** Update File: old.txt\n*** Move to: moved.txt\n@@\n-a\n+c\n*** End Patch", "old.txt is moved to moved.txt"},
		{"*** Begin Patch\n*** Add File: ../escape.txt\n+x\n*** End Patch", "../escape.txt is outside"},
		{"*** Begin Patch\n*** Add File: old.txt\n+x\n*** End Patch", "old.txt exists already"},
		{"*** Begin Patch\n*** Delete File: gone.txt\n*** End Patch", "gone.txt does not exist"},
		{"*** Begin Patch\n*** Frobnicate File: x\n*** End Patch", "is not a file operation"},
		{"rm -rf /", "not a patch"},
	} {
		if _, err := PreviewCodexPatch(cwd, tt.patch); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%q: got %v, want %q", tt.patch, err, tt.err)
		}
	}
}

// FuzzPreviewCodexPatch: hostile patch text never panics, and a preview
// that is made is a patch request the spool accepts.
func FuzzPreviewCodexPatch(f *testing.F) {
	f.Add("*** Begin Patch\n*** Update File: a.go\n@@ func x() {\n-\treturn 1\n+\treturn 2\n*** End of File\n*** End Patch")
	f.Add("*** Begin Patch\n*** Add File: b.txt\n+\x1b[2J\n*** Delete File: a.go\n*** End Patch")
	f.Add("*** Begin Patch\n*** Update File: a.go\n\n\n+x\n*** End Patch")
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte("package a\n\nfunc x() {\n\treturn 1\n}\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, patch string) {
		diff, err := PreviewCodexPatch(dir, patch)
		if err != nil {
			return
		}
		req := &queue.Request{Version: queue.Version, ID: queue.NewID(), Mode: queue.ModeDecide, Cwd: dir, Kind: queue.KindPatch, Diff: diff}
		if err := req.Validate(); err != nil && !strings.Contains(err.Error(), "created_at") && !strings.Contains(err.Error(), "expires") {
			t.Fatalf("a previewed patch is not a valid request: %v\n%s", err, req.Diff)
		}
	})
}
