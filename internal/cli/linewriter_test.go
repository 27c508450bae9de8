package cli

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for the writer's goroutine and the
// test's, counting the writes it got.
type lockedBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writes++
	return b.b.Write(p)
}

// Every line logged from several goroutines comes out whole, each
// goroutine's in its order, once Close returns.
func TestLineWriterKeepsEveryLine(t *testing.T) {
	var out lockedBuffer
	l := NewLineWriter(&out)
	const goroutines, lines = 4, 5000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range lines {
				fmt.Fprintf(l, "g%d line %d\n", g, i)
			}
		})
	}
	wg.Wait()
	l.Close()
	fmt.Fprintf(l, "after close\n") // straight through

	next := make([]int, goroutines)
	got := strings.Split(strings.TrimSuffix(out.b.String(), "\n"), "\n")
	if len(got) != goroutines*lines+1 {
		t.Fatalf("%d lines written, want %d", len(got), goroutines*lines+1)
	}
	for _, line := range got[:len(got)-1] {
		var g, i int
		if _, err := fmt.Sscanf(line, "g%d line %d", &g, &i); err != nil {
			t.Fatalf("line %q is not one that was logged", line)
		}
		if i != next[g] {
			t.Fatalf("goroutine %d: line %d came where %d was due", g, i, next[g])
		}
		next[g]++
	}
	if got[len(got)-1] != "after close" {
		t.Fatalf("last line %q, want the one written after Close", got[len(got)-1])
	}
	if out.writes >= goroutines*lines {
		t.Errorf("%d writes for %d lines: lines that arrived during a write were not joined", out.writes, goroutines*lines)
	}
}

// blockingWriter holds every write until release is closed.
type blockingWriter struct {
	lockedBuffer
	release chan struct{}
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	<-b.release
	return b.lockedBuffer.Write(p)
}

// A log nobody drains (a terminal paused with Ctrl-S) holds at most
// maxPending bytes: then writers wait, as they would on the terminal, and
// nothing is dropped.
func TestLineWriterWaitsWhenFull(t *testing.T) {
	out := &blockingWriter{release: make(chan struct{})}
	l := NewLineWriter(out)
	line := strings.Repeat("x", 1023) + "\n"
	wrote := make(chan int)
	go func() {
		n := 0
		for range 3 * maxPending / len(line) {
			l.Write([]byte(line))
			n++
		}
		wrote <- n
	}()
	// The writer goroutine is stuck in the first write; the rest can
	// fill at most maxPending plus one line before Write waits.
	for {
		l.mu.Lock()
		full := len(l.buf) >= maxPending
		l.mu.Unlock()
		if full {
			break
		}
		select {
		case n := <-wrote:
			t.Fatalf("all %d lines were taken while nothing was written", n)
		default:
		}
	}
	l.mu.Lock()
	held := len(l.buf)
	l.mu.Unlock()
	if held > maxPending+len(line) {
		t.Fatalf("%d bytes held, more than maxPending (%d) and a line", held, maxPending)
	}
	close(out.release)
	n := <-wrote
	l.Close()
	if want := n * len(line); out.b.Len() != want {
		t.Fatalf("%d bytes written, want %d", out.b.Len(), want)
	}
}

// Closing while a writer waits for room (the log stalled, then drained):
// the writer's line still comes out, after everything before it, and
// nothing panics.
func TestLineWriterCloseWhileWriterWaits(t *testing.T) {
	out := &blockingWriter{release: make(chan struct{})}
	l := NewLineWriter(out)
	line := []byte(strings.Repeat("x", 1023) + "\n")
	const lines = 3 * maxPending / 1024
	panicked := make(chan any, 1)
	go func() {
		defer func() { panicked <- recover() }()
		for range lines {
			l.Write(line)
		}
	}()
	for { // until the writer waits for room
		l.mu.Lock()
		full := len(l.buf) >= maxPending
		l.mu.Unlock()
		if full {
			break
		}
		time.Sleep(time.Millisecond)
	}
	closed := make(chan struct{})
	go func() { l.Close(); close(closed) }()
	time.Sleep(10 * time.Millisecond)
	close(out.release)
	if p := <-panicked; p != nil {
		t.Fatalf("Write panicked during Close: %v", p)
	}
	<-closed
	if got := out.b.Len(); got != lines*len(line) {
		t.Fatalf("%d bytes written, want %d", got, lines*len(line))
	}
}
