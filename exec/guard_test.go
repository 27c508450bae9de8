package exec

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeFiles writes files (a path below root → its content) with mode,
// making the directories between.
func writeFiles(t *testing.T, root string, mode os.FileMode, files map[string]string) {
	t.Helper()
	for rel, data := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGuard: what a run changed of what later runs with the person's
// rights is put back, and named: a new hook, a changed config, a new file
// in the directory core.hooksPath names, a changed include.path file, a
// new .vscode/tasks.json, a removed .envrc; a changed hook sample (never
// run) is removed rather than kept; the project's other files are left
// as the run made them.
func TestGuard(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		".git/config":                  "[core]\n\thooksPath = .githooks\n[include]\n\tpath = ../extra.cfg\n",
		".git/hooks/pre-commit.sample": "#!/bin/sh\n",
		".githooks/pre-push":           "#!/bin/sh\necho push\n",
		"extra.cfg":                    "[user]\n\tname = a\n",
		".envrc":                       "export A=1\n",
		"main.go":                      "package main\n",
		".git/modules/sub/config":      "[core]\n",
		".git/modules/sub/hooks/.keep": "",
	}
	writeFiles(t, root, 0o644, files)
	g := TakeGuard([]string{root})
	for _, want := range []string{".git/config", ".git/hooks", ".githooks", "extra.cfg", ".envrc", ".git/modules/sub/hooks", ".git/modules/sub/config"} {
		if !slices.Contains(g.Existing(), filepath.Join(root, want)) {
			t.Errorf("Existing() lacks %s: %q", want, g.Existing())
		}
	}
	// The run.
	writeFiles(t, root, 0o755, map[string]string{
		".git/hooks/pre-commit":             "#!/bin/sh\ntouch /tmp/pwned\n",
		".git/config":                       "[core]\n\tfsmonitor = touch /tmp/pwned\n",
		".githooks/post-checkout":           "#!/bin/sh\n",
		"extra.cfg":                         "[core]\n\tpager = touch /tmp/pwned\n",
		".vscode/tasks.json":                "{}\n",
		".git/hooks/pre-commit.sample":      "#!/bin/sh\nchanged\n",
		".git/modules/sub/hooks/post-merge": "#!/bin/sh\n",
		"main.go":                           "package main // changed\n",
	})
	if err := os.Remove(filepath.Join(root, ".envrc")); err != nil {
		t.Fatal(err)
	}

	changed := g.Restore()
	for _, rel := range []string{".git/hooks/pre-commit", ".git/config", ".githooks/post-checkout", "extra.cfg",
		".vscode/tasks.json", ".envrc", ".git/hooks/pre-commit.sample", ".git/modules/sub/hooks/post-merge"} {
		if !slices.Contains(changed, filepath.Join(root, rel)) {
			t.Errorf("Restore did not name %s: %q", rel, changed)
		}
	}
	for rel, data := range files {
		if rel == ".git/hooks/pre-commit.sample" {
			continue
		}
		if rel == "main.go" {
			data = "package main // changed\n"
		}
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil || string(b) != data {
			t.Errorf("%s after Restore: %q (%v), want %q", rel, b, err, data)
		}
	}
	for _, rel := range []string{".git/hooks/pre-commit", ".githooks/post-checkout", ".vscode/tasks.json",
		".git/hooks/pre-commit.sample", ".git/modules/sub/hooks/post-merge"} {
		if _, err := os.Lstat(filepath.Join(root, rel)); err == nil {
			t.Errorf("%s is still there after Restore", rel)
		}
	}
	if note := GuardNote(changed); !strings.Contains(note, "WARNING") || !strings.Contains(note, "and 3 more") {
		t.Errorf("GuardNote: %q", note)
	}
	if again := g.Restore(); len(again) != 0 {
		t.Errorf("a second Restore changed %q", again)
	}
}

// TestGitConfigPaths reads what a git config names: core.hooksPath and the
// include paths, however the file spells section and key.
func TestGitConfigPaths(t *testing.T) {
	hooks, includes := gitConfigPaths([]byte(`[core]
	HooksPath = "hooks dir"
[Include]
	path = a.cfg
[includeIf "gitdir:~/work/"]
	path=~/work.cfg
[core] hookspath = inline
[user]
	path = not-an-include
`))
	if !slices.Equal(hooks, []string{"hooks dir", "inline"}) || !slices.Equal(includes, []string{"a.cfg", "~/work.cfg"}) {
		t.Errorf("hooks %q, includes %q", hooks, includes)
	}
}

// FuzzGitConfigPaths: a config an agent wrote never makes the reader
// panic, and every name it returns is a value from the file.
func FuzzGitConfigPaths(f *testing.F) {
	for _, s := range []string{"[core]\n\thooksPath = x\n", "[include]path=a\n", "[", "]=\n", "[core \"\n=", "\x00[core]hookspath=\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		hooks, includes := gitConfigPaths(data)
		for _, v := range append(hooks, includes...) {
			if v == "" || !strings.Contains(string(data), v) {
				t.Errorf("returned %q, not a value of the file", v)
			}
		}
	})
}
