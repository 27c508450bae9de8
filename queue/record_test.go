package queue

import (
	"errors"
	"os"
	"sync"
	"testing"
	"time"
)

// orderRecorder records events and notes, for each, whether the result
// it announces was already visible to the agent when it was recorded.
type orderRecorder struct {
	sp   *Spool
	fail bool

	mu     sync.Mutex
	events []Event
	late   []string // ids whose result existed before their event
}

func (r *orderRecorder) Record(ev Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail {
		return errors.New("disk full")
	}
	if _, err := os.Stat(r.sp.ResultPath(ev.ID)); err == nil {
		r.late = append(r.late, ev.ID)
	}
	r.events = append(r.events, ev)
	return nil
}

func (r *orderRecorder) names(id string) []EventName {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []EventName
	for _, ev := range r.events {
		if ev.ID == id {
			out = append(out, ev.Event)
		}
	}
	return out
}

// The results the spool writes on its own are recorded before the agent
// can see them, and not written at all while the audit log fails.
func TestSpoolRecordsBeforeItAnswers(t *testing.T) {
	t.Parallel()
	sp := newSpool(t)
	rec := &orderRecorder{sp: sp}
	sp.Recorder = rec

	old := execReq("npm publish")
	old.CreatedAt = time.Now().Add(-time.Hour)
	old.ExpiresAt = time.Now().Add(-time.Minute)
	mustDo(t, sp.Submit(old))
	mustDo(t, os.WriteFile(sp.path(dirNew, "BAD1.json"), []byte("rm -rf ~\n"), 0o600))
	dead := submit(t, sp, "go test ./...")
	c := claim(t, sp, dead.ID)
	c.Close() // its actor died

	seen := map[WatchOp]bool{}
	watchUntil(t, sp, func(ev WatchEvent) bool {
		seen[ev.Op] = true
		return seen[Expired] && seen[Invalid] && seen[Interrupted]
	})
	for id, want := range map[string]EventName{old.ID: EventExpired, "BAD1": EventInvalid, dead.ID: EventInterrupted} {
		if got := rec.names(id); len(got) != 1 || got[0] != want {
			t.Errorf("%s: recorded %v, want [%s]", id, got, want)
		}
	}
	rec.mu.Lock()
	for _, ev := range rec.events {
		if ev.ID == dead.ID && ev.Command != dead.Command {
			t.Errorf("interrupted event names command %q, want %q", ev.Command, dead.Command)
		}
	}
	rec.mu.Unlock()
	if len(rec.late) > 0 {
		t.Errorf("results visible before their audit lines: %v", rec.late)
	}

	// With the log failing, an expired request and an orphaned claim stay
	// unanswered (to be answered once the log works), never answered
	// unrecorded.
	rec.mu.Lock()
	rec.fail = true
	rec.mu.Unlock()
	old2 := execReq("npm publish --force")
	old2.CreatedAt = time.Now().Add(-time.Hour)
	old2.ExpiresAt = time.Now().Add(-time.Minute)
	mustDo(t, sp.Submit(old2))
	if _, err := sp.Claim(old2.ID, time.Now()); err == nil || errors.Is(err, ErrExpired) {
		t.Fatalf("Claim of an expired request with a failing log = %v, want the audit error", err)
	}
	dead2 := submit(t, sp, "make deploy")
	c2 := claim(t, sp, dead2.ID)
	c2.Close()
	if ids, _ := sp.Recover(); len(ids) != 0 {
		t.Fatalf("Recover answered %v with a failing log", ids)
	}
	for _, id := range []string{old2.ID, dead2.ID} {
		if _, err := sp.ReadResult(id); !errors.Is(err, ErrNoResult) {
			t.Errorf("%s answered without an audit line: %v", id, err)
		}
	}
	rec.mu.Lock()
	rec.fail = false
	rec.mu.Unlock()
	if ids, _ := sp.Recover(); len(ids) != 1 || ids[0] != dead2.ID {
		t.Fatalf("Recover once the log works = %v, want [%s]", ids, dead2.ID)
	}
	if _, err := sp.Claim(old2.ID, time.Now()); !errors.Is(err, ErrExpired) {
		t.Fatalf("Claim once the log works = %v, want ErrExpired", err)
	}
}
