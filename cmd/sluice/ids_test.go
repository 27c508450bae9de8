package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/internal/app"
	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/policy"
	"github.com/sluice-dev/sluice/queue"
)

// TestMatchIDs: the forms of an id a command takes: the whole id, a
// prefix of 4 or more characters, the last 8 or more (what the console
// shows); nothing shorter, and each id once.
func TestMatchIDs(t *testing.T) {
	t.Parallel()
	ids := []string{"01JD3T6Q6Z8W9X0Y1Z2A3B4C5D", "01JD3T6QZ0A1B2C3D4E5F6G7H8", "01JD3T7000000000002A3B4C5D", "fix-tests-2"}
	for _, tc := range []struct {
		arg  string
		want []string
	}{
		{"01JD3T6Q6Z8W9X0Y1Z2A3B4C5D", ids[:1]},
		{"01JD", ids[:3]},
		{"01JD3T6Q", ids[:2]},    // a prefix of two (and a suffix of none)
		{"01JD3T6QZ", ids[1:2]},  // unique
		{"F6G7H8", nil},          // 6 characters from the end: not a form
		{"D4E5F6G7H8", ids[1:2]}, // the last 10
		{"E5F6G7H8", ids[1:2]},   // the last 8, as the console shows it
		{"2A3B4C5D", []string{ids[0], ids[2]}},
		{"Y1Z2A3B4C5D", ids[:1]},
		{"01J", nil},
		{"fix-tests-2", ids[3:]},
		{"fix-", ids[3:]},
		{"", nil},
	} {
		if got := cli.MatchIDs(tc.arg, ids); !slices.Equal(got, tc.want) {
			t.Errorf("matchIDs(%q) = %q, want %q", tc.arg, got, tc.want)
		}
	}
	// An id equal to the argument is the one meant, even when the
	// argument also starts a longer id.
	if got := cli.MatchIDs("fix-tests-2", []string{"fix-tests-20", "fix-tests-2"}); !slices.Equal(got, []string{"fix-tests-2"}) {
		t.Errorf("exact id among longer ones: %q", got)
	}
	if got := cli.MatchIDs("01JD3T6Q", []string{ids[0], ids[0]}); len(got) != 1 {
		t.Errorf("an id listed twice matched %d times", len(got))
	}
}

// TestResolveRunID: undo finds a run in the audit log by any of the forms;
// a form several runs share is refused with their ids, one that names
// none says where it looked.
func TestResolveRunID(t *testing.T) {
	t.Parallel()
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	log, err := audit.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	runs := []string{"01JD3T6Q6Z8W9X0Y1Z2A3B4C5D", "01JD3T6QZ0A1B2C3D4E5F6G7H8", "01JD3V0000000000002A3B4C5D"}
	for i, id := range runs {
		req := &queue.Request{ID: id, Kind: queue.KindExec, Command: "make", Cwd: "/p", CreatedAt: time.Now()}
		for _, name := range []queue.EventName{queue.EventQueued, queue.EventApproved, []queue.EventName{queue.EventFinished, queue.EventKilled, queue.EventUndone}[i]} {
			if err := log.Record(queue.NewEvent(name, req)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A request that never ran is no run to undo.
	if err := log.Record(queue.NewEvent(queue.EventDenied, &queue.Request{ID: "01JD3V0000000000009Z9Z9Z9Z", Kind: queue.KindExec})); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ arg, want, err string }{
		{"01JD3T6QZ0A1B2C3D4E5F6G7H8", runs[1], ""},
		{"01JD3T6QZ", runs[1], ""},
		{"E5F6G7H8", runs[1], ""},
		{"01JD3V", runs[2], ""},
		{"Y1Z2A3B4C5D", runs[0], ""},
		{"01JD", "", `"01JD" matches 3 runs (01JD3V0000000000002A3B4C5D, 01JD3T6QZ0A1B2C3D4E5F6G7H8, 01JD3T6Q6Z8W9X0Y1Z2A3B4C5D); give more of the id`},
		{"2A3B4C5D", "", `"2A3B4C5D" matches 2 runs`},
		{"9Z9Z9Z9Z", "", "no run 9Z9Z9Z9Z in " + logPath + " that changed files"},
		{"01J", "", `id "01J" is too short; give at least 4 characters`},
	} {
		got, err := cli.ResolveRunID(logPath, tc.arg)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("resolveRunID(%q) = %q, %v; want %q", tc.arg, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("resolveRunID(%q) = %q, %v; want the error %q", tc.arg, got, err, tc.err)
		}
	}
	// findRun, undo's own look-up, takes the short forms too.
	if _, err := app.FindRun(logPath, "E5F6G7H8"); err == nil || !strings.Contains(err.Error(), "cannot undo 01JD3T6QZ0A1B2C3D4E5F6G7H8: it was not checkpointed") {
		t.Errorf("findRun by the console's short form: %v", err)
	}
}

// TestTrustRevokeForms: 'sluice trust revoke' takes a trust's id in the
// same forms, and a form two trusts share revokes neither.
func TestTrustRevokeForms(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ts := policy.TrustStoreFor(filepath.Join(dir, "trust.json"))
	log, err := audit.Open(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	proj := filepath.Join(dir, "proj")
	now := time.Now()
	ids := []string{"01JD3T6Q6Z8W9X0Y1Z2A3B4C5D", "01JD3T6QZ0A1B2C3D4E5F6G7H8", "01JD3V00000000000Z2A3B4C5D"}
	for _, id := range ids {
		if err := ts.Grant(log, policy.TrustEntry{ID: id, Session: "s-1", Pattern: "make lint *", Until: now.Add(time.Hour), By: "alice", Created: now}, proj); err != nil {
			t.Fatal(err)
		}
	}
	if ended, err := revokeTrust(ts, log, "2A3B4C5D", "alice"); err == nil || len(ended) != 0 || !strings.Contains(err.Error(), `"2A3B4C5D" matches 2 trusts`) {
		t.Fatalf("a form two trusts share: %v, %v", ended, err)
	}
	for _, tc := range []struct{ arg, want string }{{"E5F6G7H8", ids[1]}, {"01JD3V", ids[2]}, {ids[0], ids[0]}} {
		ended, err := revokeTrust(ts, log, tc.arg, "alice")
		if err != nil || len(ended) != 1 || ended[0].ID != tc.want {
			t.Fatalf("revoke %s: %v, %v; want %s", tc.arg, ended, err, tc.want)
		}
	}
	if ended, err := revokeTrust(ts, log, "01JD", "alice"); err != nil || len(ended) != 0 {
		t.Fatalf("revoking what is gone: %v, %v", ended, err)
	}
}
