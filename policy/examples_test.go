package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRuleExamples: a rule's match and not_match examples are checked as
// the policy loads: one that disagrees stops the load and says which.
func TestRuleExamples(t *testing.T) {
	home := t.TempDir()
	write := func(src string) error {
		f := filepath.Join(home, "policy.toml")
		if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(Options{Home: home, User: f})
		return err
	}
	if err := write(`[[rule]]
action = "allow"
command = "make test *"
match = ["make test", "make test unit", "cd x && make test integration"]
not_match = ["make deploy", "make"]
`); err != nil {
		t.Fatalf("examples that agree: %v", err)
	}
	err := write(`[[rule]]
action = "allow"
command = "make test *"
match = ["make lint"]
`)
	if err == nil || !strings.Contains(err.Error(), `does not match its example "make lint"`) || !strings.Contains(err.Error(), "policy.toml:1") {
		t.Errorf("a match example the rule misses: %v", err)
	}
	err = write(`[[rule]]
action = "allow"
command = "tar *"
not_match = ["tar -xzf backup.tgz -C /"]
`)
	if err == nil || !strings.Contains(err.Error(), "narrow the pattern") {
		t.Errorf("a not_match example the rule matches: %v", err)
	}
	if err := write("[[rule]]\naction = \"deny\"\npath = \"~/.aws/**\"\nmatch = [\"x\"]\n"); err == nil {
		t.Error("examples on a path rule loaded")
	}
}

// TestRuleProject: a rule with project applies in that directory and
// below, nowhere else.
func TestRuleProject(t *testing.T) {
	home := t.TempDir()
	app := filepath.Join(home, "src", "app")
	other := filepath.Join(home, "src", "other")
	mkdirs(t, app+"/sub", other)
	p := loadIn(t, home, "[[rule]]\naction = \"allow\"\ncommand = \"make deploy-staging\"\nproject = \"~/src/app\"\n", "")
	for _, tt := range []struct {
		cwd  string
		want Action
	}{{app, Allow}, {app + "/sub", Allow}, {other, Ask}, {home, Ask}, {app + "-evil", Ask}} {
		if v := p.Check("make deploy-staging", Env{Cwd: tt.cwd, Home: home}); v.Action != tt.want {
			t.Errorf("in %s: %s, want %s", tt.cwd, v.Action, tt.want)
		}
	}
	// Where the command runs, not where the line starts.
	for _, line := range []string{"cd ../other && make deploy-staging", "cd " + other + " && make deploy-staging", "cd \"$D\" && make deploy-staging"} {
		if v := p.Check(line, Env{Cwd: app, Home: home}); v.Action == Allow {
			t.Errorf("%q from the project: allowed by a rule for the project", line)
		}
	}
	if v := p.Check("cd sub && make deploy-staging", Env{Cwd: app, Home: home}); v.Action != Allow {
		t.Errorf("cd into the project's own subdirectory: %s", v.Action)
	}
}
