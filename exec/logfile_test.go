package exec

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-dev/sluice/queue"
)

// TestLogPathAttacks: the agent owns the spool and can plant out/<id>.log
// before it submits. Output must never be appended through it to a file
// the agent could not write with a command (a symlink or a hard link to
// ~/.bashrc, say); the run fails instead.
func TestLogPathAttacks(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"symlink", "hardlink"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			victim := filepath.Join(dir, "bashrc")
			if err := os.WriteFile(victim, []byte("original\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			logPath := filepath.Join(dir, "out.log")
			var err error
			if kind == "symlink" {
				err = os.Symlink(victim, logPath)
			} else {
				err = os.Link(victim, logPath)
			}
			if err != nil {
				t.Fatal(err)
			}
			r := &Runner{BaseEnv: os.Environ()}
			req := &queue.Request{ID: "LOG1", Kind: queue.KindExec, Command: "echo PWNED", Cwd: dir}
			res, _ := r.Run(context.Background(), req, Options{LogPath: logPath})
			if res.Status != queue.StatusFailed {
				t.Errorf("status %s, want failed", res.Status)
			}
			if data, _ := os.ReadFile(victim); string(data) != "original\n" {
				t.Fatalf("output was appended through the %s: %q", kind, data)
			}
		})
	}
}
