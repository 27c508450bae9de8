package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/queue"
)

// TestTrustWindow: a trust lets its agent session's matching commands
// run without asking, and no other session's; a deny still wins; once
// it expires it asks again, and granting and expiry are in the audit log.
func TestTrustWindow(t *testing.T) {
	dir := t.TempDir()
	ts := &TrustStore{path: filepath.Join(dir, "trust.json")}
	log, err := audit.Open(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	// The project is below the home directory, never the home itself
	// (which no verdict grants as a jail root).
	proj := filepath.Join(dir, "proj")
	if err := os.Mkdir(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	// As the engine judges on a machine with sandbox = "off" and
	// checkpoints = false.
	judge := &Judge{Options: Options{Home: dir}, Trusts: ts,
		Machine: testMachine{mode: SandboxOff, noCheckpoint: "checkpoints = false in config.toml"}}
	req := func(session, cmd string) *queue.Request {
		return &queue.Request{ID: queue.NewID(), Kind: queue.KindExec, Command: cmd, Cwd: proj, Agent: "claude-code", Session: session}
	}
	if v := judge.Judge(req("s-1", "make lint")); v.Action != queue.ActionAsk {
		t.Fatalf("before any trust: %s", v.Action)
	}
	now := time.Now()
	if err := ts.Grant(log, TrustEntry{ID: "T1TRUST", Session: "s-1", Agent: "claude-code", Pattern: "make lint *",
		Until: now.Add(300 * time.Millisecond), By: "alice", Created: now}, proj); err != nil {
		t.Fatal(err)
	}
	if v := judge.Judge(req("s-1", "make lint --fix")); v.Action != queue.ActionAllow {
		t.Errorf("trusted session: %s (%v)", v.Action, v.Reasons)
	}
	if v := judge.Judge(req("s-2", "make lint")); v.Action != queue.ActionAsk {
		t.Errorf("another session: %s", v.Action)
	}
	if v := judge.Judge(req("s-1", "make lint && sudo rm -rf /")); v.Action == queue.ActionAllow {
		t.Errorf("a trust let a sudo through: %s", v.Action)
	}
	// A trust never covers what reaches past the project.
	if err := ts.Grant(log, TrustEntry{ID: "T2TRUST", Session: "s-1", Agent: "claude-code", Pattern: "npm run build *",
		Until: now.Add(time.Hour), By: "alice", Created: now}, proj); err != nil {
		t.Fatal(err)
	}
	if v := judge.Judge(req("s-1", "npm run build --script-shell=/tmp/evil")); v.Action != queue.ActionDeny {
		t.Errorf("a trust loosened --script-shell: %s", v.Action)
	}
	time.Sleep(400 * time.Millisecond)
	if v := judge.Judge(req("s-1", "make lint")); v.Action != queue.ActionAsk {
		t.Errorf("after the window: %s", v.Action)
	}
	ended, err := ts.Expire(log, time.Now())
	if err != nil || len(ended) != 1 || ended[0].ID != "T1TRUST" {
		t.Fatalf("expired: %v, %v", ended, err)
	}
	lines, _, err := audit.Last(mustOpen(t, log.Path()), fileSize(t, log.Path()), 10, audit.Filter{ID: "T1TRUST"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range lines {
		got = append(got, string(l.Event.Event)+" "+l.Event.Reason)
	}
	if len(got) != 2 || !strings.HasPrefix(got[0], "trusted ") || !strings.HasPrefix(got[1], "trust_ended expired") {
		t.Errorf("audit: %q", got)
	}
}

func mustOpen(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// A trust the console grants applies to the next request its own engine
// judges, without waiting for the file to be looked at again: both go
// through the process's one store for the file.
func TestTrustGrantAppliesAtOnceInProcess(t *testing.T) {
	p := filepath.Join(t.TempDir(), "trust.json")
	judge := TrustStoreFor(p)   // as the engine gets it
	console := TrustStoreFor(p) // as the console gets it
	req := &queue.Request{Kind: queue.KindExec, Session: "s1", Agent: "claude-code", Command: "go test ./..."}
	if pats, _ := judge.trustRules(req, time.Now()); len(pats) != 0 {
		t.Fatal("trusted before the grant")
	}
	now := time.Now()
	e := TrustEntry{ID: "T" + queue.NewID()[1:], Session: "s1", Agent: "claude-code", Pattern: "go test *",
		Until: now.Add(time.Hour), By: "me", Created: now}
	if err := console.update(func(es []TrustEntry) ([]TrustEntry, error) { return append(es, e), nil }); err != nil {
		t.Fatal(err)
	}
	if pats, _ := judge.trustRules(req, time.Now()); len(pats) != 1 {
		t.Fatalf("the engine does not apply the grant its console just made (got %v)", pats)
	}
}
