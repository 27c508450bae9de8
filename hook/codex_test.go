package hook

import "testing"

// TestCodexShellPatch: the shell call Codex turns into apply_patch.
func TestCodexShellPatch(t *testing.T) {
	patch := "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch"
	for _, tt := range []struct {
		cmd  string
		want bool
	}{
		{"apply_patch <<'EOF'\n" + patch + "\nEOF\n", true},
		{"apply_patch <<\"EOF\"\n" + patch + "\nEOF", true},
		{"applypatch << PATCH\n" + patch + "\nPATCH\n", true},
		{"apply_patch <<'EOF'\n" + patch + "\nEOF\nrm -rf ~", false}, // more after the patch: a shell line
		{"apply_patch <<'EOF'\n" + patch, false},                     // never closed
		{"echo apply_patch <<'EOF'\n" + patch + "\nEOF", false},
		{"apply_patch <<'E;F'\n" + patch + "\nE;F", false},
	} {
		got, ok := codexShellPatch(tt.cmd)
		if ok != tt.want || (ok && got != patch) {
			t.Errorf("%q: got %q, %v; want %v", tt.cmd, got, ok, tt.want)
		}
	}
}
