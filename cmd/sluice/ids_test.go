package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/audit"
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
		if got := matchIDs(tc.arg, ids); !slices.Equal(got, tc.want) {
			t.Errorf("matchIDs(%q) = %q, want %q", tc.arg, got, tc.want)
		}
	}
	// An id equal to the argument is the one meant, even when the
	// argument also starts a longer id.
	if got := matchIDs("fix-tests-2", []string{"fix-tests-20", "fix-tests-2"}); !slices.Equal(got, []string{"fix-tests-2"}) {
		t.Errorf("exact id among longer ones: %q", got)
	}
	if got := matchIDs("01JD3T6Q", []string{ids[0], ids[0]}); len(got) != 1 {
		t.Errorf("an id listed twice matched %d times", len(got))
	}
}

// TestTrustRevokeForms: 'sluice trust revoke' takes a trust's id in the
// same forms, and a form two trusts share revokes neither.
func TestTrustRevokeForms(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ts := &trustStore{path: filepath.Join(dir, "trust.json")}
	log, err := audit.Open(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	proj := filepath.Join(dir, "proj")
	now := time.Now()
	ids := []string{"01JD3T6Q6Z8W9X0Y1Z2A3B4C5D", "01JD3T6QZ0A1B2C3D4E5F6G7H8", "01JD3V00000000000Z2A3B4C5D"}
	for _, id := range ids {
		if err := ts.grant(log, trustEntry{ID: id, Session: "s-1", Pattern: "make lint *", Until: now.Add(time.Hour), By: "alice", Created: now}, proj); err != nil {
			t.Fatal(err)
		}
	}
	if ended, err := ts.end(log, now, "2A3B4C5D", "alice"); err == nil || len(ended) != 0 || !strings.Contains(err.Error(), `"2A3B4C5D" matches 2 trusts`) {
		t.Fatalf("a form two trusts share: %v, %v", ended, err)
	}
	for _, tc := range []struct{ arg, want string }{{"E5F6G7H8", ids[1]}, {"01JD3V", ids[2]}, {ids[0], ids[0]}} {
		ended, err := ts.end(log, now, tc.arg, "alice")
		if err != nil || len(ended) != 1 || ended[0].ID != tc.want {
			t.Fatalf("revoke %s: %v, %v; want %s", tc.arg, ended, err, tc.want)
		}
	}
	if ended, err := ts.end(log, now, "01JD", "alice"); err != nil || len(ended) != 0 {
		t.Fatalf("revoking what is gone: %v, %v", ended, err)
	}
}
