package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"

	"github.com/sluice-dev/sluice/queue"
)

// maxLine is the longest line the log writes or reads as an event, newline
// included. A request is at most 1 MiB and JSON escaping grows a string at
// most sixfold, so an event never comes near it; longer lines are treated
// as damage, and never held in memory whole. A variable for tests.
var maxLine int64 = 16 << 20

// The fixed parts of every line: it starts with the seq and ts members and
// ends with the prev and hash members, in that order, because that is the
// order of queue.Event's fields.
var (
	seqPrefix  = []byte(`{"seq":`)
	tsPrefix   = []byte(`,"ts":"`)
	prevMember = []byte(`,"prev":"`)
	hashMember = []byte(`,"hash":"`)
	lineEnd    = []byte(`"}`)
	emptyPrev  = []byte(`,"prev":""`)
)

const hexLen = 2 * sha256.Size

// frame is what the chain needs of a line, read without decoding the JSON.
// The slices point into the line.
type frame struct {
	seq  int64
	ts   []byte // the content of the ts string
	prev []byte // "" or 64 lower-case hex digits
	hash []byte // 64 lower-case hex digits
	body int    // the index of the hash member's ',': line[:body]+"}" is the canonical form
}

// parseFrame reads the frame of line (without its newline). It accepts only
// well-formed JSON whose first member is seq (a positive integer), second
// ts (a string), and last two prev and hash (hex SHA-256 digests, prev
// empty on the first line). Because the line is valid JSON and hex digits
// need no escaping, the suffix can only be the object's own last members.
func parseFrame(line []byte) (frame, bool) {
	var f frame
	n := len(line)
	// The suffix: ,"prev":"<0 or 64 hex>","hash":"<64 hex>"}
	if n < len(seqPrefix)+1+len(tsPrefix)+1+len(emptyPrev)+len(hashMember)+hexLen+len(lineEnd) ||
		!bytes.HasSuffix(line, lineEnd) {
		return f, false
	}
	hashEnd := n - len(lineEnd)
	hashStart := hashEnd - hexLen
	f.body = hashStart - len(hashMember)
	if !bytes.Equal(line[f.body:hashStart], hashMember) || !isHex(line[hashStart:hashEnd]) {
		return f, false
	}
	f.hash = line[hashStart:hashEnd]
	prevStart := 0 // of the prev member
	switch {
	case bytes.HasSuffix(line[:f.body], emptyPrev):
		prevStart = f.body - len(emptyPrev)
		f.prev = line[prevStart+len(prevMember) : prevStart+len(prevMember)]
	case f.body >= len(prevMember)+hexLen+1 && line[f.body-1] == '"':
		prevStart = f.body - 1 - hexLen - len(prevMember)
		if prevStart < 0 || !bytes.Equal(line[prevStart:prevStart+len(prevMember)], prevMember) {
			return f, false
		}
		f.prev = line[f.body-1-hexLen : f.body-1]
		if !isHex(f.prev) {
			return f, false
		}
	default:
		return f, false
	}
	// The prefix: {"seq":<digits>,"ts":"<chars>",
	if !bytes.HasPrefix(line, seqPrefix) {
		return f, false
	}
	i := len(seqPrefix)
	if i >= n || line[i] < '1' || line[i] > '9' {
		return f, false
	}
	for ; i < n && line[i] >= '0' && line[i] <= '9'; i++ {
		if i-len(seqPrefix) >= 18 { // keeps seq well inside int64
			return f, false
		}
		f.seq = f.seq*10 + int64(line[i]-'0')
	}
	if !bytes.HasPrefix(line[i:], tsPrefix) {
		return f, false
	}
	i += len(tsPrefix)
	end := bytes.IndexByte(line[i:], '"')
	if end < 0 || bytes.IndexByte(line[i:i+end], '\\') >= 0 {
		return f, false
	}
	f.ts = line[i : i+end]
	i += end + 1
	if i >= prevStart || line[i] != ',' {
		return f, false
	}
	if !json.Valid(line) {
		return f, false
	}
	return f, true
}

func isHex(b []byte) bool {
	for _, c := range b {
		if !hexDigit[c] {
			return false
		}
	}
	return true
}

// hexDigit holds the lower-case hex digits, the only ones a hash may use.
var hexDigit = func() (t [256]bool) {
	for _, c := range "0123456789abcdef" {
		t[c] = true
	}
	return t
}()

// hasher computes line hashes without allocating.
type hasher struct {
	h   hash.Hash
	sum [sha256.Size]byte
	hex [hexLen]byte
}

func newHasher() *hasher { return &hasher{h: sha256.New()} }

// canonical returns the hex hash of the canonical form of a line with frame
// f: the line up to its hash member, then "}". The result is valid until
// the next call.
func (h *hasher) canonical(line []byte, f frame) []byte {
	h.h.Reset()
	h.h.Write(line[:f.body])
	h.h.Write(lineEnd[1:])
	h.h.Sum(h.sum[:0])
	hex.Encode(h.hex[:], h.sum[:])
	return h.hex[:]
}

// encoder turns events into lines. It is not safe for concurrent use.
type encoder struct {
	buf  bytes.Buffer // encoding/json's output, for what appendEvent leaves to it
	line []byte       // appendEvent's
	enc  *json.Encoder
	h    *hasher
}

func newEncoder() *encoder {
	e := &encoder{h: newHasher()}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}

// appendLine encodes ev (with its Hash ignored) as one line, newline
// included, appends it to dst, and sets ev.Hash. The line is the JSON
// encoding of ev without its hash, with the hash member spliced in before
// the closing brace: exactly what encoding ev with Hash set would give.
func (e *encoder) appendLine(dst []byte, ev *queue.Event) ([]byte, error) {
	ev.Hash = ""
	e.buf.Reset()
	var ok bool
	e.line, ok = appendEvent(e.line[:0], ev)
	body := e.line
	if !ok {
		if err := e.enc.Encode(ev); err != nil {
			return dst, fmt.Errorf("audit: encode %s event: %w", ev.Event, err)
		}
		body = bytes.TrimSuffix(e.buf.Bytes(), []byte("\n"))
	}
	// The canonical form is body itself; the tests hold parseFrame to
	// accepting every line this writes.
	if !bytes.HasPrefix(body, seqPrefix) || !bytes.HasSuffix(body, lineEnd) {
		return dst, errors.New("audit: encoded event does not have the line format")
	}
	e.h.h.Reset()
	e.h.h.Write(body)
	e.h.h.Sum(e.h.sum[:0])
	hex.Encode(e.h.hex[:], e.h.sum[:])
	ev.Hash = string(e.h.hex[:])
	dst = append(dst, body[:len(body)-1]...)
	dst = append(dst, hashMember...)
	dst = append(dst, e.h.hex[:]...)
	dst = append(dst, lineEnd...)
	return append(dst, '\n'), nil
}

// DecodeLine decodes one line of the log (with or without its newline). It
// checks the line's form, not its hash or its place in the chain: that is
// Verify's work.
func DecodeLine(line []byte) (*queue.Event, error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	f, ok := parseFrame(line)
	if !ok {
		return nil, errors.New("audit: not an audit event line")
	}
	var ev queue.Event
	if err := json.Unmarshal(line, &ev); err != nil {
		return nil, fmt.Errorf("audit: not an audit event line: %w", err)
	}
	// A duplicate member would make the frame and the decoder disagree.
	if ev.Seq != f.seq || ev.Prev != string(f.prev) || ev.Hash != string(f.hash) || ev.Event == "" {
		return nil, errors.New("audit: not an audit event line: members repeated or missing")
	}
	return &ev, nil
}
