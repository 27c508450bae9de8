package policy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-dev/sluice/queue"
)

func TestCheckRequest(t *testing.T) {
	t.Parallel()
	p, err := Load(Options{Home: "/home/me"})
	if err != nil {
		t.Fatal(err)
	}
	const cwd = "/home/me/src/app"
	input := func(m map[string]any) json.RawMessage { b, _ := json.Marshal(m); return b }
	tests := []struct {
		name string
		req  queue.Request
		act  Action
		cat  Category
	}{
		{"exec", queue.Request{Kind: queue.KindExec, Command: "git status", Cwd: cwd}, Allow, ReadOnly},
		{"exec compound", queue.Request{Kind: queue.KindExec, Command: "git status && rm -rf build", Cwd: cwd}, Ask, Destructive},
		{"write in the project", queue.Request{Kind: queue.KindWrite, Path: "internal/config/defaults.go", Content: "package config\n", Cwd: cwd}, Ask, Mutating},
		{"edit a shell rc", queue.Request{Kind: queue.KindEdit, Path: "/home/me/.bashrc", OldString: "a", NewString: "b", Cwd: cwd}, Deny, Mutating},
		{"write a git hook", queue.Request{Kind: queue.KindWrite, Path: ".git/hooks/pre-commit", Cwd: cwd}, Deny, Mutating},
		{"write outside", queue.Request{Kind: queue.KindWrite, Path: "/tmp/notes.md", Cwd: cwd}, Ask, Mutating},
		{"patch in the project", queue.Request{Kind: queue.KindPatch, Diff: "--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-a\n+b\n", Cwd: cwd}, Ask, Mutating},
		{"patch escaping", queue.Request{Kind: queue.KindPatch, Diff: "--- a/../../.ssh/authorized_keys\n+++ b/../../.ssh/authorized_keys\n@@ -0,0 +1 @@\n+ssh-ed25519 AAAA\n", Cwd: cwd}, Deny, Mutating},
		{"read in the project", queue.Request{Kind: queue.KindTool, Tool: "Read", Input: input(map[string]any{"file_path": cwd + "/main.go"}), Cwd: cwd}, Allow, ReadOnly},
		{"read a key", queue.Request{Kind: queue.KindTool, Tool: "Read", Input: input(map[string]any{"file_path": "/home/me/.ssh/id_ed25519"}), Cwd: cwd}, Ask, ReadOnly},
		{"read .env", queue.Request{Kind: queue.KindTool, Tool: "Read", Input: input(map[string]any{"file_path": cwd + "/.env"}), Cwd: cwd}, Ask, ReadOnly},
		{"web fetch", queue.Request{Kind: queue.KindTool, Tool: "WebFetch", Input: input(map[string]any{"url": "https://pkg.go.dev"}), Cwd: cwd}, Ask, Networked},
		{"mcp tool", queue.Request{Kind: queue.KindTool, Tool: "mcp__github__create_issue", Input: input(map[string]any{"title": "x"}), Cwd: cwd}, Ask, Unknown},
		{"hidden path", queue.Request{Kind: queue.KindWrite, Path: "src/\u202egpj.exe", Cwd: cwd}, Ask, Mutating},
		// The env map is judged like assignments written before the command.
		{"env LD_PRELOAD", queue.Request{Kind: queue.KindExec, Command: "go vet ./...", Env: map[string]string{"LD_PRELOAD": "/tmp/x.so"}, Cwd: cwd}, Deny, HostEscape},
		{"env BASH_ENV", queue.Request{Kind: queue.KindExec, Command: "ls", Env: map[string]string{"BASH_ENV": "/tmp/evil"}, Cwd: cwd}, Deny, HostEscape},
		{"env GOFLAGS toolexec", queue.Request{Kind: queue.KindExec, Command: "go vet ./...", Env: map[string]string{"GOFLAGS": "-toolexec=/tmp/x"}, Cwd: cwd}, Deny, HostEscape},
		{"env quote breakout", queue.Request{Kind: queue.KindExec, Command: "ls", Env: map[string]string{"X": "a' ; rm -rf ~ ; '"}, Cwd: cwd}, Allow, ReadOnly},
		{"env TAR_OPTIONS", queue.Request{Kind: queue.KindExec, Command: "tar -tf release.tar", Env: map[string]string{"TAR_OPTIONS": "--to-command=sh"}, Cwd: cwd}, Ask, Unknown},
		{"env GREP", queue.Request{Kind: queue.KindExec, Command: "zgrep ERROR app.log.gz", Env: map[string]string{"GREP": "sh -c id"}, Cwd: cwd}, Ask, Unknown},
		{"env harmless", queue.Request{Kind: queue.KindExec, Command: "git status", Env: map[string]string{"GIT_PAGER": "cat", "CI": "1"}, Cwd: cwd}, Allow, ReadOnly},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := p.CheckRequest(&tt.req)
			if v.Action != tt.act || v.Category != tt.cat {
				t.Fatalf("got %s %s, want %s %s: %s", v.Action, v.Category, tt.act, tt.cat, explain(v))
			}
		})
	}
}

func TestJudgeFixtures(t *testing.T) {
	t.Parallel()
	j := &Judge{Options: Options{Home: "/home/me"}}
	for name, data := range fixtureRequests(t) {
		req, err := queue.DecodeRequest(data, "")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		v := j.Judge(req)
		if v.Action == "" || v.Category == "" || v.Risk == "" {
			t.Errorf("%s: incomplete verdict %+v", name, v)
		}
	}
}

func fixtureRequests(t *testing.T) map[string][]byte {
	t.Helper()
	paths, _ := filepath.Glob("../testdata/requests/*.json")
	out := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = b
	}
	if len(out) == 0 {
		t.Fatal("no fixtures")
	}
	return out
}
