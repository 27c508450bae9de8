package policy

import (
	"strings"
	"testing"
)

// TestKeysAreLowerCase checks that a policy file's keys are matched by
// their exact spelling: the TOML decoder matches struct fields without
// regard to case, which would accept ACTION or [[Rule]] silently.
func TestKeysAreLowerCase(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src, key string
		line           int
	}{
		{"upper action", "[[rule]]\nACTION = \"allow\"\ncommand = \"ls *\"\n", `"rule.ACTION"`, 2},
		{"title command", "[[rule]]\naction = \"allow\"\nCommand = \"ls *\"\n", `"rule.Command"`, 3},
		{"mixed reason", "[[rule]]\naction = \"allow\"\ncommand = \"ls *\"\nReason = \"x\"\n", `"rule.Reason"`, 4},
		{"upper path", "# c\n[[rule]]\naction = \"deny\"\nPATH = \"/x/**\"\n", `"rule.PATH"`, 4},
		{"title access", "[[rule]]\naction = \"deny\"\npath = \"/x/**\"\nAccess = \"write\"\n", `"rule.Access"`, 4},
		{"title rule table", "[[Rule]]\naction = \"allow\"\ncommand = \"ls *\"\n", `"Rule"`, 1},
		{"upper defaults table", "[DEFAULTS]\nmutating = \"ask\"\n", `"DEFAULTS"`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			le, f := lintError(t, tt.src)
			if !strings.Contains(le.Msg, "unknown key "+tt.key) || le.Line != tt.line || le.File != f {
				t.Errorf("got %v, want unknown key %s at line %d", le, tt.key, tt.line)
			}
		})
	}
}

// TestLowerCaseKeysStillLoad guards the fix against rejecting the
// documented spelling.
func TestLowerCaseKeysStillLoad(t *testing.T) {
	t.Parallel()
	f := writeFile(t, "policy.toml", "[defaults]\nmutating = \"ask\"\n\n[[rule]]\naction = \"deny\"\npath = \"/x/**\"\naccess = \"write\"\nreason = \"r\"\n\n[[rule]]\naction = \"allow\"\ncommand = \"ls *\"\n")
	if err := Lint(f); err != nil {
		t.Fatal(err)
	}
}
