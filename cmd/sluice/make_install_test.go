package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeInstall: 'make install' puts every program of cmd/ (sluice and
// the ones it runs from beside itself) into PREFIX/bin, ~/.local/bin by
// default, from one 'make build'.
func TestMakeInstall(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("needs make")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	progs, err := os.ReadDir(filepath.Join(root, "cmd"))
	if err != nil {
		t.Fatal(err)
	}
	dry := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("make", append([]string{"-n", "install"}, args...)...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "HOME=/home/someone")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make -n install %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	for _, tc := range []struct {
		args []string
		dir  string
	}{
		{nil, "/home/someone/.local/bin"},
		{[]string{"PREFIX=/opt/sluice"}, "/opt/sluice/bin"},
	} {
		out := dry(tc.args...)
		if !strings.Contains(out, "go build -o bin/ ./cmd/...") {
			t.Errorf("make install %v does not build first:\n%s", tc.args, out)
		}
		var line string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "install -m 0755 ") {
				line = l
			}
		}
		if !strings.HasSuffix(line, ` "`+tc.dir+`/"`) {
			t.Errorf("make install %v does not install into %s:\n%s", tc.args, tc.dir, out)
		}
		for _, p := range progs {
			if p.IsDir() && !strings.Contains(line, " bin/"+p.Name()+" ") {
				t.Errorf("make install %v leaves out %s (cmd/%s):\n%s", tc.args, p.Name(), p.Name(), out)
			}
		}
	}
}
