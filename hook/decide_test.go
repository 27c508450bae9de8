package hook

import (
	"context"
	"go/build"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/queue"
)

// forger answers every pending request on sp allow, as an engine would,
// recording the decision in log only when log is not nil.
func forger(t *testing.T, sp *queue.Spool, log *audit.Log) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	events := sp.Watch(ctx, queue.WatchOptions{})
	go func() {
		for ev := range events {
			if ev.Op != queue.Pending {
				continue
			}
			c, err := sp.Claim(ev.ID, time.Now())
			if err != nil {
				continue
			}
			if log != nil {
				e := queue.NewEvent(queue.EventAutoAllowed, c.Request)
				e.Actor = "policy"
				if err := log.Record(e); err != nil {
					t.Error(err)
				}
			}
			_ = c.Finish(queue.Result{Status: queue.StatusDecided, Decision: queue.Allow, DecidedBy: queue.ByPolicy,
				Verdict: &queue.Verdict{Action: "allow", Category: "read_only", Risk: "low"}})
		}
	}()
}

// TestDecideBelievesOnlyTheAuditLog: a result file saying allow is not
// enough for the agent to run the tool; the audit log the engine
// publishes must hold the decision. A process that can write the spool
// but not the engine's log (a confined command sees neither, but an
// unconfined one, or a forged result dropped in out/) gets deny.
func TestDecideBelievesOnlyTheAuditLog(t *testing.T) {
	for _, recorded := range []bool{false, true} {
		dir := t.TempDir()
		sp, err := queue.Open(filepath.Join(dir, "spool"))
		if err != nil {
			t.Fatal(err)
		}
		logPath := filepath.Join(dir, "audit.jsonl")
		log, err := audit.Open(logPath)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { log.Close() })
		release, err := sp.Present(logPath)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(release)
		if recorded {
			forger(t, sp, log)
		} else {
			forger(t, sp, nil)
		}
		in := hookJSON(t, "PreToolUse", dir, "Bash", map[string]any{"command": "git status"})
		got := Decide(context.Background(), Claude, strings.NewReader(string(in)), sp, Options{Wait: 5 * time.Second, Fallback: Ask,
			Verify: audit.Verifier{Spool: sp}})
		switch {
		case recorded && got.Decision != Allow:
			t.Errorf("recorded allow: got %+v, want allow", got)
		case !recorded && (got.Decision != Deny || !strings.HasPrefix(got.Reason, "sluice: the result of request ") ||
			!strings.Contains(got.Reason, " could not be verified: the audit log "+logPath+" holds no decision for request ") ||
			!strings.HasSuffix(got.Reason, "; not believed")):
			t.Errorf("unrecorded allow: got %+v, want deny: the result could not be verified", got)
		}
	}
}

// TestImportsNoAudit: package hook starts in every agent's tool call; the
// audit log is read through the Verifier its caller passes in, not by
// hook importing package audit (nor anything that does).
func TestImportsNoAudit(t *testing.T) {
	const module = "github.com/sluice-dev/sluice/"
	seen := map[string]bool{}
	var walk func(pkg, dir string, from []string)
	walk = func(pkg, dir string, from []string) {
		if seen[pkg] {
			return
		}
		seen[pkg] = true
		if pkg == module+"audit" {
			t.Errorf("hook imports audit: %s", strings.Join(append(from, pkg), " -> "))
			return
		}
		p, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, imp := range p.Imports {
			if rest, ok := strings.CutPrefix(imp, module); ok {
				walk(imp, filepath.Join("..", filepath.FromSlash(rest)), append(from, pkg))
			}
		}
	}
	walk(module+"hook", ".", nil)
}
