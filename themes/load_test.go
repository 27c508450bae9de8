package themes

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, n := range []string{"zeta", "alpha", "dark", ".hidden"} {
		writeTheme(t, dir, n, "")
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub.toml"), 0o700); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dir  string
		want []string
	}{
		{"", []string{"dark", "light", "high-contrast", "mono"}},
		{filepath.Join(dir, "missing"), []string{"dark", "light", "high-contrast", "mono"}},
		{dir, []string{"dark", "light", "high-contrast", "mono", "alpha", "zeta"}},
	}
	for _, tt := range tests {
		if got := Names(tt.dir); !slices.Equal(got, tt.want) {
			t.Errorf("Names(%q) = %v, want %v", tt.dir, got, tt.want)
		}
	}
}

func TestLoadUnknown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTheme(t, dir, "mine", "")
	for _, name := range []string{"nope", "../mine", "", ".mine"} {
		_, err := Load(name, dir)
		if err == nil {
			t.Fatalf("Load(%q) succeeded", name)
		}
		for _, want := range []string{"dark, light, high-contrast, mono, mine", "themes: "} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Load(%q): error %q does not contain %q", name, err, want)
			}
		}
	}
}
