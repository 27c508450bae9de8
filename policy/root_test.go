package policy

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// TestProjectRootKept: a directory's project root is kept for rootTTL,
// then looked up again, so a .git made since shows.
func TestProjectRootKept(t *testing.T) {
	saved := rootTTL
	defer func() { rootTTL = saved }()
	top := t.TempDir()
	dir := filepath.Join(top, "a", "b")
	mkdirs(t, dir)
	rootTTL = time.Hour
	if got := ProjectRoot(dir); got != dir {
		t.Fatalf("no .git: root %s, want %s", got, dir)
	}
	mkdirs(t, filepath.Join(top, ".git"))
	if got := ProjectRoot(dir); got != dir {
		t.Errorf("within rootTTL: root %s, want the kept %s", got, dir)
	}
	rootTTL = 0
	if got := ProjectRoot(dir); got != top {
		t.Errorf("after rootTTL: root %s, want %s", got, top)
	}
}

// TestHomeIsNoJailRoot: the home directory and / are never a jail root:
// a request that writes, whose root would be one, asks and says so, even
// where the person's policy lets writes pass; reading there still passes.
func TestHomeIsNoJailRoot(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	project := filepath.Join(home, "src", "app")
	mkdirs(t, filepath.Join(project, ".git"))
	p := loadIn(t, home, "[defaults]\nmutating = \"allow\"\n[[rule]]\naction = \"allow\"\ncommand = \"npm install *\"\n", "")
	for _, tt := range []struct {
		name string
		req  queue.Request
		want Action
	}{
		{"install in the project", queue.Request{Kind: queue.KindExec, Command: "npm install left-pad", Cwd: project}, Allow},
		{"install in home", queue.Request{Kind: queue.KindExec, Command: "npm install left-pad", Cwd: home}, Ask},
		{"touch in home", queue.Request{Kind: queue.KindExec, Command: "touch notes.md", Cwd: home}, Ask},
		{"mkdir in /", queue.Request{Kind: queue.KindExec, Command: "mkdir -p scratch", Cwd: "/"}, Ask},
		{"ls in home", queue.Request{Kind: queue.KindExec, Command: "ls -la", Cwd: home}, Allow},
		{"write in the project", queue.Request{Kind: queue.KindWrite, Path: "README.md", Cwd: project}, Allow},
		{"write in home", queue.Request{Kind: queue.KindWrite, Path: "notes.md", Cwd: home}, Ask},
		{"patch from /", queue.Request{Kind: queue.KindPatch, Diff: "--- a/tmp/x\n+++ b/tmp/x\n@@ -1 +1 @@\n-a\n+b\n", Cwd: "/"}, Ask},
	} {
		v := p.CheckRequest(&tt.req)
		if v.Action != tt.want {
			t.Errorf("%s: %s, want %s (%s)", tt.name, v.Action, tt.want, explain(v))
			continue
		}
		if tt.want == Ask && !strings.Contains(strings.Join(v.Reasons, "; "), "never granted as a jail root") {
			t.Errorf("%s: asks without saying the root is never granted: %v", tt.name, v.Reasons)
		}
	}
	if got := UngrantedRoot(Roots(home), home); got != home {
		t.Errorf("UngrantedRoot(Roots(home)) = %q, want %q", got, home)
	}
	if got := UngrantedRoot(Roots(project), home); got != "" {
		t.Errorf("UngrantedRoot(Roots(project)) = %q, want none", got)
	}
}
