package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRuleMatchesOneCommandNeverTheString(t *testing.T) {
	t.Parallel()
	p := load(t, `
[[rule]]
action = "allow"
command = "go test *"

[[rule]]
action = "allow"
command = "git status *"
`, "")
	wantActions(t, p, tableEnv, map[string]Action{
		"go test ./...":                 Allow,
		"go test -run TestX ./pkg":      Allow,
		"go test":                       Allow,
		"go testx":                      Ask, // the pattern word is "test", not a prefix
		"go test ./... && rm -rf build": Ask, // every part must be allowed
		"git status; rm -rf build":      Ask,
		"git status; rm -rf ~":          Deny,
		"git status --short":            Allow,
		"echo $(go test ./...)":         Allow,
		"go test ./... > /home/me/.ssh/authorized_keys": Deny, // paths are judged after rules
		"go run ./cmd/app": Ask,
	})
}

func TestPrecedenceDenyAskAllow(t *testing.T) {
	t.Parallel()
	p := load(t, `
[[rule]]
action = "allow"
command = "git *"

[[rule]]
action = "deny"
command = "git push *"
reason = "we push from CI"

[[rule]]
action = "ask"
command = "git commit *"
`, "")
	wantActions(t, p, tableEnv, map[string]Action{
		"git log":                Allow,
		"git push origin main":   Deny,
		"git commit -m fix":      Ask,
		"git log; git push":      Deny,
		"git -C sub push origin": Allow, // the pattern is over argv: "git -C sub push" is not "git push *"
	})
	if v := p.Check("git push", tableEnv); !strings.Contains(strings.Join(v.Reasons, ";"), "we push from CI") {
		t.Errorf("the rule's reason is missing: %v", v.Reasons)
	}
}

func TestUserLoosensProjectOnlyTightens(t *testing.T) {
	t.Parallel()
	p := load(t, `
[defaults]
mutating = "allow"
`, `
[defaults]
mutating = "allow"
networked = "deny"

[[rule]]
action = "allow"
command = "rm *"

[[rule]]
action = "deny"
command = "make deploy *"
`)
	wantActions(t, p, tableEnv, map[string]Action{
		"touch notes.txt":          Allow, // the user's default for mutating
		"curl https://example.com": Deny,  // the project's stricter default
		"rm -rf build":             Ask,   // a project allow rule cannot loosen
		"make deploy prod":         Deny,  // the project's deny rule
	})
	if len(p.Warnings()) != 1 || !strings.Contains(p.Warnings()[0], "allow rule ignored") {
		t.Errorf("warnings %v", p.Warnings())
	}
}

func TestPathRules(t *testing.T) {
	t.Parallel()
	p := load(t, `
[[rule]]
action = "allow"
access = "write"
path = "/tmp/**"

[[rule]]
action = "deny"
access = "read"
path = "./secrets/**"

[[rule]]
action = "allow"
access = "write"
path = "~/.ssh/known_hosts"
`, "")
	wantActions(t, p, tableEnv, map[string]Action{
		"echo hi > /tmp/out.txt":          Ask,  // mutating by default; no jail escalation
		"echo hi > /var/tmp/out.txt":      Ask,  // outside the jail
		"cat secrets/prod.json":           Deny, // ./ is the project root
		"cd sub && cat ../secrets/a.json": Deny,
		"echo x >> ~/.ssh/known_hosts":    Deny, // a user allow cannot beat the default deny
		"echo hi > ./out.txt":             Ask,
	})
	v := p.Check("echo hi > /tmp/out.txt", tableEnv)
	for _, r := range v.Reasons {
		if strings.Contains(r, "outside the project") {
			t.Errorf("an allowed path still escalated: %v", v.Reasons)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src, want string
		line            int
	}{
		{"not TOML", "[[rule]\naction = 1", "must be TOML", 2},
		{"unknown key", "[[rule]]\naction = \"allow\"\ncommmand = \"ls\"\n", `unknown key "rule.commmand"`, 3},
		{"bad action", "[[rule]]\naction = \"permit\"\ncommand = \"ls\"\n", `unknown action "permit"`, 0},
		{"no action", "\n\n[[rule]]\ncommand = \"ls\"\n", "rule without an action", 3},
		{"bad glob", "[[rule]]\naction = \"deny\"\npath = \"/etc/[abc\"\n", "not a valid glob", 1},
		{"both", "[[rule]]\naction = \"deny\"\npath = \"/etc/**\"\ncommand = \"ls\"\n", "not both", 1},
		{"neither", "[[rule]]\naction = \"deny\"\n", "needs a command", 1},
		{"bad category", "[defaults]\nreadonly = \"allow\"\n", `unknown category "readonly"`, 2},
		{"pattern with substitution", "[[rule]]\naction = \"allow\"\ncommand = \"echo $(id)\"\n", "not literal", 1},
		{"pattern list", "[[rule]]\naction = \"allow\"\ncommand = \"ls; rm x\"\n", "one simple command", 1},
		{"bad access", "[[rule]]\naction = \"deny\"\npath = \"/x\"\naccess = \"exec\"\n", `access "exec"`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			le, f := lintError(t, tt.src)
			if !strings.Contains(le.Error(), tt.want) || !strings.Contains(le.Error(), f) {
				t.Errorf("error %q should name the file and say %q", le, tt.want)
			}
			if tt.line > 0 && le.Line != tt.line {
				t.Errorf("line %d, want %d (%v)", le.Line, tt.line, le)
			}
		})
	}
}

func TestMissingFiles(t *testing.T) {
	t.Parallel()
	if _, err := Load(Options{User: "/nonexistent/policy.toml"}); err != nil {
		t.Errorf("a missing default user file must be fine: %v", err)
	}
	if _, err := Load(Options{User: "/nonexistent/policy.toml", UserRequired: true}); err == nil {
		t.Error("a missing --policy file must be an error")
	}
}

func TestSymlinkIntoProtectedPath(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	proj := filepath.Join(home, "src", "app")
	mkdirs(t, filepath.Join(home, ".ssh"), proj)
	if err := os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(proj, "keys")); err != nil {
		t.Fatal(err)
	}
	p := loadIn(t, home, "", "")
	v := p.Check("echo ssh-ed25519 AAAA >> keys/authorized_keys", Env{Cwd: proj, Home: home})
	if v.Action != Deny {
		t.Fatalf("a write through a symlink into ~/.ssh: %s", explain(v))
	}
}

// TestGlobExpandsToProtectedPath: a pattern is judged by the files it
// matches when checked; here only the expansion, through a symlink in the
// project, shows that the write lands in ~/.ssh.
func TestGlobExpandsToProtectedPath(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	proj := filepath.Join(home, "src", "app")
	mkdirs(t, filepath.Join(home, ".ssh"), proj)
	if err := os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(proj, "keys-backup")); err != nil {
		t.Fatal(err)
	}
	p := loadIn(t, home, "", "")
	env := Env{Cwd: proj, Home: home}
	if v := p.Check("cp id.pub keys-*/authorized_keys", env); v.Action != Deny {
		t.Fatalf("write through a pattern into ~/.ssh: %s", explain(v))
	}
	if v := p.Check("cp id.pub build-*/out", env); v.Action != Ask {
		t.Fatalf("a pattern matching nothing protected: %s", explain(v))
	}
}
