package change

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sluice-dev/sluice/queue"
)

const mainGo = `package main

import (
	"fmt"
	"os"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "tool:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fmt.Println("hello", args)
	return nil
}
`

const readme = `# tool

A small tool.

## Install

    go install example.com/tool@latest

## Usage

    tool [args]
`

// project returns a fresh project directory, symlinks resolved, and the
// jail that holds exactly it.
func project(t *testing.T) (string, []string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir, []string{dir}
}

// twoFiles is a project holding main.go and README.md, the two files
// multiPatch starts from.
func twoFiles(t *testing.T) (string, []string) {
	t.Helper()
	dir, jail := project(t)
	put(t, filepath.Join(dir, "main.go"), mainGo, 0o644)
	put(t, filepath.Join(dir, "README.md"), readme, 0o644)
	return dir, jail
}

// multiPlanned is twoFiles with multiPatch planned over it.
func multiPlanned(t *testing.T) (string, []string, *Change) {
	t.Helper()
	dir, jail := twoFiles(t)
	c, err := Plan(patchReq(dir, multiPatch), jail)
	if err != nil {
		t.Fatal(err)
	}
	return dir, jail, c
}

func put(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func modeOf(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func writeReq(cwd, path, content string) *queue.Request {
	return &queue.Request{Version: 1, ID: "w", Kind: queue.KindWrite, Cwd: cwd, Path: path, Content: content}
}

func editReq(cwd, path, old, new string, all bool) *queue.Request {
	return &queue.Request{Version: 1, ID: "e", Kind: queue.KindEdit, Cwd: cwd, Path: path, OldString: old, NewString: new, ReplaceAll: all}
}

// planApply plans and applies req, failing the test on any error.
func planApply(t *testing.T, req *queue.Request, jail []string) *Change {
	t.Helper()
	c, err := Plan(req, jail)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	if err := c.Apply(jail); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return c
}

// noTemps fails if a sluice temp file is left anywhere under dir.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".sluice-") {
			t.Errorf("temp file left behind: %s", p)
		}
		return nil
	})
}

func TestWriteNewFile(t *testing.T) {
	t.Parallel()
	dir, jail := project(t)
	c := planApply(t, writeReq(dir, "cmd/tool/main.go", mainGo), jail)

	f := c.Files[0]
	want := filepath.Join(dir, "cmd/tool/main.go")
	if f.Path != want || f.Exists || f.Old != nil || f.Mode != 0o644 {
		t.Errorf("plan = %+v, want new file %s mode 0644", f, want)
	}
	if got := get(t, want); got != mainGo {
		t.Errorf("content = %q", got)
	}
	if m := modeOf(t, want); m != 0o644 {
		t.Errorf("mode = %v, want 0644", m)
	}
	d := c.Diff()
	for _, s := range []string{"diff --git a/cmd/tool/main.go b/cmd/tool/main.go\n", "new file mode 100644\n", "--- /dev/null\n", "+++ b/cmd/tool/main.go\n", "+package main\n"} {
		if !strings.Contains(d, s) {
			t.Errorf("diff lacks %q:\n%s", s, d)
		}
	}
	noTemps(t, dir)
}

func TestWriteOverwriteKeepsMode(t *testing.T) {
	t.Parallel()
	dir, jail := project(t)
	script := filepath.Join(dir, "scripts", "build.sh")
	put(t, script, "#!/bin/sh\ngo build ./...\n", 0o750)

	c := planApply(t, writeReq(dir, "scripts/build.sh", "#!/bin/sh\nset -eu\ngo build ./...\n"), jail)
	if f := c.Files[0]; !f.Exists || string(f.Old) != "#!/bin/sh\ngo build ./...\n" || f.Mode != 0o750 {
		t.Errorf("plan = %+v", f)
	}
	if got := get(t, script); got != "#!/bin/sh\nset -eu\ngo build ./...\n" {
		t.Errorf("content = %q", got)
	}
	if m := modeOf(t, script); m != 0o750 {
		t.Errorf("mode = %v, want 0750", m)
	}
	if d := c.Diff(); !strings.Contains(d, "@@ -1,2 +1,3 @@\n #!/bin/sh\n+set -eu\n go build ./...\n") {
		t.Errorf("diff:\n%s", d)
	}
}

func TestEdit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		old, new string
		all      bool
		want     string
	}{
		{"unique", `fmt.Println("hello", args)`, `fmt.Println("hello,", strings.Join(args, " "))`, false,
			strings.Replace(mainGo, `fmt.Println("hello", args)`, `fmt.Println("hello,", strings.Join(args, " "))`, 1)},
		{"replace all", "fmt.", "log.", true, strings.ReplaceAll(mainGo, "fmt.", "log.")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir, jail := project(t)
			put(t, filepath.Join(dir, "main.go"), mainGo, 0o644)
			c := planApply(t, editReq(dir, "main.go", tt.old, tt.new, tt.all), jail)
			if got := get(t, filepath.Join(dir, "main.go")); got != tt.want {
				t.Errorf("content = %q, want %q", got, tt.want)
			}
			if string(c.Files[0].New) != tt.want {
				t.Errorf("planned New differs from the written file")
			}
		})
	}
}

func TestEditRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, old, new string
		want                 string
	}{
		{"non-unique", "main.go", "os.", "xos.", "exec: edit main.go: old_string occurs 3 times; set replace_all or give more context"},
		{"missing", "main.go", "func helper()", "func help()", "exec: edit main.go: old_string not found in the file"},
		{"same", "main.go", "func run", "func run", "old_string and new_string are the same"},
		{"no file", "lib.go", "package", "package", "exec: edit lib.go: the file does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir, jail := project(t)
			put(t, filepath.Join(dir, "main.go"), mainGo, 0o644)
			_, err := Plan(editReq(dir, tt.path, tt.old, tt.new, false), jail)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if get(t, filepath.Join(dir, "main.go")) != mainGo {
				t.Error("file changed")
			}
		})
	}
}

func TestSymlinkEscapeRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(t *testing.T, dir, outside string)
		req   func(dir string) *queue.Request
	}{
		{"write through a link to a file outside", func(t *testing.T, dir, outside string) {
			symlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(dir, "notes.txt"))
		}, func(dir string) *queue.Request { return writeReq(dir, "notes.txt", "pwned\n") }},
		{"edit through a link to a file outside", func(t *testing.T, dir, outside string) {
			symlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(dir, "notes.txt"))
		}, func(dir string) *queue.Request { return editReq(dir, "notes.txt", "token", "pwned", false) }},
		{"write under a symlinked parent directory", func(t *testing.T, dir, outside string) {
			symlink(t, outside, filepath.Join(dir, "vendor"))
		}, func(dir string) *queue.Request { return writeReq(dir, "vendor/secret.txt", "pwned\n") }},
		{"new file under a symlinked parent directory", func(t *testing.T, dir, outside string) {
			symlink(t, outside, filepath.Join(dir, "vendor"))
		}, func(dir string) *queue.Request { return writeReq(dir, "vendor/new/evil.sh", "pwned\n") }},
		{"dangling link to a new file outside", func(t *testing.T, dir, outside string) {
			symlink(t, filepath.Join(outside, "created.txt"), filepath.Join(dir, "out.txt"))
		}, func(dir string) *queue.Request { return writeReq(dir, "out.txt", "pwned\n") }},
		{"relative link climbing out", func(t *testing.T, dir, outside string) {
			symlink(t, "../../"+filepath.Base(filepath.Dir(outside))+"/"+filepath.Base(outside)+"/secret.txt", filepath.Join(dir, "sub", "x"))
		}, func(dir string) *queue.Request { return writeReq(dir, "sub/x", "pwned\n") }},
		{"dot-dot in the path", func(t *testing.T, dir, outside string) {},
			func(dir string) *queue.Request { return writeReq(dir, "../outside/secret.txt", "pwned\n") }},
		{"patch through a link to a file outside", func(t *testing.T, dir, outside string) {
			symlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(dir, "notes.txt"))
		}, func(dir string) *queue.Request {
			return patchReq(dir, "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-token=abc\n+pwned\n")
		}},
		{"patch under a symlinked parent directory", func(t *testing.T, dir, outside string) {
			symlink(t, outside, filepath.Join(dir, "vendor"))
		}, func(dir string) *queue.Request {
			return patchReq(dir, "--- a/vendor/secret.txt\n+++ b/vendor/secret.txt\n@@ -1 +1 @@\n-token=abc\n+pwned\n")
		}},
		{"patch with a path climbing out", func(t *testing.T, dir, outside string) {},
			func(dir string) *queue.Request {
				return patchReq(dir, "--- a/../outside/secret.txt\n+++ b/../outside/secret.txt\n@@ -1 +1 @@\n-token=abc\n+pwned\n")
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			base, _ := project(t)
			dir, outside := filepath.Join(base, "project"), filepath.Join(base, "outside")
			put(t, filepath.Join(dir, "main.go"), mainGo, 0o644)
			put(t, filepath.Join(outside, "secret.txt"), "token=abc\n", 0o600)
			os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
			tt.setup(t, dir, outside)
			_, err := Plan(tt.req(dir), []string{dir})
			if err == nil || !strings.Contains(err.Error(), "outside the jail") {
				t.Fatalf("err = %v, want a refusal naming the jail", err)
			}
			if get(t, filepath.Join(outside, "secret.txt")) != "token=abc\n" {
				t.Error("the file outside changed")
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 1 {
				t.Errorf("outside holds %d entries, want 1", len(ents))
			}
		})
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(link), 0o755)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestSymlinkInsideJailWritesTarget(t *testing.T) {
	t.Parallel()
	dir, jail := project(t)
	put(t, filepath.Join(dir, "docs", "README.md"), readme, 0o644)
	symlink(t, "docs/README.md", filepath.Join(dir, "README.md"))

	c := planApply(t, editReq(dir, "README.md", "A small tool.", "A small tool that greets.", false), jail)
	if c.Files[0].Path != filepath.Join(dir, "docs", "README.md") {
		t.Errorf("Path = %s, want the link's target", c.Files[0].Path)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "README.md")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", fi, err)
	}
	if !strings.Contains(get(t, filepath.Join(dir, "docs", "README.md")), "greets") {
		t.Error("target not edited")
	}
}

func TestApplyRechecksSymlinks(t *testing.T) {
	t.Parallel()
	base, _ := project(t)
	dir, outside := filepath.Join(base, "project"), filepath.Join(base, "outside")
	put(t, filepath.Join(dir, "pkg", "lib.go"), "package pkg\n", 0o644)
	put(t, filepath.Join(outside, "lib.go"), "package pkg\n", 0o644)

	c, err := Plan(writeReq(dir, "pkg/lib.go", "package pkg // pwned\n"), []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	// Between preview and apply, pkg becomes a link out of the jail.
	if err := os.RemoveAll(filepath.Join(dir, "pkg")); err != nil {
		t.Fatal(err)
	}
	symlink(t, outside, filepath.Join(dir, "pkg"))
	err = c.Apply([]string{dir})
	if err == nil || !strings.Contains(err.Error(), "outside the jail") {
		t.Fatalf("Apply err = %v, want refusal", err)
	}
	if get(t, filepath.Join(outside, "lib.go")) != "package pkg\n" {
		t.Error("the file outside changed")
	}
}

func TestNonRegularRefused(t *testing.T) {
	t.Parallel()
	dir, jail := project(t)
	os.Mkdir(filepath.Join(dir, "build"), 0o755)
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		req  *queue.Request
		jail []string
		want string
	}{
		{writeReq(dir, "build", "x"), jail, "is a directory"},
		{writeReq(dir, "fifo", "x"), jail, "is a named pipe"},
		{editReq(dir, "fifo", "a", "b", false), jail, "is a named pipe"},
		{writeReq(dir, "/dev/null", "x"), nil, "is a device"},
		{writeReq(dir, "/etc/passwd", "x"), jail, "outside the jail"},
		{writeReq("", "main.go", "x"), jail, "needs an absolute cwd"},
		{&queue.Request{Kind: queue.KindExec, Command: "ls"}, jail, "not a file change"},
	}
	for _, tt := range tests {
		_, err := Plan(tt.req, tt.jail)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "exec: ") {
			t.Errorf("Plan(%s %s) err = %v, want %q", tt.req.Kind, tt.req.Path, err, tt.want)
		}
	}
}

func TestChangedBetweenPlanAndApply(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		meddle func(t *testing.T, dir string)
	}{
		{"first file edited", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "main.go"), []byte(mainGo+"// more\n"), 0o644)
		}},
		{"second file edited", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "README.md"), []byte("# tool\n"), 0o644)
		}},
		{"second file deleted", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "README.md")) }},
		{"new file appeared", func(t *testing.T, dir string) { put(t, filepath.Join(dir, "docs", "usage.md"), "# Usage\n", 0o644) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir, jail, c := multiPlanned(t)
			tt.meddle(t, dir)
			before := snapshot(t, dir)
			if err := c.Apply(jail); !errors.Is(err, ErrChanged) {
				t.Fatalf("Apply err = %v, want ErrChanged", err)
			}
			if after := snapshot(t, dir); after != before {
				t.Errorf("Apply wrote something:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// snapshot describes every file under dir, content included.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := d.Info()
		b.WriteString(p + " " + fi.Mode().String())
		if d.Type().IsRegular() {
			b.WriteString(" " + get(t, p))
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}

func TestApplyTempFileInSameDir(t *testing.T) {
	t.Parallel()
	dir, jail, c := multiPlanned(t)
	var temps []string
	c.hooks = &applyHooks{afterTemp: func(tmp string) {
		if _, err := os.Stat(tmp); err != nil {
			t.Errorf("temp file %s missing while applying: %v", tmp, err)
		}
		temps = append(temps, tmp)
	}}
	if err := c.Apply(jail); err != nil {
		t.Fatal(err)
	}
	var targets []string // docs/usage.md, main.go; README.md is deleted
	for _, f := range c.Files {
		if !f.Delete {
			targets = append(targets, f.Path)
		}
	}
	if len(temps) != len(targets) {
		t.Fatalf("temp files = %v, want one for each of %v", temps, targets)
	}
	for i, tmp := range temps {
		target := targets[i]
		if filepath.Dir(tmp) != filepath.Dir(target) {
			t.Errorf("temp %s is not in the directory of %s", tmp, target)
		}
		if _, err := os.Lstat(tmp); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("temp %s left behind", tmp)
		}
	}
	noTemps(t, dir)
}

func TestApplyRollsBack(t *testing.T) {
	t.Parallel()
	dir, jail := twoFiles(t)
	before := snapshot(t, dir)
	c, err := Plan(patchReq(dir, multiPatch), jail)
	if err != nil {
		t.Fatal(err)
	}
	// Fail after README.md is deleted and docs/usage.md created, before
	// main.go is renamed into place.
	boom := errors.New("disk full")
	c.hooks = &applyHooks{beforeCommit: func(i int) error {
		if i == 2 {
			return boom
		}
		return nil
	}}
	if err := c.Apply(jail); !errors.Is(err, boom) {
		t.Fatalf("Apply err = %v, want %v", err, boom)
	}
	if after := snapshot(t, dir); after != before {
		t.Errorf("not rolled back:\nbefore %s\nafter  %s", before, after)
	}
}
