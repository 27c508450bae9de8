package change

import (
	"bytes"
	"errors"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/queue"
)

// multiPatch is real `git diff` output: delete README.md, create
// docs/usage.md, two hunks in main.go.
const multiPatch = `diff --git a/README.md b/README.md
deleted file mode 100644
index 83e6601..0000000
--- a/README.md
+++ /dev/null
@@ -1,11 +0,0 @@
-# tool
-
-A small tool.
-
-## Install
-
-    go install example.com/tool@latest
-
-## Usage
-
-    tool [args]
diff --git a/docs/usage.md b/docs/usage.md
new file mode 100644
index 0000000..539b2c2
--- /dev/null
+++ b/docs/usage.md
@@ -0,0 +1,5 @@
+# Usage
+
+    tool [args]
+
+Prints a greeting.
diff --git a/main.go b/main.go
index 2ddfa1a..e3e6acd 100644
--- a/main.go
+++ b/main.go
@@ -3,6 +3,7 @@ package main
 import (
 	"fmt"
 	"os"
+	"strings"
 )
 
 func main() {
@@ -13,6 +14,6 @@ func main() {
 }
 
 func run(args []string) error {
-	fmt.Println("hello", args)
+	fmt.Println("hello,", strings.Join(args, " "))
 	return nil
 }
`

var mainGoAfter = strings.NewReplacer("\t\"os\"\n", "\t\"os\"\n\t\"strings\"\n",
	`fmt.Println("hello", args)`, `fmt.Println("hello,", strings.Join(args, " "))`).Replace(mainGo)

func patchReq(cwd, diff string) *queue.Request {
	return &queue.Request{Version: 1, ID: "p", Kind: queue.KindPatch, Cwd: cwd, Diff: diff}
}

func TestPatchMultiFile(t *testing.T) {
	t.Parallel()
	dir, jail := project(t)
	put(t, filepath.Join(dir, "main.go"), mainGo, 0o755)
	put(t, filepath.Join(dir, "README.md"), readme, 0o644)

	c := planApply(t, patchReq(dir, multiPatch), jail)
	if len(c.Files) != 3 {
		t.Fatalf("files = %d, want 3", len(c.Files))
	}
	if _, err := os.Lstat(filepath.Join(dir, "README.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("README.md not deleted: %v", err)
	}
	if got := get(t, filepath.Join(dir, "docs", "usage.md")); got != "# Usage\n\n    tool [args]\n\nPrints a greeting.\n" {
		t.Errorf("docs/usage.md = %q", got)
	}
	if got := get(t, filepath.Join(dir, "main.go")); got != mainGoAfter {
		t.Errorf("main.go = %q, want %q", got, mainGoAfter)
	}
	if m := modeOf(t, filepath.Join(dir, "main.go")); m != 0o755 {
		t.Errorf("main.go mode = %v, want 0755 kept", m)
	}
	if m := modeOf(t, filepath.Join(dir, "docs")); m != 0o755 {
		t.Errorf("docs mode = %v, want 0755", m)
	}
	noTemps(t, dir)
}

func TestPatchForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files map[string]string // before
		diff  string
		want  map[string]string // after; "" = absent
	}{
		{"diff -u with plain paths and timestamps",
			map[string]string{"README.md": readme},
			"--- README.md.orig\t2026-11-21 10:00:00.000000000 +0000\n+++ README.md\t2026-11-21 10:05:00.000000000 +0000\n@@ -1,3 +1,3 @@\n # tool\n \n-A small tool.\n+A small tool that greets.\n",
			map[string]string{"README.md": strings.Replace(readme, "A small tool.", "A small tool that greets.", 1)}},
		{"no newline at end, kept",
			map[string]string{"VERSION": "v1.2.3"},
			"--- a/VERSION\n+++ b/VERSION\n@@ -1 +1 @@\n-v1.2.3\n\\ No newline at end of file\n+v1.2.4\n\\ No newline at end of file\n",
			map[string]string{"VERSION": "v1.2.4"}},
		{"no newline at end, added",
			map[string]string{"go.sum.txt": "a\nb"},
			"--- a/go.sum.txt\n+++ b/go.sum.txt\n@@ -1,2 +1,3 @@\n a\n-b\n\\ No newline at end of file\n+b\n+c\n",
			map[string]string{"go.sum.txt": "a\nb\nc\n"}},
		{"no newline at end, removed from a new file",
			map[string]string{},
			"--- /dev/null\n+++ b/LICENSE\n@@ -0,0 +1,2 @@\n+MIT License\n+Copyright\n\\ No newline at end of file\n",
			map[string]string{"LICENSE": "MIT License\nCopyright"}},
		{"git --no-prefix",
			map[string]string{"main.go": mainGo},
			"diff --git main.go main.go\n--- main.go\n+++ main.go\n@@ -16 +16 @@ func run(args []string) error {\n-\tfmt.Println(\"hello\", args)\n+\tfmt.Println(\"hi\", args)\n",
			map[string]string{"main.go": strings.Replace(mainGo, `"hello"`, `"hi"`, 1)}},
		{"wrong line numbers, unique context: applied at the offset",
			map[string]string{"main.go": mainGo},
			"--- a/main.go\n+++ b/main.go\n@@ -40,3 +40,3 @@\n func run(args []string) error {\n-\tfmt.Println(\"hello\", args)\n+\tfmt.Println(\"hi\", args)\n \treturn nil\n",
			map[string]string{"main.go": strings.Replace(mainGo, `"hello"`, `"hi"`, 1)}},
		{"empty new file from git",
			map[string]string{},
			"diff --git a/pkg/.keep b/pkg/.keep\nnew file mode 100644\nindex 0000000..e69de29\n",
			map[string]string{"pkg/.keep": ""}},
		{"executable new file",
			map[string]string{},
			"diff --git a/run.sh b/run.sh\nnew file mode 100755\n--- /dev/null\n+++ b/run.sh\n@@ -0,0 +1 @@\n+#!/bin/sh\n",
			map[string]string{"run.sh": "#!/bin/sh\n"}},
		{"CRLF file",
			map[string]string{"win.txt": "one\r\ntwo\r\n"},
			"--- a/win.txt\n+++ b/win.txt\n@@ -1,2 +1,2 @@\n one\r\n-two\r\n+three\r\n",
			map[string]string{"win.txt": "one\r\nthree\r\n"}},
		{"format-patch with a signature",
			map[string]string{"VERSION": "1\n"},
			"From 1234 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] bump\n\n---\n VERSION | 2 +-\n\ndiff --git a/VERSION b/VERSION\n--- a/VERSION\n+++ b/VERSION\n@@ -1 +1 @@\n-1\n+2\n-- \n2.39.5\n",
			map[string]string{"VERSION": "2\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir, jail := project(t)
			for name, content := range tt.files {
				put(t, filepath.Join(dir, name), content, 0o644)
			}
			planApply(t, patchReq(dir, tt.diff), jail)
			for name, want := range tt.want {
				if got := get(t, filepath.Join(dir, name)); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
			if tt.name == "executable new file" {
				if m := modeOf(t, filepath.Join(dir, "run.sh")); m != 0o755 {
					t.Errorf("run.sh mode = %v, want 0755", m)
				}
			}
		})
	}
}

func TestPatchRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		diff string
		want string
	}{
		{"second file does not apply", `--- a/main.go
+++ b/main.go
@@ -16 +16 @@
-	fmt.Println("hello", args)
+	fmt.Println("hi", args)
--- a/README.md
+++ b/README.md
@@ -1,3 +1,3 @@
 # tool
 
-A big tool.
+A huge tool.
`, `exec: patch: README.md: hunk 1 (@@ -1,3 +1,3 @@) does not apply: line 3 is "A small tool.\n", the hunk expects "A big tool.\n"`},
		{"second hunk does not apply", strings.Replace(multiPatch, " \treturn nil\n }\n", " \treturn err\n }\n", 1),
			"exec: patch: main.go: hunk 2 (@@ -13,6 +14,6 @@) does not apply"},
		{"creates an existing file", "--- /dev/null\n+++ b/main.go\n@@ -0,0 +1 @@\n+package main\n", "main.go: the patch creates it but it already exists"},
		{"modifies a missing file", "--- a/lib.go\n+++ b/lib.go\n@@ -1 +1 @@\n-package lib\n+package lib2\n", "lib.go: the file does not exist"},
		{"deletes only part", "--- a/README.md\n+++ /dev/null\n@@ -1 +0,0 @@\n-# tool\n", "deletes the file but leaves"},
		{"ambiguous context", "--- a/main.go\n+++ b/main.go\n@@ -90 +90 @@\n-\n+// blank\n", "occur more than once elsewhere"},
		{"no newline where the file has one", "--- a/main.go\n+++ b/main.go\n@@ -18 +18 @@\n-}\n\\ No newline at end of file\n+} // end\n", "hunk 1 (@@ -18 +18 @@) does not apply"},
		{"short hunk", "--- a/main.go\n+++ b/main.go\n@@ -1,3 +1,3 @@\n package main\n-\n", "the patch ends inside the hunk"},
		{"long hunk", "--- a/main.go\n+++ b/main.go\n@@ -1 +1 @@\n-package main\n+package tool\n+// extra\n", "more lines than its header counts"},
		{"hunk without header", "@@ -1 +1 @@\n-a\n+b\n", "hunk without a ---/+++ file header"},
		{"not a diff", "please change main.go", "no file changes found"},
		{"rename", "diff --git a/main.go b/cmd/main.go\nsimilarity index 100%\nrename from main.go\nrename to cmd/main.go\n", "renames are not supported"},
		{"mode change", "diff --git a/main.go b/main.go\nold mode 100644\nnew mode 100755\n", "mode changes are not supported"},
		{"binary", "diff --git a/logo.png b/logo.png\nindex 1..2 100644\nBinary files a/logo.png and b/logo.png differ\n", "binary patches are not supported"},
		{"symlink", "diff --git a/link b/link\nnew file mode 120000\n--- /dev/null\n+++ b/link\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n", "link: new file mode 120000: only regular files can be created"},
		{"deleted symlink", "diff --git a/main.go b/main.go\ndeleted file mode 120000\n--- a/main.go\n+++ /dev/null\n@@ -1 +0,0 @@\n-package main\n", "main.go: deleted file mode 120000: only regular files can be deleted"},
		{"bad mode", "diff --git a/x b/x\nnew file mode 10o644\n", `bad "new file mode 10o644"`},
		{"same file twice", "--- a/main.go\n+++ b/main.go\n@@ -1 +1 @@\n-package main\n+package tool\n--- a/main.go\n+++ b/main.go\n@@ -1 +1 @@\n-package tool\n+package main\n", "changed twice"},
		{"bad header", "--- a/main.go\n+++ b/main.go\n@@ -x +1 @@\n", `bad hunk header "@@ -x +1 @@"`},
		{"bad hunk line", "--- a/main.go\n+++ b/main.go\n@@ -1 +1 @@\n*package main\n", `"*package main" where the header still expects`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir, jail := twoFiles(t)
			before := snapshot(t, dir)
			_, err := Plan(patchReq(dir, tt.diff), jail)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if after := snapshot(t, dir); after != before {
				t.Errorf("something was written:\n%s", after)
			}
		})
	}
}

// roundTrip parses d (a Diff of one file) and applies it to old.
func roundTrip(d string, old []byte) ([]byte, error) {
	fps, err := parsePatch(d)
	if err != nil {
		return nil, err
	}
	if len(fps) != 1 {
		return nil, errors.New("want one file in the diff")
	}
	return fps[0].apply(old)
}

var roundTripCases = []struct {
	name     string
	old, new string
}{
	{"edit Go source", mainGo, mainGoAfter},
	{"README rewrite", readme, "# tool\n\nA tool.\n\n## Usage\n\n    tool [args]\n    tool -h\n"},
	{"add trailing newline", "a\nb", "a\nb\n"},
	{"drop trailing newline", "a\nb\n", "a\nb"},
	{"no newline either side", "x\ny", "x\nz"},
	{"empty to content", "", "one\n"},
	{"content to empty", "one\ntwo\n", ""},
	{"lines that look like headers", "--- a\n+++ b\n@@ -1 +1 @@\n", "--- a\n+++ c\n@@ -1 +1 @@\n\\ x\n"},
	{"far apart hunks", strings.Repeat("line\n", 40) + "end\n", "start\n" + strings.Repeat("line\n", 40) + "END\n"},
}

func TestDiffRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tt := range roundTripCases {
		c := &Change{Files: []FileChange{{Path: "/p/f.txt", Old: []byte(tt.old), New: []byte(tt.new), Exists: true, Mode: 0o644}}}
		d := c.Diff()
		got, err := roundTrip(d, []byte(tt.old))
		if err != nil || string(got) != tt.new {
			t.Errorf("%s: round trip = %q, %v; want %q\ndiff:\n%s", tt.name, got, err, tt.new, d)
		}
	}
}

// TestDiffGitApply checks Diff against git itself: git apply must accept
// it and produce New.
func TestDiffGitApply(t *testing.T) {
	t.Parallel()
	if _, err := osexec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir, _, c := multiPlanned(t)
	d := c.Diff()
	for _, h := range []string{"diff --git a/README.md b/README.md\ndeleted file mode 100644\n--- a/README.md\n+++ /dev/null\n",
		"diff --git a/docs/usage.md b/docs/usage.md\nnew file mode 100644\n--- /dev/null\n+++ b/docs/usage.md\n",
		"diff --git a/main.go b/main.go\n--- a/main.go\n+++ b/main.go\n"} {
		if !strings.Contains(d, h) {
			t.Errorf("diff lacks %q", h)
		}
	}
	cmd := osexec.Command("git", "apply", "-v", "-")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(d)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s\ndiff:\n%s", err, out, d)
	}
	for _, f := range c.Files {
		got, err := os.ReadFile(f.Path)
		if f.Delete {
			if !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s not deleted by git apply", f.Path)
			}
			continue
		}
		if !bytes.Equal(got, f.New) {
			t.Errorf("git apply made %s = %q, want %q", f.Path, got, f.New)
		}
	}
}

func TestDiffLabels(t *testing.T) {
	t.Parallel()
	c := &Change{cwd: "/home/me/proj", Files: []FileChange{
		{Path: "/home/me/proj/a b/x.go", New: []byte("x\n"), Mode: 0o644},
		{Path: "/etc/hosts", Old: []byte("a\n"), New: []byte("b\n"), Exists: true, Mode: 0o644},
		{Path: "/home/me/proj/same.txt", Old: []byte("s\n"), New: []byte("s\n"), Exists: true, Mode: 0o644},
		{Path: "/home/me/proj/tab\tname", New: []byte("t\n"), Mode: 0o600},
	}}
	d := c.Diff()
	for _, s := range []string{"+++ b/a b/x.go\n", "--- a/etc/hosts\n", `+++ "b/tab\tname"` + "\n", "new file mode 100600\n"} {
		if !strings.Contains(d, s) {
			t.Errorf("diff lacks %q:\n%s", s, d)
		}
	}
	if strings.Contains(d, "same.txt") {
		t.Errorf("unchanged file in the diff:\n%s", d)
	}
	fps, err := parsePatch(d)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, fp := range fps {
		names = append(names, fp.name())
	}
	if got := strings.Join(names, "|"); got != "a b/x.go|etc/hosts|tab\tname" {
		t.Errorf("names parsed back = %q", got)
	}
}

func FuzzParsePatch(f *testing.F) {
	f.Add(multiPatch, []byte(mainGo))
	f.Add("--- a/VERSION\n+++ b/VERSION\n@@ -1 +1 @@\n-v1\n\\ No newline at end of file\n+v2\n", []byte("v1"))
	f.Add("--- /dev/null\n+++ b/x\n@@ -0,0 +1,2 @@\n+a\n+b\n", []byte(nil))
	f.Add("diff --git \"a/x y\" \"b/x y\"\nnew file mode 100755\n", []byte(nil))
	f.Fuzz(func(t *testing.T, diff string, old []byte) {
		fps, err := parsePatch(diff)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "exec: patch") {
				t.Fatalf("error without prefix: %v", err)
			}
			return
		}
		for _, fp := range fps {
			if fp.name() == "" {
				t.Fatal("file patch without a name")
			}
			for _, h := range fp.hunks {
				if len(h.side('+')) != h.oldCount || len(h.side('-')) != h.newCount {
					t.Fatalf("hunk %s has %d/%d lines", h.header, len(h.side('+')), len(h.side('-')))
				}
			}
			nw, err := fp.apply(old)
			if err != nil {
				continue
			}
			// What applied must re-diff and apply back to the same result.
			c := &Change{Files: []FileChange{{Path: "/p/f", Old: old, New: nw, Exists: true, Mode: 0o644}}}
			if got, err := roundTrip(c.Diff(), old); c.Diff() != "" && (err != nil || !bytes.Equal(got, nw)) {
				t.Fatalf("re-diff round trip = %q, %v; want %q", got, err, nw)
			}
		}
	})
}

func FuzzDiffRoundTrip(f *testing.F) {
	for _, tt := range roundTripCases {
		f.Add([]byte(tt.old), []byte(tt.new), true, false)
	}
	f.Add([]byte(nil), []byte("package main\n"), false, false)
	f.Add([]byte(readme), []byte(nil), true, true)
	f.Fuzz(func(t *testing.T, old, nw []byte, exists, del bool) {
		if !exists {
			old, del = nil, false
		}
		if del {
			nw = nil
		}
		c := &Change{cwd: "/p", Files: []FileChange{{Path: "/p/dir/f.go", Old: old, New: nw, Exists: exists, Mode: 0o644, Delete: del}}}
		d := c.Diff()
		if d == "" {
			if exists && !del && bytes.Equal(old, nw) {
				return
			}
			t.Fatal("empty diff for a change")
		}
		fps, err := parsePatch(d)
		if err != nil {
			t.Fatalf("parse own diff: %v\n%s", err, d)
		}
		if len(fps) != 1 || fps[0].name() != "dir/f.go" || (fps[0].oldName == "") != !exists || (fps[0].newName == "") != del {
			t.Fatalf("parsed %+v from\n%s", fps[0], d)
		}
		got, err := fps[0].apply(old)
		if err != nil || !bytes.Equal(got, nw) && !(del && len(got) == 0) {
			t.Fatalf("apply own diff = %q, %v; want %q\n%s", got, err, nw, d)
		}
	})
}
