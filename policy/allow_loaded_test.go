package policy

import "testing"

// A user's allow rule for a command covers the command, not code an
// assignment before it makes the command load.
func TestAllowRuleDoesNotCoverLoadedCode(t *testing.T) {
	t.Parallel()
	p := load(t, "[[rule]]\naction = \"allow\"\ncommand = \"go test *\"\n", "")
	wantActions(t, p, Env{Cwd: "/home/me/src/app"}, map[string]Action{
		"go test ./...":                        Allow,
		"LD_PRELOAD=/tmp/x.so go test ./...":   Deny,
		"BASH_ENV=/tmp/rc go test ./...":       Deny,
		"GOFLAGS=-toolexec=/tmp/x go test ./.": Deny,
		"GOFLAGS=-count=1 go test ./...":       Allow,
	})
}
