package exec

import (
	"crypto/sha256"
	"errors"
	"hash"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"
)

// TailSize is the most output kept in Result.OutputTail, in bytes.
const TailSize = 64 << 10

const (
	// drainIdle is how long the reader waits for more output once the
	// child has exited; each read extends it, up to drainMax.
	drainIdle = 100 * time.Millisecond
	// drainMax bounds reading after the child exited, for a grandchild that
	// left the session (setsid) but kept the pty open and writing.
	drainMax = time.Second
	// readSize is the read buffer. A pty hands over at most a few KiB per
	// read; more only costs memory.
	readSize = 64 << 10
)

// pump reads the pty master until EOF and sends every byte to the log, the
// hash, the tail and the fanout. It waits for nothing but the kernel and
// the log write.
type pump struct {
	master *os.File
	log    *os.File // nil: no log
	fan    *fanout  // nil: no subscriber

	hash    hash.Hash
	n       int64
	tail    tailRing
	logErr  error
	readErr error

	drainBy atomic.Int64 // unix nanos; 0 until the child exited
	done    chan struct{}
}

func newPump(master, log *os.File, fan *fanout) *pump {
	return &pump{
		master: master,
		log:    log,
		fan:    fan,
		hash:   sha256.New(),
		tail:   tailRing{size: TailSize},
		done:   make(chan struct{}),
	}
}

// readBufs are the pumps' read buffers, kept between runs: a new 64 KiB
// buffer for every run, and a 64 KiB tail, were most of what a run
// allocated (~130 KiB: a garbage collection every ten runs of `true`).
var readBufs = sync.Pool{New: func() any { return new([readSize]byte) }}

func (p *pump) run() {
	defer close(p.done)
	rb := readBufs.Get().(*[readSize]byte)
	defer readBufs.Put(rb)
	buf := rb[:]
	for {
		n, err := p.master.Read(buf)
		if n > 0 {
			p.write(buf[:n])
			if by := p.drainBy.Load(); by != 0 {
				_ = p.master.SetReadDeadline(time.Unix(0, min(time.Now().Add(drainIdle).UnixNano(), by)))
			}
		}
		if err != nil {
			// EIO: every slave descriptor is closed, Linux's EOF for a pty.
			if !errors.Is(err, syscall.EIO) && !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrDeadlineExceeded) {
				p.readErr = err
			}
			return
		}
	}
}

// write hands b to the log, the hash, the tail and the fanout. Only the
// reader calls it, and, once the reader is done, the runner.
func (p *pump) write(b []byte) {
	if p.log != nil && p.logErr == nil {
		if _, werr := p.log.Write(b); werr != nil {
			p.logErr = werr
		}
	}
	p.hash.Write(b)
	p.n += int64(len(b))
	p.tail.write(b)
	if p.fan != nil {
		p.fan.write(b)
	}
}

// drain lets the reader take what is still readable, then stops it: the
// child has exited, and anyone still holding the slave has left its group.
func (p *pump) drain() {
	now := time.Now()
	p.drainBy.Store(now.Add(drainMax).UnixNano())
	_ = p.master.SetReadDeadline(now.Add(drainIdle))
	<-p.done
}

// tailRing keeps the last size bytes written. Its buffer grows with what
// is written until it holds size bytes, then wraps: a run that prints
// little keeps little.
type tailRing struct {
	buf  []byte
	size int
	pos  int // next write index, once full
	full bool
}

func (t *tailRing) write(p []byte) {
	n := t.size
	if !t.full {
		if len(t.buf)+len(p) < n {
			t.buf = append(t.buf, p...)
			return
		}
		// This write fills it: from now on a ring of n bytes, the oldest
		// at pos.
		ring := make([]byte, n)
		k := copy(ring[max(0, n-len(p)):], p[max(0, len(p)-n):])
		copy(ring[:n-k], t.buf[len(t.buf)-(n-k):])
		t.buf, t.pos, t.full = ring, 0, true
		return
	}
	if len(p) >= n {
		copy(t.buf, p[len(p)-n:])
		t.pos = 0
		return
	}
	if c := copy(t.buf[t.pos:], p); c < len(p) {
		copy(t.buf, p[c:])
	}
	t.pos = (t.pos + len(p)) % n
}

// bytes returns the held bytes, oldest first.
func (t *tailRing) bytes() []byte {
	if !t.full {
		return append([]byte(nil), t.buf...)
	}
	out := make([]byte, 0, len(t.buf))
	out = append(out, t.buf[t.pos:]...)
	return append(out, t.buf[:t.pos]...)
}

// tailText makes the held bytes valid UTF-8 of at most max bytes: a rune
// cut by the start of the window is dropped, invalid bytes become U+FFFD,
// and if that grew the text it is trimmed again from the front.
func tailText(b []byte, max int) string {
	// cut drops the continuation bytes of a rune the window split.
	cut := func(b []byte) []byte {
		i := 0
		for i < len(b) && i < utf8.UTFMax-1 && !utf8.RuneStart(b[i]) {
			i++
		}
		return b[i:]
	}
	if len(b) > max {
		b = cut(b[len(b)-max:])
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	for len(s) > max {
		s = string(cut([]byte(s[len(s)-max:])))
	}
	return s
}
