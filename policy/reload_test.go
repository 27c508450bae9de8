package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// TestJudgeReloads: an edit to the user's policy file takes effect at the
// next verdict once recheck has passed (here at once), without a
// restart; a broken edit keeps the last good policy and says why
// (Problem); fixing it clears that.
func TestJudgeReloads(t *testing.T) {
	recheckAtOnce(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "policy.toml")
	write := func(src string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		// A new mtime even on a coarse clock.
		later := time.Now().Add(time.Duration(len(src)) * time.Second)
		if err := os.Chtimes(file, later, later); err != nil {
			t.Fatal(err)
		}
	}
	j := &Judge{Options: Options{Home: tableEnv.Home, User: file}}
	req := &queue.Request{Kind: queue.KindExec, Command: "make deploy", Cwd: dir}
	write("[[rule]]\naction = \"deny\"\ncommand = \"make deploy\"\n")
	if v := j.Judge(req); v.Action != "deny" {
		t.Fatalf("with the deny rule: %s", v.Action)
	}
	write("[[rule]]\naction = \"allow\"\ncommand = \"make deploy\"\nreason = \"we deploy from here\"\n")
	if v := j.Judge(req); v.Action != "allow" {
		t.Fatalf("after the edit to allow: %s %v", v.Action, v.Reasons)
	}
	write("[[rule]]\naction = \"deny\"\ncommand = ")
	if v := j.Judge(req); v.Action != "allow" {
		t.Fatalf("after a broken edit: %s, want the last good policy (allow)", v.Action)
	}
	if p := j.Problem(); !strings.Contains(p, "the last good policy is in force") {
		t.Fatalf("Problem() = %q", p)
	}
	write("[[rule]]\naction = \"ask\"\ncommand = \"make deploy\"\n")
	if v := j.Judge(req); v.Action != "ask" || j.Problem() != "" {
		t.Fatalf("after fixing it: %s, problem %q", v.Action, j.Problem())
	}
}

// TestTypoBeforeFirstVerdict: the user's policy file breaks after the
// engine started but before any request was judged. The file as it loaded
// at start is the last good one: a request from a project never seen
// gets it (with a problem to show), not a question with "the policy does
// not load". Without a start that loaded, every request asks, and the
// problem says so.
func TestTypoBeforeFirstVerdict(t *testing.T) {
	recheckAtOnce(t)
	file := writeFile(t, "policy.toml", "[[rule]]\naction = \"allow\"\ncommand = \"make deploy\"\n")
	j := &Judge{Options: Options{Home: tableEnv.Home, User: file}}
	if err := j.Start(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("[[rule]]\naction = \"allow\"\ncommand = \"make deploy\"\nbogus = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	proj := t.TempDir()
	req := &queue.Request{Kind: queue.KindExec, Command: "make deploy", Cwd: proj}
	if v := j.Judge(req); v.Action != "allow" {
		t.Errorf("a typo before the first verdict: %s %v, want the policy that loaded at start (allow)", v.Action, v.Reasons)
	}
	if p := j.Problem(); !strings.Contains(p, "bogus") || !strings.Contains(p, "the last good policy is in force") {
		t.Errorf("Problem() = %q, want the typo and that the last good policy is in force", p)
	}
	// A project's own file still tightens the last good policy.
	tight := filepath.Dir(filepath.Dir(writeFile(t, ".sluice/policy.toml", "[[rule]]\naction = \"deny\"\ncommand = \"make deploy\"\n")))
	if v := j.Judge(&queue.Request{Kind: queue.KindExec, Command: "make deploy", Cwd: tight}); v.Action != "deny" {
		t.Errorf("a project's deny under the last good policy: %s", v.Action)
	}

	cold := &Judge{Options: Options{Home: tableEnv.Home, User: file}}
	if v := cold.Judge(req); v.Action != "ask" {
		t.Errorf("with no good policy ever: %s, want ask", v.Action)
	}
	if p := cold.Problem(); !strings.Contains(p, "every request asks") {
		t.Errorf("with no good policy ever, Problem() = %q", p)
	}
}

// recheckAtOnce makes a Judge look at its policy files again at every
// verdict, until the test ends.
func recheckAtOnce(t *testing.T) {
	saved := recheck
	recheck = 0
	t.Cleanup(func() { recheck = saved })
}
