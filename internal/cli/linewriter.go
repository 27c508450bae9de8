package cli

import (
	"io"
	"sync"
)

// lineWriter writes to w from a goroutine of its own, joining what
// arrives while a write is under way into the next one: serve logs a line
// per request, and a flood of 10,000 then costs a few writes (each waking
// whoever reads the log) rather than 10,000 on the engine's path. Writers
// wait only when maxPending bytes are still unwritten. Close writes the
// rest and waits for it.
type lineWriter struct {
	w io.Writer

	mu      sync.Mutex
	drained sync.Cond // signalled when buf was taken for writing
	buf     []byte
	closed  bool
	wake    chan struct{} // capacity 1; closed by Close
	done    chan struct{}
}

// maxPending is how much a lineWriter holds before its writers wait.
const maxPending = 1 << 20

func NewLineWriter(w io.Writer) *lineWriter {
	l := &lineWriter{w: w, wake: make(chan struct{}, 1), done: make(chan struct{})}
	l.drained.L = &l.mu
	go l.loop()
	return l
}

// Write queues p. It never fails: a write error of w is not the logger's
// to report (there is nowhere else to say it).
func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	for len(l.buf) >= maxPending && !l.closed {
		l.drained.Wait()
	}
	if l.closed {
		// After Close (or during it): once what was pending is out,
		// straight through, in order.
		l.mu.Unlock()
		<-l.done
		return l.w.Write(p)
	}
	l.buf = append(l.buf, p...)
	select {
	case l.wake <- struct{}{}:
	default: // a write is due already
	}
	l.mu.Unlock()
	return len(p), nil
}

func (l *lineWriter) loop() {
	defer close(l.done)
	var out []byte
	for range l.wake {
		out = l.take(out)
		if len(out) > 0 {
			_, _ = l.w.Write(out)
		}
	}
	if out = l.take(out); len(out) > 0 {
		_, _ = l.w.Write(out)
	}
}

// take swaps the pending bytes for spare (emptied) and returns them.
func (l *lineWriter) take(spare []byte) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.buf
	l.buf = spare[:0]
	l.drained.Broadcast()
	return out
}

// Close writes what is pending and stops; later writes go straight to w.
func (l *lineWriter) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	close(l.wake)
	l.drained.Broadcast()
	l.mu.Unlock()
	<-l.done
}
