package policy

import (
	"os"
	"path/filepath"
	"testing"
)

// A user's allow rule for a command covers the command, not code an
// assignment before it makes the command load.
func TestAllowRuleDoesNotCoverLoadedCode(t *testing.T) {
	t.Parallel()
	user := filepath.Join(t.TempDir(), "policy.toml")
	if err := os.WriteFile(user, []byte("[[rule]]\naction = \"allow\"\ncommand = \"go test *\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := Load(Options{User: user, Home: "/home/me"})
	if err != nil {
		t.Fatal(err)
	}
	env := Env{Cwd: "/home/me/src/app"}
	for line, want := range map[string]Action{
		"go test ./...":                        Allow,
		"LD_PRELOAD=/tmp/x.so go test ./...":   Deny,
		"BASH_ENV=/tmp/rc go test ./...":       Deny,
		"GOFLAGS=-toolexec=/tmp/x go test ./.": Deny,
		"GOFLAGS=-count=1 go test ./...":       Allow,
	} {
		if v := p.Check(line, env); v.Action != want {
			t.Errorf("%s: %s, want %s (%s)", line, v.Action, want, explain(v))
		}
	}
}
