package sandbox

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBaseSeesNewSecret: a secret path that does not exist when the base
// layer is built, then appears (an agent's tool logs in: ~/.aws is made),
// is hidden from the next run: the base is built again.
func TestBaseSeesNewSecret(t *testing.T) {
	if _, err := Available(); err != nil {
		t.Skip(err)
	}
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	aws := filepath.Join(home, ".aws")
	spec := Spec{Profile: ReadOnly, Hidden: []string{aws, filepath.Join(home, ".ssh")}, TmpDir: t.TempDir()}
	cat := func() string {
		t.Helper()
		c, err := Prepare(spec)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		cmd := osexec.Command("/bin/cat", filepath.Join(aws, "credentials"))
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := Start(cmd, c, nil); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		return out.String()
	}
	if out := cat(); !strings.Contains(out, "No such file") {
		t.Fatalf("before ~/.aws exists: %q", out)
	}
	if err := os.MkdirAll(aws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(aws, "credentials"), []byte("aws_secret_access_key = SECRET-KEY\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := cat(); strings.Contains(out, "SECRET-KEY") || !strings.Contains(out, "Permission denied") {
		t.Fatalf("a secret path made after the base was built is readable: %q", out)
	}
}
