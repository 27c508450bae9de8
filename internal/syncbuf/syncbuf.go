// Package syncbuf is a bytes.Buffer one goroutine may write while
// another reads it: a child process's output as a test or a harness
// watches it come.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer collects what is written to it, safe for writes and reads at
// once. The zero value is empty and ready.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
