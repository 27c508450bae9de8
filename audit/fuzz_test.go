package audit

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/sluice-dev/sluice/queue"
)

// FuzzDecodeLine feeds arbitrary bytes to the line decoder: it must never
// panic; what it accepts must have the frame Verify reads (seq, prev and
// hash agree with the decoded event); re-encoding what it accepts must give
// a line that decodes, re-encodes to the same bytes, and whose hash
// verifies; and the text fields must print without anything a terminal
// would act on.
func FuzzDecodeLine(f *testing.F) {
	for _, line := range testLines(f, 8) {
		f.Add(line)
	}
	for _, s := range []string{
		`{"seq":1,"ts":"2026-11-21T15:04:05Z","event":"queued","prev":"","hash":"0000000000000000000000000000000000000000000000000000000000000000"}`,
		`{"seq":1,"seq":2,"ts":"2026-11-21T15:04:05Z","event":"queued","prev":"","hash":"0000000000000000000000000000000000000000000000000000000000000000"}`,
		`{"seq":1,"ts":"x","event":"queued","command":"\u001b]0;pwned\u0007 \u202e","prev":"","hash":"0000000000000000000000000000000000000000000000000000000000000000"}`,
		`{"seq":1,"ts":"2026-11-21T15:04:05Z","event":"audit_repaired","torn":{"offset":1,"bytes":2,"sha256":"x"},"prev":"","hash":"0000000000000000000000000000000000000000000000000000000000000000"}`,
		`{"seq":99999999999999999999,"ts":"2026-11-21T15:04:05Z","event":"queued","prev":"","hash":"0000000000000000000000000000000000000000000000000000000000000000"}`,
		"{\"seq\":1,\"ts\":\"2026-11-21T15:04:05Z\",\"event\":\"\xff\",\"prev\":\"\",\"hash\":\"0000000000000000000000000000000000000000000000000000000000000000\"}",
		`{"seq":1,"ts":"","event":"q","prev":"","hash":"0000000000000000000000000000000000000000000000000000000000000000"}`,
		"",
		"\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := DecodeLine(data)
		if err != nil {
			if ev != nil {
				t.Fatal("an event and an error")
			}
			return
		}
		fr, ok := parseFrame(bytes.TrimSuffix(data, []byte("\n")))
		if !ok || fr.seq != ev.Seq || string(fr.prev) != ev.Prev || string(fr.hash) != ev.Hash || ev.Seq < 1 {
			t.Fatalf("decoded %+v from a line whose frame is %+v (%v)", ev, fr, ok)
		}
		line, err := newEncoder().appendLine(nil, ev)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		again, err := DecodeLine(line)
		if err != nil {
			t.Fatalf("own encoding refused: %v\n%s", err, line)
		}
		// One decode settles what JSON leaves open (an empty list decodes
		// as empty and encodes as nothing); from then on a round trip
		// changes nothing.
		line2, err := newEncoder().appendLine(nil, again)
		if err != nil || !bytes.Equal(line, line2) {
			t.Fatalf("round trip changed the line:\n%s\n%s", line, line2)
		}
		fr, _ = parseFrame(line[:len(line)-1])
		if h := newHasher().canonical(line[:len(line)-1], fr); string(h) != again.Hash {
			t.Fatalf("own line's hash does not verify: %s", line)
		}
		for _, s := range []string{ev.Command, ev.Path, ev.Cwd, ev.Agent, ev.Actor, ev.Reason, string(ev.Event)} {
			p, _ := queue.Printable(s)
			if !utf8.ValidString(p) || bytes.ContainsFunc([]byte(p), func(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }) {
				t.Fatalf("Printable left a control character in %q", p)
			}
		}
	})
}

// FuzzVerify feeds arbitrary bytes to Verify: it must never panic; a break
// it reports must be within the log and name a known kind; and a log it
// passes must decode line by line (but for repaired torn lines) into events
// with seq 1, 2, 3, … each chained to the one before.
func FuzzVerify(f *testing.F) {
	lines := testLines(f, 6)
	f.Add(join(lines))
	f.Add(join(lines[1:]))
	f.Add(join([][]byte{lines[0], lines[2]}))
	f.Add(join([][]byte{lines[1], lines[0]}))
	f.Add(append(join(lines[:3]), lines[3][:40]...))
	f.Add(append(join(lines[:3]), "\x00\x00\n"...))
	f.Add([]byte("\n\n\n"))
	f.Add([]byte(`{"seq":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := verifyBytes(data)
		rep2, err2 := verifyBytes(data)
		if !reflect.DeepEqual(rep, rep2) || (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) {
			t.Fatal("Verify is not deterministic")
		}
		all := splitLines(data)
		if len(all[len(all)-1]) == 0 {
			all = all[:len(all)-1]
		}
		if err != nil {
			var ce *ChainError
			if !errors.As(err, &ce) {
				t.Fatalf("Verify of bytes in memory returned %v, not a *ChainError", err)
			}
			switch ce.Kind {
			case Edited, Removed, Reordered, Inserted, Torn:
			default:
				t.Fatalf("unknown kind %q", ce.Kind)
			}
			if ce.Line < 1 || ce.Line > int64(len(all)) || ce.Offset != offsetOf(data, ce.Line) {
				t.Fatalf("break at line %d (byte %d) of %d lines", ce.Line, ce.Offset, len(all))
			}
			return
		}
		if rep.Lines != int64(len(all)) {
			t.Fatalf("report says %d lines, the log has %d", rep.Lines, len(all))
		}
		torn := map[int64]bool{}
		for _, r := range rep.Repaired {
			for i := range r.Lines {
				torn[r.Line+i] = true
			}
		}
		prev, seq := "", int64(0)
		for i, line := range all {
			if torn[int64(i+1)] {
				continue
			}
			ev, err := DecodeLine(line)
			if err != nil {
				t.Fatalf("line %d passed Verify but does not decode: %v", i+1, err)
			}
			if ev.Seq != seq+1 || ev.Prev != prev {
				t.Fatalf("line %d passed Verify out of chain", i+1)
			}
			prev, seq = ev.Hash, ev.Seq
		}
		if seq != rep.Events || prev != rep.Head {
			t.Fatalf("report %+v, log ends at seq %d", rep, seq)
		}
	})
}

// FuzzVerifyTamper changes one byte of a valid log, anywhere, to anything
// else: Verify must always notice.
func FuzzVerifyTamper(f *testing.F) {
	f.Add(uint8(5), uint32(0), byte('x'))
	f.Add(uint8(5), uint32(200), byte('\n'))
	f.Add(uint8(3), uint32(1000), byte('0'))
	f.Add(uint8(1), uint32(99999), byte('}'))
	f.Fuzz(func(t *testing.T, n uint8, pos uint32, b byte) {
		data := join(testLines(t, int(n%8)+1))
		i := int(pos) % len(data)
		if data[i] == b {
			return
		}
		data[i] = b
		if _, err := verifyBytes(data); err == nil {
			t.Fatalf("Verify missed byte %d changed to %q:\n%s", i, b, data)
		}
	})
}
