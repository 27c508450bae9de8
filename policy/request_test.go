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
		// An agent's own file tools: the project, the system and the
		// few home files tools read pass; elsewhere, and secrets, ask.
		{"read outside", queue.Request{Kind: queue.KindTool, Tool: "Read", Input: input(map[string]any{"file_path": "/home/me/Documents/taxes.txt"}), Cwd: cwd}, Ask, ReadOnly},
		{"read another project", queue.Request{Kind: queue.KindTool, Tool: "Read", Input: input(map[string]any{"file_path": "../other/main.go"}), Cwd: cwd}, Ask, ReadOnly},
		{"read /tmp", queue.Request{Kind: queue.KindTool, Tool: "Read", Input: input(map[string]any{"file_path": "/tmp/build.log"}), Cwd: cwd}, Ask, ReadOnly},
		{"read the system", queue.Request{Kind: queue.KindTool, Tool: "Read", Input: input(map[string]any{"file_path": "/usr/include/stdio.h"}), Cwd: cwd}, Allow, ReadOnly},
		{"read /etc/os-release", queue.Request{Kind: queue.KindTool, Tool: "Read", Input: input(map[string]any{"file_path": "/etc/os-release"}), Cwd: cwd}, Allow, ReadOnly},
		{"read the module cache", queue.Request{Kind: queue.KindTool, Tool: "Read", Input: input(map[string]any{"file_path": "/home/me/go/pkg/mod/golang.org/x/sys@v0.1.0/unix/syscall.go"}), Cwd: cwd}, Allow, ReadOnly},
		{"read .gitconfig", queue.Request{Kind: queue.KindTool, Tool: "Read", Input: input(map[string]any{"file_path": "~/.gitconfig"}), Cwd: cwd}, Allow, ReadOnly},
		{"read cargo credentials", queue.Request{Kind: queue.KindTool, Tool: "Read", Input: input(map[string]any{"file_path": "/home/me/.cargo/credentials.toml"}), Cwd: cwd}, Ask, ReadOnly},
		{"read a project key", queue.Request{Kind: queue.KindTool, Tool: "Read", Input: input(map[string]any{"file_path": cwd + "/deploy/id_ed25519"}), Cwd: cwd}, Ask, ReadOnly},
		{"read project .npmrc", queue.Request{Kind: queue.KindTool, Tool: "Read", Input: input(map[string]any{"file_path": cwd + "/.npmrc"}), Cwd: cwd}, Ask, ReadOnly},
		{"read project credentials", queue.Request{Kind: queue.KindTool, Tool: "Read", Input: input(map[string]any{"file_path": cwd + "/config/credentials-prod.json"}), Cwd: cwd}, Ask, ReadOnly},
		{"read id_gen.go", queue.Request{Kind: queue.KindTool, Tool: "Read", Input: input(map[string]any{"file_path": cwd + "/internal/id_gen.go"}), Cwd: cwd}, Allow, ReadOnly},
		{"grep outside", queue.Request{Kind: queue.KindTool, Tool: "Grep", Input: input(map[string]any{"pattern": "password", "path": "/home/me"}), Cwd: cwd}, Ask, ReadOnly},
		{"grep the project", queue.Request{Kind: queue.KindTool, Tool: "Grep", Input: input(map[string]any{"pattern": "TODO", "path": "internal"}), Cwd: cwd}, Allow, ReadOnly},
		{"grep from home", queue.Request{Kind: queue.KindTool, Tool: "Grep", Input: input(map[string]any{"pattern": "AKIA"}), Cwd: "/home/me"}, Ask, ReadOnly},
		{"glob from /", queue.Request{Kind: queue.KindTool, Tool: "Glob", Input: input(map[string]any{"pattern": "**/*.pem"}), Cwd: "/"}, Ask, ReadOnly},
		{"glob an absolute pattern", queue.Request{Kind: queue.KindTool, Tool: "Glob", Input: input(map[string]any{"pattern": "/home/me/.aws/*"}), Cwd: cwd}, Ask, ReadOnly},
		{"glob the project", queue.Request{Kind: queue.KindTool, Tool: "Glob", Input: input(map[string]any{"pattern": "**/*.go"}), Cwd: cwd}, Allow, ReadOnly},
		{"grep /etc", queue.Request{Kind: queue.KindTool, Tool: "Grep", Input: input(map[string]any{"pattern": "root", "path": "/etc"}), Cwd: cwd}, Ask, ReadOnly},
		{"ls /etc", queue.Request{Kind: queue.KindTool, Tool: "LS", Input: input(map[string]any{"path": "/etc"}), Cwd: cwd}, Allow, ReadOnly},
		{"gemini read_file outside", queue.Request{Kind: queue.KindTool, Tool: "read_file", Input: input(map[string]any{"absolute_path": "/home/me/.bash_history"}), Cwd: cwd}, Ask, ReadOnly},
		{"gemini read_many_files", queue.Request{Kind: queue.KindTool, Tool: "read_many_files", Input: input(map[string]any{"paths": []string{"src/main.go", "/home/me/notes/"}}), Cwd: cwd}, Ask, ReadOnly},
		{"gemini search_file_content", queue.Request{Kind: queue.KindTool, Tool: "search_file_content", Input: input(map[string]any{"pattern": "token", "dir_path": "/home/me/.config"}), Cwd: cwd}, Ask, ReadOnly},
		{"gemini list_directory from home", queue.Request{Kind: queue.KindTool, Tool: "list_directory", Input: input(map[string]any{}), Cwd: "/home/me"}, Ask, ReadOnly},
		{"gemini glob in the project", queue.Request{Kind: queue.KindTool, Tool: "glob", Input: input(map[string]any{"pattern": "src/**/*.ts"}), Cwd: cwd}, Allow, ReadOnly},
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

// TestProjectSecrets: a policy file's project_secrets globs add to the
// files an agent's Read asks for; a bad glob stops the load.
func TestProjectSecrets(t *testing.T) {
	t.Parallel()
	p := load(t, "project_secrets = [\"*.tfstate\", \"config/prod/**\"]\n", "")
	const cwd = "/home/me/src/app"
	for path, want := range map[string]Action{
		cwd + "/infra/terraform.tfstate": Ask,
		cwd + "/config/prod/db.yaml":     Ask,
		cwd + "/config/dev/db.yaml":      Allow,
		cwd + "/main.go":                 Allow,
	} {
		in, _ := json.Marshal(map[string]any{"file_path": path})
		if v := p.CheckRequest(&queue.Request{Kind: queue.KindTool, Tool: "Read", Input: in, Cwd: cwd}); v.Action != want {
			t.Errorf("Read %s: %s, want %s (%s)", path, v.Action, want, explain(v))
		}
	}
	bad := writeFile(t, "bad.toml", "project_secrets = [\"[x\"]\n")
	if _, err := Load(Options{User: bad, Home: "/home/me"}); err == nil {
		t.Error("a bad project_secrets glob loaded")
	}
}
