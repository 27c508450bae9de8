package audit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// backLines reads the lines of a file backwards from an offset, a chunk at
// a time, so that reading the end of a large log costs what the end costs.
type backLines struct {
	r     io.ReaderAt
	buf   []byte // the bytes [off, pos) of the file: read, not yet returned
	off   int64
	pos   int64 // the start of the last line returned
	chunk int
}

func newBackLines(r io.ReaderAt, end int64, chunk int) *backLines {
	return &backLines{r: r, off: end, pos: end, chunk: chunk}
}

// prev returns the line before the last one returned: its offset, its
// bytes with the newline if it has one, and its length. A line longer than
// maxLine comes back with nil bytes and its true offset and length. The
// bytes are valid until the next call. At the start of the file prev
// returns io.EOF.
func (b *backLines) prev() (int64, []byte, int64, error) {
	end := b.pos
	if end <= 0 {
		return 0, nil, 0, io.EOF
	}
	// The byte at end-1 is this line's own newline if it has one; the line
	// starts after the newline before that.
	limit := end - 1
	for {
		if b.off <= limit {
			if i := bytes.LastIndexByte(b.buf[:limit-b.off], '\n'); i >= 0 {
				return b.cut(b.off+int64(i)+1, end)
			}
		}
		if b.off == 0 {
			return b.cut(0, end)
		}
		if end-b.off > maxLine {
			return b.skipLong(end)
		}
		if err := b.more(); err != nil {
			return 0, nil, 0, err
		}
	}
}

func (b *backLines) cut(start, end int64) (int64, []byte, int64, error) {
	line := b.buf[start-b.off : end-b.off]
	b.buf = b.buf[:start-b.off]
	b.pos = start
	return start, line, end - start, nil
}

// more reads the chunk before the buffer, growing the chunk with the
// buffer so that a long line costs a few reads, not one per chunk.
func (b *backLines) more() error {
	n := max(int64(b.chunk), int64(len(b.buf)))
	newOff := max(0, b.off-n)
	nb := make([]byte, int(b.off-newOff)+len(b.buf))
	if err := b.readAt(nb[:b.off-newOff], newOff); err != nil {
		return err
	}
	copy(nb[b.off-newOff:], b.buf)
	b.buf, b.off = nb, newOff
	return nil
}

// skipLong finds the start of an over-long line that ends at end without
// holding it in memory.
func (b *backLines) skipLong(end int64) (int64, []byte, int64, error) {
	b.buf = nil
	for b.off > 0 {
		newOff := max(0, b.off-int64(b.chunk))
		chunk := make([]byte, b.off-newOff)
		if err := b.readAt(chunk, newOff); err != nil {
			return 0, nil, 0, err
		}
		if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
			start := newOff + int64(i) + 1
			b.buf, b.off, b.pos = chunk[:i+1], newOff, start
			return start, nil, end - start, nil
		}
		b.off = newOff
	}
	b.pos = 0
	return 0, nil, end, nil
}

func (b *backLines) readAt(p []byte, off int64) error {
	n, err := b.r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF // the file shrank under us
	}
	return fmt.Errorf("read at byte %d: %w", off, err)
}

// lineReader reads lines forward through a large buffer, without
// allocating per line.
type lineReader struct {
	br    *bufio.Reader
	long  []byte
	off   int64 // of the next line
	lines int64 // lines returned
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 1<<20)}
}

// next returns the next line with its newline (the last line may have
// none), its offset and length. The bytes are valid until the next call. A
// line longer than maxLine is returned as nil bytes; its bytes go to spill
// (if not nil) as they are read.
func (lr *lineReader) next(spill func([]byte)) ([]byte, int64, int64, error) {
	off := lr.off
	line, err := lr.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		// A line longer than the buffer: gather it, or pass it to spill
		// once it is over maxLine.
		lr.long = append(lr.long[:0], line...)
		n := int64(len(line))
		spilling := false
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = lr.br.ReadSlice('\n')
			n += int64(len(line))
			if !spilling && n > maxLine {
				spilling = true
				if spill != nil {
					spill(lr.long)
				}
				lr.long = lr.long[:0]
			}
			if spilling {
				if spill != nil {
					spill(line)
				}
			} else {
				lr.long = append(lr.long, line...)
			}
		}
		if err != nil && err != io.EOF {
			return nil, off, 0, err
		}
		lr.off = off + n
		lr.lines++
		if spilling {
			return nil, off, n, nil
		}
		return lr.long, off, n, nil
	}
	if err != nil && err != io.EOF {
		return nil, off, 0, err
	}
	if len(line) == 0 {
		return nil, off, 0, io.EOF
	}
	lr.off = off + int64(len(line))
	lr.lines++
	return line, off, int64(len(line)), nil
}
