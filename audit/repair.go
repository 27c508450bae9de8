package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// tail is what an append needs from the end of the file.
type tail struct {
	seq         int64  // of the last event line; 0 if none
	hash        string // of the last event line; "" if none
	tornOff     int64  // where the bytes after the last event line start; the size if none
	needNewline bool   // the file does not end in a newline
}

// scanTail reads the file backwards from size to its last event line: the
// last line with the line format. Only its frame is read; whether its hash
// is right is Verify's business. The last line may lack its newline (an
// append cut short just before it); the append adds it. Any lines after the
// last event line are what a crash cut short.
func scanTail(r io.ReaderAt, size int64) (tail, error) {
	t := tail{tornOff: size}
	b := newBackLines(r, size, 4096)
	for lines := 0; ; lines++ {
		off, line, n, err := b.prev()
		if err == io.EOF {
			t.tornOff = 0
			break
		}
		if err != nil {
			return t, err
		}
		if lines == 0 {
			var last [1]byte
			if line != nil {
				last[0] = line[len(line)-1]
			} else if _, err := r.ReadAt(last[:], size-1); err != nil {
				return t, err
			}
			t.needNewline = last[0] != '\n'
		}
		if line != nil {
			if f, ok := parseFrame(bytes.TrimSuffix(line, []byte("\n"))); ok {
				t.seq, t.hash, t.tornOff = f.seq, string(f.hash), off+n
				break
			}
		}
		if lines >= maxTornLines || size-off > maxTornBytes {
			return t, notLogError{fmt.Sprintf("more than %d lines or %d bytes at its end are not events", maxTornLines, maxTornBytes)}
		}
	}
	return t, nil
}

// repairEvent is the audit_repaired line for the torn bytes after t: their
// offset, their length and SHA-256, counting the newline the repair adds
// when they lack one, so that the span ends where the repair line starts.
func (l *Log) repairEvent(t tail, size int64, now time.Time) (queue.Event, error) {
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(l.f, t.tornOff, size-t.tornOff)); err != nil {
		return queue.Event{}, err
	}
	n := size - t.tornOff
	how := "ends in a newline but is not an event"
	if t.needNewline {
		h.Write([]byte{'\n'})
		n++
		how = "has no newline at its end; one was added"
	}
	return queue.Event{
		Seq: t.seq + 1, TS: now, Event: queue.EventAuditRepaired, Actor: login(),
		Reason: fmt.Sprintf("%d bytes at byte %d were not a complete event (an append cut short, by a crash or a full disk); the last line %s. The bytes are left in place and skipped by the chain",
			n, t.tornOff, how),
		Torn: &queue.TornSpan{Offset: t.tornOff, Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil))},
		Prev: t.hash,
	}, nil
}

// notLogError is scanTail's ErrNotLog; Append adds the path.
type notLogError struct{ why string }

func (e notLogError) Error() string { return e.why }
func (e notLogError) Unwrap() error { return ErrNotLog }
