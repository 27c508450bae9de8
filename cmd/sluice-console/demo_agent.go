package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// The fake agent of 'sluice console --demo': it works on a small Go
// project in a temporary directory and sends the console one request of
// every kind a newcomer should see in the first minute — commands the
// policy allows alone, commands it asks about, commands it denies, a file
// edit and a new file with their diffs, a line that hides characters, and
// output that redraws itself with \r.

// demoExpiry is how long a demo request waits for a decision.
const demoExpiry = 10 * time.Minute

// demoSession is the session id of the demo's agents (each agent's own
// session is demoSession-AGENT).
const demoSession = "demo"

// demoProjectFiles are the files of the demo project, by slash path (a
// path ending in '/' is an empty directory). The
// greeting test only checks the prefix, so the demo's edit of the greeting
// keeps it passing.
var demoProjectFiles = []struct{ path, content string }{
	{"go.mod", "module example.com/hello\n\ngo 1.21\n"},
	{"scripts/integration.sh", `#!/bin/sh
# The slow suite: a minute of steps, so there is time to watch it, or to
# stop it with x.
i=1
while [ "$i" -le 60 ]; do
	echo "integration: step $i of 60"
	sleep 1
	i=$((i + 1))
done
echo "integration: all steps passed"
`},
	{"main.go", `// Command hello prints a greeting.
package main

import "fmt"

// greeting is what hello says to name.
func greeting(name string) string {
	return "Hello, " + name + "!"
}

func main() {
	fmt.Println(greeting("world"))
}
`},
	{"main_test.go", `package main

import (
	"strings"
	"testing"
)

func TestGreeting(t *testing.T) {
	if got := greeting("world"); !strings.HasPrefix(got, "Hello, world") {
		t.Errorf("greeting(%q) = %q, want it to start with %q", "world", got, "Hello, world")
	}
}
`},
	{"README.md", "# hello\n\nA small command that prints a greeting.\n\n    make build   # writes build/hello\n    make test\n    make clean\n"},
	{"Makefile", ".PHONY: build test clean\n\nbuild:\n\tmkdir -p build\n\tgo build -o build/hello .\n\ntest:\n\tgo test ./...\n\nclean:\n\trm -rf build\n"},
	{".gitignore", "build/\n"},
	{"build/version.txt", "hello v0.1.0 (make build)\n"},
	// A git repository with no commits, written by hand so that the
	// demo's 'git status' works without running git here.
	{".git/HEAD", "ref: refs/heads/main\n"},
	{".git/config", "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"},
	{".git/description", "hello: the sluice demo project\n"},
	{".git/objects/", ""},
	{".git/refs/heads/", ""},
	{".git/refs/tags/", ""},
}

// demoProject creates a small realistic project in dir (a Go module:
// go.mod, main.go, main_test.go, README.md, a Makefile, a build/ dir with
// a file, and an empty git repository) for the demo requests to act on.
// dir may exist but must not hold any of these files: demoProject never
// overwrites one.
func demoProject(dir string) error {
	for _, f := range demoProjectFiles {
		p := filepath.Join(dir, filepath.FromSlash(f.path))
		if strings.HasSuffix(f.path, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return fmt.Errorf("demo project: %w", err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("demo project: %w", err)
		}
		w, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return fmt.Errorf("demo project: %w", err)
		}
		_, err = w.WriteString(f.content)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("demo project: %w", err)
		}
	}
	return nil
}

// demoRequests are the demo's requests in the order they are sent, for an
// agent working in dir (absolute). ids and times are set when each is
// submitted. The verdict after each is the embedded default policy's
// (sluice check --cwd DIR -- COMMAND, for a project made by demoProject).
func demoRequests(dir string) []*queue.Request {
	sh := func(agent, command, note string) *queue.Request {
		return &queue.Request{Kind: queue.KindExec, Command: command, Agent: agent, Note: note}
	}
	file := func(name string) string { return filepath.Join(dir, name) }
	reqs := []*queue.Request{
		// allow, read_only, low
		sh("claude-code", "git status", "Check the working tree before starting"),
		// allow, read_only, low
		sh("claude-code", "ls -la", "Look at the project layout"),
		// allow, read_only, low
		sh("claude-code", "cat go.mod", "Check the module path and Go version"),
		// allow_with_checkpoint, mutating, medium: "compiles and runs the
		// project's tests"; it runs without asking, confined, with the
		// project checkpointed first (a quiet line says so)
		sh("claude-code", "go test ./...", "Run the tests before changing anything"),
		// ask, mutating, medium: an edit in the project; the console
		// shows its diff
		{Kind: queue.KindEdit, Path: file("main.go"),
			OldString: `return "Hello, " + name + "!"`,
			NewString: `return "Hello, " + name + ", and welcome to sluice!"`,
			Agent:     "claude-code", Note: "Make the greeting friendlier, as asked"},
		// ask, destructive, high: "deletes files", "recursive or forced delete"
		sh("claude-code", "rm -rf build", "Remove the stale build output"),
		// deny, host_escape_risk, critical: sudo, and apt-get installs
		// system packages as root
		sh("codex", "sudo apt-get install -y jq", "Install jq to read the JSON test report"),
		// deny, destructive, critical: a Trojan-source line. The
		// right-to-left override (U+202E) after the message makes a
		// terminal that honours it draw the rest of the line reversed
		// ("# ~ fr- mr;"), so the rm hides in what looks like trailing
		// noise. The policy flags "control or invisible characters
		// (U+202E)", and rm -rf ~ destroys the home directory: a deny no
		// approval overrides.
		sh("gemini-cli", "git commit -am \"fix greeting\"\u202e ;rm -rf ~ #", "Commit the greeting fix"),
		// ask, mutating, medium: a new file; the diff is all additions
		{Kind: queue.KindWrite, Path: file("NOTES.md"),
			Content: "# Notes\n\n- The greeting now welcomes the user to sluice.\n" +
				"- `go test ./...` passes; the test only checks the \"Hello, world\" prefix.\n" +
				"- build/ is generated by `make build`; it is safe to delete.\n",
			Agent: "claude-code", Note: "Write down what changed for the reviewer"},
		// allow, read_only, low: output that redraws one line with \r, as
		// build tools' progress bars do
		sh("claude-code", `printf 'build [          ]   0%%'; sleep 1; printf '\rbuild [=====     ]  50%%'; sleep 1; printf '\rbuild [==========] 100%%\n'`,
			"Build it and watch the progress"),
		// ask, unknown, medium: a project script sluice cannot see into;
		// it runs a minute, long enough to try x
		sh("claude-code", "sh scripts/integration.sh", "Run the slow integration suite (a minute; x stops it)"),
	}
	for _, r := range reqs {
		r.Version = queue.Version
		r.Mode = queue.ModeExecute
		r.Cwd = dir
		r.Session = demoSession + "-" + r.Agent
		if r.Kind == queue.KindExec {
			r.TimeoutS = 300
		}
	}
	return reqs
}

// demoAgent submits the demo's requests to sp, as an agent working in dir
// would, spaced by pace (0 sends them all at once), until all are
// submitted or ctx ends. It returns the ids of the requests it submitted,
// in submission order. The error is nil when all were submitted; when ctx
// ends first it is ctx.Err() (context.Canceled or DeadlineExceeded), with
// the ids submitted until then; a request the spool refuses stops it with
// that error.
func demoAgent(ctx context.Context, sp *queue.Spool, dir string, pace time.Duration) ([]string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("demo agent: %w", err)
	}
	var ids []string
	for i, req := range demoRequests(abs) {
		if i > 0 && pace > 0 {
			t := time.NewTimer(pace)
			select {
			case <-ctx.Done():
				t.Stop()
				return ids, ctx.Err()
			case <-t.C:
			}
		}
		if err := ctx.Err(); err != nil {
			return ids, err
		}
		now := time.Now().UTC()
		req.ID, req.CreatedAt, req.ExpiresAt = queue.NewID(), now, now.Add(demoExpiry)
		if err := sp.Submit(req); err != nil {
			return ids, fmt.Errorf("demo agent: request %d (%s): %w", i+1, req.Kind, err)
		}
		ids = append(ids, req.ID)
	}
	return ids, nil
}
