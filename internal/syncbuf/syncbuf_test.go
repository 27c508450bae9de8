package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// Writers and a reader at once (go test -race): every write is kept
// whole, and a read never sees a write in part.
func TestConcurrentWritesAndReads(t *testing.T) {
	t.Parallel()
	var b Buffer
	const writers, lines = 4, 200
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range lines {
				if _, err := b.Write([]byte("line\n")); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100 {
			if s := b.String(); strings.Count(s, "line\n")*len("line\n") != len(s) {
				t.Errorf("a read saw a write in part: %q", s)
				return
			}
		}
	}()
	wg.Wait()
	<-done
	if got := strings.Count(b.String(), "line\n"); got != writers*lines {
		t.Fatalf("%d lines kept, want %d", got, writers*lines)
	}
}
