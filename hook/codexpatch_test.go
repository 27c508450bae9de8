package hook

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

// TestCodexPatchRequest: an apply_patch becomes a patch request whose
// diff makes the change Codex makes, or says why there is no preview.
func TestCodexPatchRequest(t *testing.T) {
	t.Parallel()
	cwd := t.TempDir()
	if err := os.WriteFile(filepath.Join(cwd, "old.txt"), []byte("a\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	req := &queue.Request{}
	diff, err := codexPatchRequest(req, cwd, "*** Begin Patch\n*** Delete File: old.txt\n*** Add File: new.txt\n+hello\n*** End Patch")
	if err != nil {
		t.Fatal(err)
	}
	want := "diff --git a/old.txt b/old.txt\ndeleted file mode 100644\n--- a/old.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n" +
		"diff --git a/new.txt b/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hello\n"
	if req.Kind != queue.KindPatch || diff != want {
		t.Fatalf("kind %s diff\n%s\nwant\n%s", req.Kind, diff, want)
	}
	for _, tt := range []struct{ patch, err string }{
		{"*** Begin Patch\n*** Update File: old.txt\n*** Move to: moved.txt\n@@\n-a\n+c\n*** End Patch", "old.txt is moved to moved.txt"},
		{"*** Begin Patch\n*** Add File: ../escape.txt\n+x\n*** End Patch", "../escape.txt is outside"},
		{"*** Begin Patch\n*** Add File: old.txt\n+x\n*** End Patch", "old.txt exists already"},
		{"*** Begin Patch\n*** Delete File: gone.txt\n*** End Patch", "gone.txt does not exist"},
		{"*** Begin Patch\n*** Frobnicate File: x\n*** End Patch", "is not a file operation"},
		{"rm -rf /", "not a patch"},
	} {
		if _, err := codexPatchRequest(&queue.Request{}, cwd, tt.patch); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%q: got %v, want %q", tt.patch, err, tt.err)
		}
	}
}

// FuzzCodexPatch: hostile patch text never panics, and a preview that
// is made is a request the spool accepts.
func FuzzCodexPatch(f *testing.F) {
	f.Add("*** Begin Patch\n*** Update File: a.go\n@@ func x() {\n-\treturn 1\n+\treturn 2\n*** End of File\n*** End Patch")
	f.Add("*** Begin Patch\n*** Add File: b.txt\n+\x1b[2J\n*** Delete File: a.go\n*** End Patch")
	f.Add("*** Begin Patch\n*** Update File: a.go\n\n\n+x\n*** End Patch")
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte("package a\n\nfunc x() {\n\treturn 1\n}\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, patch string) {
		req := &queue.Request{Version: queue.Version, ID: queue.NewID(), Mode: queue.ModeDecide, Cwd: dir}
		if _, err := codexPatchRequest(req, dir, patch); err != nil {
			return
		}
		if err := req.Validate(); err != nil && !strings.Contains(err.Error(), "created_at") && !strings.Contains(err.Error(), "expires") {
			t.Fatalf("a previewed patch is not a valid request: %v\n%s", err, req.Diff)
		}
	})
}

// TestCodexShellPatch: the shell call Codex turns into apply_patch.
func TestCodexShellPatch(t *testing.T) {
	patch := "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch"
	for _, tt := range []struct {
		cmd  string
		want bool
	}{
		{"apply_patch <<'EOF'\n" + patch + "\nEOF\n", true},
		{"apply_patch <<\"EOF\"\n" + patch + "\nEOF", true},
		{"applypatch << PATCH\n" + patch + "\nPATCH\n", true},
		{"apply_patch <<'EOF'\n" + patch + "\nEOF\nrm -rf ~", false}, // more after the patch: a shell line
		{"apply_patch <<'EOF'\n" + patch, false},                     // never closed
		{"echo apply_patch <<'EOF'\n" + patch + "\nEOF", false},
		{"apply_patch <<'E;F'\n" + patch + "\nE;F", false},
	} {
		got, ok := codexShellPatch(tt.cmd)
		if ok != tt.want || (ok && got != patch) {
			t.Errorf("%q: got %q, %v; want %v", tt.cmd, got, ok, tt.want)
		}
	}
}
