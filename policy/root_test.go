package policy

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestProjectRootKept: a directory's project root is kept for rootTTL,
// then looked up again, so a .git made since shows.
func TestProjectRootKept(t *testing.T) {
	saved := rootTTL
	defer func() { rootTTL = saved }()
	top := t.TempDir()
	dir := filepath.Join(top, "a", "b")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rootTTL = time.Hour
	if got := ProjectRoot(dir); got != dir {
		t.Fatalf("no .git: root %s, want %s", got, dir)
	}
	if err := os.Mkdir(filepath.Join(top, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := ProjectRoot(dir); got != dir {
		t.Errorf("within rootTTL: root %s, want the kept %s", got, dir)
	}
	rootTTL = 0
	if got := ProjectRoot(dir); got != top {
		t.Errorf("after rootTTL: root %s, want %s", got, top)
	}
}
