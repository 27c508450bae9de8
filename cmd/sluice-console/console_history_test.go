package main

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/queue"
)

// TestFollowHistory: the console is handed the log's past requests (not
// their queued lines) at start, then each line another process appends.
func TestFollowHistory(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	log, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	record := func(name queue.EventName, id, actor string) {
		t.Helper()
		ev := queue.NewEvent(name, &queue.Request{ID: id, Kind: queue.KindExec, Command: "make " + id, Cwd: "/srv/app"})
		ev.Actor = actor
		if err := log.Record(ev); err != nil {
			t.Fatal(err)
		}
	}
	// Ten past requests: queued, then denied by a person.
	for range 10 {
		id := queue.NewID()
		record(queue.EventQueued, id, "policy")
		record(queue.EventDenied, id, "bob")
	}

	var mu sync.Mutex
	var got []queue.Event
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		followHistory(ctx, path, 4, func(evs []queue.Event) {
			mu.Lock()
			got = append(got, evs...)
			mu.Unlock()
		})
	}()
	wait := func(n int) []queue.Event {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			mu.Lock()
			if len(got) >= n {
				out := append([]queue.Event(nil), got...)
				mu.Unlock()
				return out
			}
			mu.Unlock()
		}
		t.Fatalf("followHistory handed over %d events, want %d", len(got), n)
		return nil
	}
	// history = 4 asks for about four requests: three lines each, at
	// most, after queued; here each has one.
	past := wait(10)
	for _, ev := range past {
		if ev.Event == queue.EventQueued {
			t.Fatalf("a queued line was handed over: %+v", ev)
		}
	}
	// 'sluice approve' in another terminal appends to the same log.
	id := queue.NewID()
	record(queue.EventQueued, id, "policy")
	record(queue.EventApproved, id, "carol")
	all := wait(len(past) + 1)
	if last := all[len(all)-1]; last.ID != id || last.Event != queue.EventApproved || last.Actor != "carol" {
		t.Errorf("the appended line arrived as %+v", last)
	}
	cancel()
	<-done
}

// TestHistoryOwnSpool: two spools share one audit log; a console's
// History gets its own spool's lines and those that name none (older
// lines, undos), not the other spool's.
func TestHistoryOwnSpool(t *testing.T) {
	var got []string
	keep := ownSpool("/run/user/1000/sluice", func(evs []queue.Event) {
		for _, ev := range evs {
			got = append(got, ev.Command)
		}
	})
	keep([]queue.Event{
		{ID: queue.NewID(), Event: queue.EventApproved, Command: "make mine", Spool: "/run/user/1000/sluice"},
		{ID: queue.NewID(), Event: queue.EventApproved, Command: "make theirs", Spool: "/tmp/other/spool"},
		{ID: queue.NewID(), Event: queue.EventApproved, Command: "make older"},
	})
	if len(got) != 2 || got[0] != "make mine" || got[1] != "make older" {
		t.Errorf("History got %q, want the own spool's and the unnamed", got)
	}
}

// TestHistoryOwnSpoolThroughALink: the same spool named through a
// symlinked parent (another engine opened it by that path) is the
// console's own: its lines show.
func TestHistoryOwnSpoolThroughALink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.MkdirAll(filepath.Join(real, "spool"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	var got []string
	keep := ownSpool(filepath.Join(real, "spool"), func(evs []queue.Event) {
		for _, ev := range evs {
			got = append(got, ev.Command)
		}
	})
	keep([]queue.Event{
		{ID: queue.NewID(), Event: queue.EventApproved, Command: "make via-link", Spool: filepath.Join(dir, "link", "spool")},
		{ID: queue.NewID(), Event: queue.EventApproved, Command: "make other", Spool: filepath.Join(dir, "other")},
	})
	if len(got) != 1 || got[0] != "make via-link" {
		t.Errorf("History got %q, want the line of the spool named through the link", got)
	}
}
