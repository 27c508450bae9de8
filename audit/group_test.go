package audit

import (
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-dev/sluice/queue"
)

// TestGroupCommit: appends that arrive while another is being written
// share the next write and fsync; each append's lines stay consecutive,
// an append that cannot be encoded fails alone, and the chain verifies.
func TestGroupCommit(t *testing.T) {
	l := openTestLog(t)
	path := l.Path()

	// The first write waits until the others have queued behind it.
	const followers = 8
	release := make(chan struct{})
	var writes []int // bytes per write
	var wmu sync.Mutex
	testHookWrite = func(f *os.File, p []byte) error {
		wmu.Lock()
		first := len(writes) == 0
		writes = append(writes, len(p))
		wmu.Unlock()
		if first {
			<-release
		}
		_, err := f.Write(p)
		return err
	}
	defer func() { testHookWrite = nil }()

	var wg sync.WaitGroup
	errs := make([]error, followers+1)
	wg.Go(func() { _, errs[0] = l.Append(testEvent(0)) })
	for !l.busyWith(0) { // until the first append holds the log
		runtime.Gosched()
	}
	long := testEvent(1)
	long.Reason = strings.Repeat("x", int(maxLine))
	for i := 1; i <= followers; i++ {
		wg.Go(func() {
			if i == 3 {
				_, errs[i] = l.Append(long)
				return
			}
			ev1, ev2 := testEvent(4*i), testEvent(4*i+1)
			errs[i] = l.RecordAll([]queue.Event{ev1, ev2})
		})
	}
	for !l.busyWith(followers) {
		runtime.Gosched()
	}
	close(release)
	wg.Wait()

	for i, err := range errs {
		if (err != nil) != (i == 3) {
			t.Errorf("append %d: %v", i, err)
		}
	}
	if len(writes) != 2 {
		t.Errorf("%d writes for %d appends, want 2 (the first, then the rest as one group)", len(writes), followers+1)
	}
	rep, err := VerifyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(1 + 2*(followers-1)); rep.Lines != want {
		t.Errorf("%d lines, want %d", rep.Lines, want)
	}
	// Each RecordAll's two events are adjacent.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var evs []queue.Event
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var ev queue.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	for i := 1; i+1 < len(evs); i += 2 {
		if evs[i].ID != evs[i+1].ID || evs[i].Event != queue.EventQueued {
			t.Errorf("lines %d and %d are not one RecordAll: %s %s, %s %s", i+1, i+2, evs[i].Event, evs[i].ID, evs[i+1].Event, evs[i+1].ID)
		}
	}
}

// busyWith reports whether an append is being committed with n more
// waiting behind it.
func (l *Log) busyWith(n int) bool {
	l.qmu.Lock()
	defer l.qmu.Unlock()
	return l.committing && len(l.queue) == n
}
