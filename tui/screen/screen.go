package screen

import (
	"bytes"
	"io"
	"sync"
	"sync/atomic"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/vt"
)

const (
	// FloodSize is the largest Write fed to the emulator whole. A larger one
	// means the console fell far behind (exec hands over up to 256 KiB at
	// once): the emulator is reset and fed only the tail of the Write, at
	// most TailSize bytes, so the pane shows the latest screen at once
	// instead of replaying history at the emulator's few MB/s.
	FloodSize = 128 << 10
	// TailSize bounds how much of a flooding Write is replayed after the
	// reset: enough for several full redraws of a large screen.
	TailSize = 64 << 10
	// floodCells bounds the work of one Write in another way. x/vt moves
	// every cell of the screen, one by one, for each line it scrolls (about
	// 4 ns a cell here: 8 µs a line at 80x24, 40 µs at 200x50), so many
	// short lines cost far more than their bytes suggest. A Write whose
	// newlines times the screen's cells exceed this is a flood too, and its
	// tail is cut to half as many lines.
	floodCells = 16 << 20

	// ScrollbackLines is how many lines scrolled off the top are kept.
	ScrollbackLines = 10_000
	// scrollbackRoom is how far x/vt's scrollback may grow past
	// ScrollbackLines before Write trims it: more than one feedChunk can
	// push, so x/vt never reaches its own limit (see trimScrollback).
	scrollbackRoom = 32 << 10

	// feedChunk and chunkCells bound how long Write holds the lock, to a
	// few ms of emulator work, so Render never waits for a whole Write: a
	// chunk has at most feedChunk bytes, and at most as many newlines as
	// scroll chunkCells cells.
	feedChunk  = 16 << 10
	chunkCells = 1 << 20
)

// Screen is the emulated terminal of one run, fed by the runner's output and
// drawn by the console.
//
// Write is called from one producer goroutine; every other method is meant
// for the UI goroutine, and all of them may run concurrently with Write.
// The zero value is not usable; call New.
type Screen struct {
	emu  *vt.Emulator
	pipe io.Closer // the emulator's reply pipe; Close shuts it first (x#879)

	mu     sync.Mutex // guards emu (except Read), closed and the view
	closed bool
	view   view
	area   atomic.Int64 // cols*rows, for Write's flood check outside mu
	panics int          // emulator panics recovered by guard

	dirty   atomic.Bool
	stopped atomic.Bool   // Close has begun; Write is a no-op from here on
	drained chan struct{} // closed when the reply reader has returned
	once    sync.Once

	in input // owned by the producer goroutine (Write)
}

// New returns a Screen of cols by rows cells (each at least 1). reply
// receives the emulator's answers to the child's queries (DA, DSR, CPR,
// colour reports), to be written into the pty; it is called from a goroutine
// of the Screen's, in order, and may block without stalling Write (answers
// that find the queue full are dropped). A nil reply drops every answer.
// Call Close when the run ends.
func New(cols, rows int, reply func([]byte)) *Screen {
	emu := vt.NewEmulator(max(cols, 1), max(rows, 1))
	pipe, ok := emu.InputPipe().(io.Closer)
	if !ok {
		// x/vt's pipe has been an *io.PipeWriter since the pin; a new pin
		// that changes it must revisit Close's stop-then-close sequence.
		panic("screen: x/vt input pipe is not an io.Closer")
	}
	limitCounts(emu)
	emu.SetScrollbackSize(ScrollbackLines + scrollbackRoom)
	s := &Screen{
		emu:     emu,
		pipe:    pipe,
		drained: make(chan struct{}),
	}
	s.area.Store(int64(emu.Width() * emu.Height()))
	s.dirty.Store(true)
	s.startReplies(reply)
	return s
}

// Write feeds p, output of the run, to the emulator and reports len(p), nil.
// It never blocks on the console or on reply; it holds the lock only while
// the emulator parses, in slices of a few KiB. p may start or end in the
// middle of an escape sequence or a UTF-8 sequence. A p longer than
// FloodSize, or with too many lines for the emulator to scroll through
// quickly, resets the screen and replays only its tail (see FloodSize).
// Write after Close does nothing.
func (s *Screen) Write(p []byte) (int, error) {
	n := len(p)
	if n == 0 || s.stopped.Load() {
		return n, nil
	}
	var buf []byte
	area := int(s.area.Load())
	if n > FloodSize || bytes.Count(p, newline)*area > floodCells {
		buf = s.in.flood(p, max(floodCells/area/2, 1))
	} else {
		buf = s.in.filter(p)
	}
	lines := max(chunkCells/area, 1)
	for len(buf) > 0 {
		c := chunk(buf, feedChunk, lines)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			break
		}
		s.guard(func() { _, _ = s.emu.Write(c) }) // fails only once closed
		s.trimScrollback()
		s.mu.Unlock()
		buf = buf[len(c):]
	}
	s.dirty.Store(true)
	return n, nil
}

// Resize changes the screen to cols by rows cells (each at least 1). When
// the screen gets shorter than the cursor's row, the lines above are moved
// into the scrollback, as terminals do, rather than losing the bottom rows
// (x/vt simply cuts them off). Narrowing cuts lines; x/vt does not reflow.
// Resize still works after Close, to redraw a finished run.
func (s *Screen) Resize(cols, rows int) {
	cols, rows = max(cols, 1), max(rows, 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if cols == s.emu.Width() && rows == s.emu.Height() {
		return
	}
	s.guard(func() {
		if rows < s.emu.Height() && !s.emu.IsAltScreen() {
			s.keepCursorRow(rows)
		}
		s.emu.Resize(cols, rows)
	})
	s.area.Store(int64(cols * rows))
	s.dirty.Store(true)
}

// guard runs f, a call into the emulator made with s.mu held. x/vt has
// panicked on child output (see limitCounts); one more such bug must not
// take the console down from the runner's goroutine or leave s.mu locked.
// So guard recovers, resets the emulator and carries on: the pane loses
// its screen, the log loses nothing.
func (s *Screen) guard(f func()) {
	defer func() {
		if recover() != nil {
			s.panics++
			defer func() { _ = recover() }()
			_, _ = s.emu.Write([]byte(resetSeq))
		}
	}()
	f()
}

// trimScrollback drops the oldest scrollback lines beyond ScrollbackLines.
// x/vt drops them itself only when full, one line per push with a copy of
// the whole line index (slices.Delete): with 10,000 lines kept, every new
// line cost about 19 µs instead of 10 µs (80x24). SetMaxLines reslices
// instead; raising the limit again keeps x/vt's own path out of reach.
func (s *Screen) trimScrollback() {
	if sb := s.emu.Scrollback(); sb.Len() > ScrollbackLines+scrollbackRoom/8 {
		sb.SetMaxLines(ScrollbackLines)
		sb.SetMaxLines(ScrollbackLines + scrollbackRoom)
	}
}

// keepCursorRow scrolls the main screen up so that the cursor's row is
// still on a screen of the given height, pushing the top lines into the
// scrollback. The emulator's Resize then clamps the cursor onto the same
// content row.
func (s *Screen) keepCursorRow(rows int) {
	y := s.emu.CursorPosition().Y
	if y < rows {
		return
	}
	k := y - rows + 1
	w, h := s.emu.Width(), s.emu.Height()
	sb := s.emu.Scrollback()
	line := make(uv.Line, w)
	for r := range k {
		for x := range w {
			line[x] = cellOrEmpty(s.emu.CellAt(x, r))
		}
		sb.Push(line) // Push copies the line
	}
	// CellAt points into the screen buffer; x/vt has no public scroll.
	for r := 0; r+k < h; r++ {
		for x := range w {
			if dst, src := s.emu.CellAt(x, r), s.emu.CellAt(x, r+k); dst != nil && src != nil {
				*dst = *src
			}
		}
	}
}

// Dirty reports whether anything visible may have changed since the last
// call, and clears the flag. A new Screen starts dirty.
func (s *Screen) Dirty() bool {
	return s.dirty.Swap(false)
}

// Close stops the reply goroutine and closes the emulator. It is idempotent
// and safe to call concurrently with Write, which becomes a no-op. Render,
// Resize and scrolling keep working on the last screen. Close does not wait
// for a reply call in progress: that goroutine returns as soon as reply
// does, and no answer is handed to reply after Close.
func (s *Screen) Close() {
	s.once.Do(func() {
		s.stopped.Store(true)
		// x#879: Emulator.Close writes a flag that Emulator.Read reads
		// without a lock. Stop the reader first by closing the pipe under
		// it (this also fails any answer the emulator is writing), wait for
		// it to return, and only then close the emulator.
		_ = s.pipe.Close()
		<-s.drained
		s.mu.Lock()
		s.closed = true
		_ = s.emu.Close()
		s.mu.Unlock()
		s.dirty.Store(true)
	})
}

var newline = []byte{'\n'}

// chunk returns the first part of buf to feed in one locked step: at most
// limit bytes and lines newlines, ending after a newline near the limit when
// there is one, and never inside a UTF-8 sequence.
func chunk(buf []byte, limit, lines int) []byte {
	head := buf[:min(len(buf), limit)]
	if i := nthIndex(head, '\n', lines); i >= 0 {
		return buf[:i+1]
	}
	if len(buf) <= limit {
		return buf
	}
	for i := limit - 1; i >= limit-limit/8; i-- {
		if buf[i] == '\n' {
			return buf[:i+1]
		}
	}
	i := limit
	for i > limit-4 && buf[i]&0xC0 == 0x80 { // continuation byte
		i--
	}
	return buf[:i]
}

// nthIndex returns the index of the nth c in p, or -1.
func nthIndex(p []byte, c byte, n int) int {
	at := -1
	for range n {
		i := bytes.IndexByte(p[at+1:], c)
		if i < 0 {
			return -1
		}
		at += i + 1
	}
	return at
}

func cellOrEmpty(c *uv.Cell) uv.Cell {
	if c == nil {
		return uv.EmptyCell
	}
	return *c
}
