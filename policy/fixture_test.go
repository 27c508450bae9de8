package policy

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// writeFile writes src to name below a new temporary directory, making
// the directories between, and returns its path.
func writeFile(t testing.TB, name, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	mkdirs(t, filepath.Dir(p))
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// mkdirs makes each directory, with its parents.
func mkdirs(t testing.TB, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// load loads the policy with user's text as the person's file and
// project's as the project's (each left out when empty), home being
// /home/me.
func load(t testing.TB, user, project string) *Policy {
	t.Helper()
	return loadIn(t, "/home/me", user, project)
}

// loadIn is load with home as the home directory.
func loadIn(t testing.TB, home, user, project string) *Policy {
	t.Helper()
	opts := Options{Home: home}
	if user != "" {
		opts.User, opts.UserRequired = writeFile(t, "policy.toml", user), true
	}
	if project != "" {
		opts.Project = writeFile(t, ".sluice/policy.toml", project)
	}
	p, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// wantActions checks the action p gives each line in env.
func wantActions(t *testing.T, p *Policy, env Env, want map[string]Action) {
	t.Helper()
	for line, w := range want {
		if v := p.Check(line, env); v.Action != w {
			t.Errorf("%q: %s, want %s (%s)", line, v.Action, w, explain(v))
		}
	}
}

// lintError lints src as a policy file and returns the *LoadError it
// must give, and the file's path.
func lintError(t *testing.T, src string) (*LoadError, string) {
	t.Helper()
	f := writeFile(t, "policy.toml", src)
	err := Lint(f)
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatalf("Lint = %v, want a *LoadError", err)
	}
	return le, f
}
