package netproxy

import (
	"bufio"
	"io"
	"net"
	"sync/atomic"
)

// A forwarded message's body of known length (Content-Length, no
// Transfer-Encoding) moves from one connection to the other as a tunnel's
// bytes do: by splice(2), never through a buffer of the proxy's, and sent
// on as it arrives. net/http still writes the message's header: it is
// given a msgWriter, which buffers the header, and a rawBody as the body;
// its copy of the body (an io.LimitedReader around the rawBody) lands in
// msgWriter.ReadFrom, which sends the header with what of the body has
// already come and has the kernel move the rest. Chunked bodies and
// bodies of unknown length go through net/http as before.

// rawBody is a body of remain bytes that follow a header read through br
// from conn.
type rawBody struct {
	br     *bufio.Reader
	conn   net.Conn
	remain int64
	// read, when not nil, counts the bytes taken from conn past br (br
	// counts its own).
	read *atomic.Int64
}

// Read reads through br; it ends at the body's end, never past it.
func (b *rawBody) Read(p []byte) (int, error) {
	if b.remain <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.remain {
		p = p[:b.remain]
	}
	n, err := b.br.Read(p)
	b.remain -= int64(n)
	if err == io.EOF && b.remain > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// Close leaves the connection alone: its next message follows the body.
func (b *rawBody) Close() error { return nil }

// spliceTo sends n bytes of the body to dst: what br holds first, then
// the rest straight from conn (a TCP or unix connection on both ends:
// spliced).
func (b *rawBody) spliceTo(dst net.Conn, n int64) (int64, error) {
	n = min(n, b.remain)
	var sent int64
	if k := min(int64(b.br.Buffered()), n); k > 0 {
		p, _ := b.br.Peek(int(k))
		m, err := dst.Write(p)
		_, _ = b.br.Discard(m)
		sent += int64(m)
		b.remain -= int64(m)
		if err != nil {
			return sent, err
		}
	}
	if sent == n {
		return sent, nil
	}
	src := &io.LimitedReader{R: b.conn, N: n - sent}
	var m int64
	var err error
	if _, ok := dst.(io.ReaderFrom); ok {
		m, err = io.Copy(dst, src)
	} else {
		// No splice into dst (a unix client): large reads at least.
		m, err = io.CopyBuffer(dst, src, make([]byte, min(n-sent, 256<<10)))
	}
	if b.read != nil {
		b.read.Add(m)
	}
	sent += m
	b.remain -= m
	if err == nil && sent < n {
		err = io.ErrUnexpectedEOF
	}
	return sent, err
}

// msgWriter is what net/http writes a message with a rawBody into.
type msgWriter struct {
	w    io.Writer     // conn, or a counting wrapper of it
	bw   *bufio.Writer // the header for w, until the body comes
	conn net.Conn      // where the body goes, spliced
	// written, when not nil, counts what goes to conn past bw (bw's
	// writer counts its own).
	written *atomic.Int64
}

// newMsgWriter buffers a header for w (conn, or a counting wrapper of
// it) and splices a rawBody into conn.
func newMsgWriter(w io.Writer, conn net.Conn, written *atomic.Int64) *msgWriter {
	return &msgWriter{w: w, bw: bufio.NewWriterSize(w, 16<<10), conn: conn, written: written}
}

func (w *msgWriter) Write(p []byte) (int, error) { return w.bw.Write(p) }

// WriteByte makes w an io.ByteWriter: Request.Write then writes into it
// rather than into a bufio.Writer of its own.
func (w *msgWriter) WriteByte(c byte) error { return w.bw.WriteByte(c) }

// ReadFrom is the body's copy. The header leaves first, with what of the
// body has already come if it fits, so that a small message is one write;
// the rest is spliced as it arrives. Any other body is sent on as it is
// read.
func (w *msgWriter) ReadFrom(r io.Reader) (int64, error) {
	lr, ok := r.(*io.LimitedReader)
	var b *rawBody
	if ok {
		b, ok = lr.R.(*rawBody)
	}
	if !ok {
		if err := w.bw.Flush(); err != nil {
			return 0, err
		}
		return io.Copy(onlyWriter{w.w}, r)
	}
	var n int64
	if k := min(int64(b.br.Buffered()), lr.N, b.remain, int64(w.bw.Available())); k > 0 {
		p, _ := b.br.Peek(int(k))
		_, _ = w.bw.Write(p) // fits: Available
		_, _ = b.br.Discard(len(p))
		b.remain -= k
		lr.N -= k
		n = k
	}
	if err := w.bw.Flush(); err != nil {
		return n, err
	}
	m, err := b.spliceTo(w.conn, lr.N)
	lr.N -= m
	if w.written != nil {
		w.written.Add(m)
	}
	return n + m, err
}

// Flush sends what is buffered.
func (w *msgWriter) Flush() error { return w.bw.Flush() }

// onlyWriter hides every method but Write (io.Copy would call ReadFrom).
type onlyWriter struct{ io.Writer }
