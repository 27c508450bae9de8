package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

func TestLast(t *testing.T) {
	t.Parallel()
	lines := testLines(t, 40)
	data := join(lines)
	r := bytes.NewReader(data)
	size := int64(len(data))
	seqs := func(ls []Line) string {
		var b strings.Builder
		for _, l := range ls {
			if l.Event == nil {
				b.WriteString("? ")
				continue
			}
			fmt.Fprintf(&b, "%d ", l.Event.Seq)
		}
		return strings.TrimSpace(b.String())
	}
	t0 := time.Date(2026, 11, 21, 15, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name string
		n    int
		f    Filter
		want string
	}{
		{"last 3", 3, Filter{}, "38 39 40"},
		{"more than there are", 100, Filter{Events: []queue.EventName{queue.EventQueued}, ID: "01JD3T6Q6Z8W9X0Y1Z2A00000"}, "1 5 9 13 17 21 25 29 33 37"},
		{"by id prefix", 10, Filter{ID: "01JD3T6Q6Z8W9X0Y1Z2A000002"}, "9 10 11 12"},
		{"by event", 2, Filter{Events: []queue.EventName{queue.EventStarted, queue.EventFinished}}, "39 40"},
		{"by agent", 1, Filter{Agent: "claude-code"}, "40"},
		{"by unknown agent", 1, Filter{Agent: "aider"}, ""},
		{"since", 100, Filter{Since: t0.Add(36 * time.Millisecond)}, "37 38 39 40"},
		{"none", 0, Filter{}, ""},
	} {
		got, end, err := Last(r, size, tc.n, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		if seqs(got) != tc.want || end != size {
			t.Errorf("%s: got %q end %d, want %q end %d", tc.name, seqs(got), end, tc.want, size)
		}
	}

	// A last line without its newline is being written (or torn): left
	// out, and the follower starts at it. A line that is not an event is
	// shown to the zero filter only.
	junk := []byte("not an event\n")
	data2 := append(append(bytes.Clone(data), junk...), lines[0][:20]...)
	got, end, err := Last(bytes.NewReader(data2), int64(len(data2)), 3, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if seqs(got) != "39 40 ?" || end != size+int64(len(junk)) || got[2].Err == nil || string(got[2].Raw) != "not an event" {
		t.Errorf("got %q end %d (%v)", seqs(got), end, got)
	}
	got, _, _ = Last(bytes.NewReader(data2), int64(len(data2)), 3, Filter{Agent: "claude-code"})
	if seqs(got) != "38 39 40" {
		t.Errorf("filtered: got %q", seqs(got))
	}
}

// TestFollower sees lines another Log appends, a line only once it is
// whole, and starts over on a file replaced under it.
func TestFollower(t *testing.T) {
	t.Parallel()
	l := openTestLog(t)
	mustAppend(t, l, testEvent(0))
	size := int64(len(readFile(t, l.Path())))

	var mu sync.Mutex
	var got []string
	var notices []string
	seen := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	fw := &Follower{Path: l.Path(), Offset: size, Every: time.Millisecond, Notice: func(s string) {
		mu.Lock()
		notices = append(notices, s)
		mu.Unlock()
	}}
	go func() {
		done <- fw.Run(ctx, func(line Line) error {
			mu.Lock()
			defer mu.Unlock()
			if line.Event == nil {
				got = append(got, "?"+string(line.Raw))
			} else {
				got = append(got, fmt.Sprint(line.Event.Seq))
			}
			return nil
		})
	}()
	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(hangGuard)
		for strings.Join(seen(), " ") != want {
			if time.Now().After(deadline) {
				t.Fatalf("follower saw %q, want %q", seen(), want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	mustAppend(t, l, testEvent(1), testEvent(2))
	waitFor("2 3")
	appendRaw(t, l.Path(), `{"seq":4,"ts"`) // half a line: not yet
	mustAppend(t, l, testEvent(3))          // the repair completes it
	waitFor(`2 3 ?{"seq":4,"ts" 4 5`)

	// Replaced (rotated): the new file is read from its start.
	os.Rename(l.Path(), l.Path()+".1")
	mustAppend(t, l, testEvent(4))
	waitFor(`2 3 ?{"seq":4,"ts" 4 5 1`)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// After the rename the follower may look before the new file exists,
	// and then says it waits for it: both notices are right, in that order.
	replaced := false
	for _, n := range notices {
		switch {
		case strings.Contains(n, "was replaced") && !replaced:
			replaced = true
		case strings.Contains(n, "to be created") && replaced:
		default:
			t.Errorf("unexpected notice %q (all: %q)", n, notices)
		}
	}
	if !replaced {
		t.Errorf("no notice of the replacement: %q", notices)
	}
}

func TestFollowerStopsOnError(t *testing.T) {
	t.Parallel()
	l := openTestLog(t)
	mustAppend(t, l, testEvent(0))
	stop := errors.New("stop")
	fw := &Follower{Path: l.Path(), Every: time.Millisecond}
	err := fw.Run(context.Background(), func(Line) error { return stop })
	if !errors.Is(err, stop) {
		t.Fatalf("Run = %v, want fn's error", err)
	}
}
