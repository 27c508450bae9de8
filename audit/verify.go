package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// Break says how a chain is broken.
type Break string

// The ways Verify finds a chain broken.
const (
	Edited    Break = "edited"    // a line's content does not match its hash, or it was rewritten with a new hash
	Removed   Break = "removed"   // lines are missing before this one
	Reordered Break = "reordered" // this line is out of its place
	Inserted  Break = "inserted"  // this line is not part of the chain
	Torn      Break = "torn"      // the log ends in a line cut short (a crash), not yet repaired
)

// ChainError says where the chain first breaks, and how.
type ChainError struct {
	Line   int64 // 1-based line number
	Offset int64 // byte offset of the line
	Kind   Break
	Detail string
}

func (e *ChainError) Error() string {
	return fmt.Sprintf("audit: line %d: %s: %s", e.Line, e.Kind, e.Detail)
}

// Report is what Verify read. When the chain breaks, it covers the lines
// before the break.
type Report struct {
	Lines    int64     // lines read, torn ones included
	Events   int64     // event lines that verified
	First    time.Time // ts of the first event
	Last     time.Time // ts of the last event
	Head     string    // hash of the last event: quote it to pin the log as it is now
	LastSeq  int64
	Repaired []Repair // torn lines the log repaired, in order
}

// Repair is a span of torn lines followed by the audit_repaired line that
// accounts for them.
type Repair struct {
	Line  int64 // the first torn line
	Lines int64 // how many lines the span has
	queue.TornSpan
}

// VerifyFile verifies the log at path; see Verify.
func VerifyFile(path string) (*Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("audit: verify: %w", err)
	}
	defer f.Close()
	return Verify(f)
}

// Verify reads a whole log and checks its chain: every line is an event
// whose hash matches its content, whose prev is the hash of the event
// before it (empty on the first), and whose seq is one more (1 on the
// first). Torn lines followed by the audit_repaired line that names them
// exactly are skipped. The first break is returned as a *ChainError; any
// other error is a read error. Verify streams: its memory does not grow
// with the log.
func Verify(r io.Reader) (*Report, error) {
	v := &verifier{lr: newLineReader(r), h: newHasher(), span: sha256.New()}
	return &v.rep, v.run()
}

// link is what the chain remembers of an event line.
type link struct {
	line, off int64
	seq       int64
	hash      [hexLen]byte
	prev      [hexLen]byte
	prevLen   int
}

func (k *link) set(line, off int64, f frame) {
	k.line, k.off, k.seq = line, off, f.seq
	copy(k.hash[:], f.hash)
	k.prevLen = copy(k.prev[:], f.prev)
}

func (k *link) prevIs(p []byte) bool { return bytes.Equal(k.prev[:k.prevLen], p) }

type verifier struct {
	lr  *lineReader
	h   *hasher
	rep Report

	last    link // the last event that verified; line 0 if none
	lastTS  [64]byte
	lastTSn int

	// A span of torn lines not yet accounted for.
	inSpan    bool
	spanLine  int64
	spanOff   int64
	spanLen   int64
	spanLines int64
	span      hash.Hash
}

func (v *verifier) head() []byte {
	if v.last.line == 0 {
		return nil
	}
	return v.last.hash[:]
}

func (v *verifier) run() error {
	defer v.finish()
	for {
		line, off, n, err := v.lr.next(v.spill)
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("audit: verify: read line %d: %w", v.lr.lines, err)
		}
		v.rep.Lines++
		lineNo := v.lr.lines
		var f frame
		ok := false
		terminated := line != nil && line[len(line)-1] == '\n'
		content := line
		if terminated {
			content = line[:len(line)-1]
		}
		if line != nil {
			f, ok = parseFrame(content)
		}
		if !ok {
			if !v.inSpan {
				v.inSpan, v.spanLine, v.spanOff, v.spanLen, v.spanLines = true, lineNo, off, 0, 0
				v.span.Reset()
			}
			if line != nil {
				v.span.Write(line)
			}
			v.spanLen += n
			v.spanLines++
			continue
		}
		if v.inSpan {
			if err := v.checkRepair(content); err != nil {
				return err
			}
		}
		if !bytes.Equal(v.h.canonical(content, f), f.hash) {
			return &ChainError{lineNo, off, Edited, "its content does not match its hash: the line was changed after it was written"}
		}
		if f.seq == v.last.seq+1 && bytes.Equal(f.prev, v.head()) {
			v.accept(lineNo, off, f)
			if !terminated { // and so the last line
				return &ChainError{lineNo, off, Torn,
					"the last line is a whole event but has no newline: an append cut short at its very end; the next append adds the newline"}
			}
			continue
		}
		return v.classify(lineNo, off, f)
	}
	if v.inSpan {
		return &ChainError{v.spanLine, v.spanOff, Torn, fmt.Sprintf(
			"the log ends in %d bytes that are not a complete event (from byte %d): an append cut short by a crash; the next append records them as repaired",
			v.spanLen, v.spanOff)}
	}
	return nil
}

// finish fills in the report's figures about the last good event, which
// the loop leaves alone to stay free of allocations.
func (v *verifier) finish() {
	if v.rep.Events > 0 {
		v.rep.Last, _ = time.Parse(time.RFC3339Nano, string(v.lastTS[:v.lastTSn]))
		v.rep.Head = string(v.last.hash[:])
	}
}

// spill receives the bytes of a line too long to hold; such a line is torn.
func (v *verifier) spill(p []byte) {
	if !v.inSpan {
		v.inSpan, v.spanLine, v.spanOff, v.spanLen, v.spanLines = true, v.lr.lines+1, v.lr.off, 0, 0
		v.span.Reset()
	}
	v.span.Write(p)
}

func (v *verifier) accept(lineNo, off int64, f frame) {
	if v.rep.Events == 0 {
		v.rep.First, _ = time.Parse(time.RFC3339Nano, string(f.ts))
	}
	v.rep.Events++
	v.rep.LastSeq = f.seq
	v.last.set(lineNo, off, f)
	v.lastTSn = copy(v.lastTS[:], f.ts)
}

// checkRepair checks that the event line after a span of torn lines is the
// audit_repaired line that names exactly those bytes.
func (v *verifier) checkRepair(content []byte) error {
	bad := &ChainError{v.spanLine, v.spanOff, Edited,
		"not a well-formed event, and no audit_repaired line after it accounts for it: the line was changed after it was written"}
	ev, err := DecodeLine(content)
	if err != nil || ev.Event != queue.EventAuditRepaired || ev.Torn == nil {
		return bad
	}
	sum := hex.EncodeToString(v.span.Sum(nil))
	if ev.Torn.Offset != v.spanOff || ev.Torn.Bytes != v.spanLen || ev.Torn.SHA256 != sum {
		bad.Detail = fmt.Sprintf("not a well-formed event, and the audit_repaired line after it (line %d) names other bytes (%d at byte %d) than the %d at byte %d here: a line was changed after it was written",
			v.lr.lines, ev.Torn.Bytes, ev.Torn.Offset, v.spanLen, v.spanOff)
		return bad
	}
	v.rep.Repaired = append(v.rep.Repaired, Repair{Line: v.spanLine, Lines: v.spanLines, TornSpan: *ev.Torn})
	v.inSpan = false
	return nil
}

// classify names the break at line x, an event line with a good hash that
// does not follow the last good event. It may read on to the end of the
// log to tell a reordered line from a removed or inserted one.
func (v *verifier) classify(lineNo, off int64, f frame) error {
	var x link
	x.set(lineNo, off, f)
	p := v.last // p.line == 0: x is the first event
	want := p.seq + 1
	next, haveNext := v.nextEvent()
	brk := func(line, off int64, kind Break, format string, args ...any) error {
		return &ChainError{line, off, kind, fmt.Sprintf(format, args...)}
	}
	switch {
	case p.line > 0 && x.hash == p.hash:
		return brk(x.line, x.off, Inserted, "a copy of line %d", p.line)
	case p.line > 0 && x.prevIs(p.prev[:p.prevLen]):
		// Two lines claim the same predecessor; the one the rest of the
		// chain follows is the original.
		if haveNext && next.prevIs(x.hash[:]) {
			return brk(p.line, p.off, Inserted, "not part of the chain: line %d follows the same line as this one (seq %d), and the lines after follow line %d",
				x.line, x.seq, x.line)
		}
		return brk(x.line, x.off, Inserted, "not part of the chain: it follows the same line as line %d (seq %d)", p.line, p.seq)
	case haveNext && next.prevIs(v.head()):
		// The line after x follows the line before x: x is out of place.
		if m := v.find(x.prev[:x.prevLen], next); m > 0 {
			return brk(x.line, x.off, Reordered, "seq %d is out of place: the line it follows is line %d, further down", x.seq, m)
		}
		return brk(x.line, x.off, Inserted, "not part of the chain: line %d follows line %d, the line before it", next.line, p.line)
	case x.prevIs(v.head()) && p.line == 0:
		return brk(x.line, x.off, Edited, "its seq is %d, not 1, though it starts the chain: the line was rewritten with a new hash", x.seq)
	case x.prevIs(v.head()):
		return brk(x.line, x.off, Edited, "its seq is %d, not %d, though it follows line %d: the line was rewritten with a new hash", x.seq, want, p.line)
	case x.seq > want:
		if m := v.find(x.prev[:x.prevLen], next); m > 0 {
			return brk(x.line, x.off, Reordered, "seq %d comes before the line it follows, line %d (seq %d is expected here)", x.seq, m, want)
		}
		if x.seq == want+1 {
			return brk(x.line, x.off, Removed, "seq %d, the line before this one, is missing", want)
		}
		return brk(x.line, x.off, Removed, "seq %d to %d, the lines before this one, are missing", want, x.seq-1)
	case x.seq == want && p.line > 0:
		return brk(p.line, p.off, Edited, "line %d does not follow it: this line was rewritten with a new hash", x.line)
	case x.seq == want:
		return brk(x.line, x.off, Edited, "the first event must have an empty prev: the line was rewritten with a new hash")
	}
	return brk(x.line, x.off, Inserted, "seq %d again after seq %d: not part of the chain", x.seq, p.seq)
}

// nextEvent reads the line after a break, if it is an event line.
func (v *verifier) nextEvent() (link, bool) {
	var k link
	line, off, _, err := v.lr.next(nil)
	if err != nil || line == nil || line[len(line)-1] != '\n' {
		return k, false
	}
	f, ok := parseFrame(line[:len(line)-1])
	if !ok {
		return k, false
	}
	k.set(v.lr.lines, off, f)
	return k, true
}

// find returns the line number of the event whose hash is h, looking at
// next and then the rest of the log; 0 if there is none.
func (v *verifier) find(h []byte, next link) int64 {
	if len(h) == 0 {
		return 0
	}
	if next.line > 0 && bytes.Equal(next.hash[:], h) {
		return next.line
	}
	for {
		line, _, _, err := v.lr.next(nil)
		if err != nil {
			return 0
		}
		if line == nil || line[len(line)-1] != '\n' {
			continue
		}
		if f, ok := parseFrame(line[:len(line)-1]); ok && bytes.Equal(f.hash, h) {
			return v.lr.lines
		}
	}
}
