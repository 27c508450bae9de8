package screen

import (
	"bytes"
	"unicode/utf8"
)

// resetSeq prepares the emulator for a replayed tail: CAN ends any escape
// sequence or string in progress, then the main screen is selected (x/vt's
// RIS leaves the alternate screen active) and RIS clears both screens,
// modes, pen and cursor. The scrollback is kept.
const resetSeq = "\x18\x1b[?1049l\x1bc"

// replacement is U+FFFD, shown for each byte that is not valid UTF-8.
var replacement = []byte(string(utf8.RuneError))

// input rewrites the run's output before the emulator sees it. It is used
// by the producer goroutine only.
//
// It does what the tty's ONLCR would have done (exec turns OPOST off so its
// log is byte-exact): LF becomes CR LF. And it makes the stream valid UTF-8,
// showing U+FFFD for bad bytes, because x/vt's parser obeys raw bytes
// 0x80-0x9F as C1 controls (a stray 0x9D opens an OSC string that swallows
// all following text up to the next ESC or BEL) and, in the middle of a
// UTF-8 sequence, swallows whatever byte comes next, ESC included. A
// sequence split across Writes is held back until it is complete.
type input struct {
	carry []byte // start of a UTF-8 sequence cut off by the end of a Write
	buf   []byte // output, reused
}

// filter returns p rewritten; the result is valid until the next call.
func (in *input) filter(p []byte) []byte {
	out := in.buf[:0]
	if len(in.carry) > 0 {
		out, p = in.finishCarry(out, p)
	}
	for len(p) > 0 {
		i := plainPrefix(p)
		out = append(out, p[:i]...)
		p = p[i:]
		if len(p) == 0 {
			break
		}
		if p[0] == '\n' {
			out = append(out, '\r', '\n')
			p = p[1:]
			continue
		}
		r, size := utf8.DecodeRune(p)
		switch {
		case r != utf8.RuneError || size > 1:
			out = append(out, p[:size]...)
		case !utf8.FullRune(p):
			in.carry = append(in.carry[:0], p...) // at most 3 bytes
			size = len(p)
		default:
			out = append(out, replacement...)
		}
		p = p[size:]
	}
	in.buf = out
	return out
}

// finishCarry completes the UTF-8 sequence held from the last Write with
// the first bytes of p, or shows U+FFFD for it if p does not continue it.
func (in *input) finishCarry(out, p []byte) ([]byte, []byte) {
	held := len(in.carry)
	var tmp [utf8.UTFMax]byte
	n := copy(tmp[:], in.carry)
	n += copy(tmp[n:], p)
	seq := tmp[:n]
	if !utf8.FullRune(seq) {
		in.carry = append(in.carry[:0], seq...) // p was too short: keep waiting
		return out, nil
	}
	in.carry = in.carry[:0]
	if r, size := utf8.DecodeRune(seq); r != utf8.RuneError || size > 1 {
		return append(out, seq[:size]...), p[size-held:]
	}
	// Not continued: the held bytes are one bad sequence. p is read afresh,
	// so an ESC right after the cut is still an ESC.
	return append(out, replacement...), p
}

// flood returns the tail of a Write too large to replay, behind resetSeq:
// at most TailSize bytes and maxLines newlines. Unless it was cut at a
// newline, the tail starts at a newline or an ESC near its start when there
// is one, so the emulator picks up at a line or sequence boundary.
func (in *input) flood(p []byte, maxLines int) []byte {
	in.carry = in.carry[:0]
	tail := p[max(len(p)-TailSize, 0):]
	if i := nthLastIndex(tail, '\n', maxLines+1); i >= 0 {
		tail = tail[i+1:]
	} else if i := bytes.IndexAny(tail[:min(len(tail), 4<<10)], "\n\x1b"); i >= 0 {
		if tail[i] == '\n' {
			i++
		}
		tail = tail[i:]
	}
	for len(tail) > 0 && tail[0]&0xC0 == 0x80 { // cut inside a rune
		tail = tail[1:]
	}
	out := in.filter(tail)
	out = append(out, resetSeq...)
	copy(out[len(resetSeq):], out)
	copy(out, resetSeq)
	in.buf = out
	return out
}

// nthLastIndex returns the index of the nth last c in p, or -1.
func nthLastIndex(p []byte, c byte, n int) int {
	end := len(p)
	for range n {
		if end = bytes.LastIndexByte(p[:end], c); end < 0 {
			return -1
		}
	}
	return end
}

// plainPrefix returns the length of the prefix of p that passes unchanged:
// ASCII other than LF.
func plainPrefix(p []byte) int {
	for i, b := range p {
		if b == '\n' || b >= utf8.RuneSelf {
			return i
		}
	}
	return len(p)
}
