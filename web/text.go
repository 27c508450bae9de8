package web

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sluice-dev/sluice/queue"
	"github.com/sluice-dev/sluice/web/devices"
)

// Seg is one piece of agent text as the page shows it. The page puts T in
// the DOM with textContent, never as markup.
type Seg struct {
	T string  `json:"t"`
	K SegKind `json:"k,omitempty"`
}

// SegKind says how the page marks a segment.
type SegKind string

// The segment kinds.
const (
	SegText SegKind = ""     // the text as written
	SegEsc  SegKind = "esc"  // a hidden character, shown as its escape (\x1b, \u{202e})
	SegFold SegKind = "fold" // a folded run of blank lines or spaces: ⟨N blank lines⟩
)

// Shown is agent text cut into lines of segments, with what was done to it.
type Shown struct {
	Lines  [][]Seg `json:"lines"`
	Hidden bool    `json:"hidden,omitempty"` // a hidden character was escaped
	Folded bool    `json:"folded,omitempty"` // a run was folded
}

// The console's folding thresholds (protocol section 7).
const (
	foldBlankLines = 3
	foldSpaces     = 16
)

// Shape cuts s into lines (at \n) of segments for the page: every
// character queue.Printable would escape (controls, ESC, bidi overrides
// and isolates, zero-width and other invisible characters, invalid UTF-8)
// becomes an escape segment, runs of 3 or more blank lines and of 16 or
// more spaces become one marked fold. Nothing in the result is markup, and
// no character in a text segment changes how the text around it reads.
func Shape(s string) Shown {
	var sh Shown
	lines := strings.Split(s, "\n")
	for i := 0; i < len(lines); {
		j := i
		for j < len(lines) && blank(lines[j]) {
			j++
		}
		if n := j - i; n >= foldBlankLines {
			sh.Lines = append(sh.Lines, []Seg{{T: fmt.Sprintf("⟨%d blank lines⟩", n), K: SegFold}})
			sh.Folded = true
			i = j
			continue
		}
		sh.Lines = append(sh.Lines, shapeLine(lines[i], &sh))
		i++
	}
	return sh
}

// ShapeLine is Shape for one line of text (a name, a path, a reason):
// newlines are escaped, not split.
func ShapeLine(s string) Shown {
	var sh Shown
	sh.Lines = [][]Seg{shapeLine(s, &sh)}
	return sh
}

func blank(l string) bool { return strings.TrimLeft(l, " ") == "" }

func shapeLine(l string, sh *Shown) []Seg {
	var segs []Seg
	var text strings.Builder
	flush := func() {
		if text.Len() > 0 {
			segs = append(segs, Seg{T: text.String()})
			text.Reset()
		}
	}
	for i := 0; i < len(l); {
		c := l[i]
		if c == ' ' {
			j := i
			for j < len(l) && l[j] == ' ' {
				j++
			}
			if n := j - i; n >= foldSpaces {
				flush()
				segs = append(segs, Seg{T: fmt.Sprintf("⟨%d spaces⟩", n), K: SegFold})
				sh.Folded = true
			} else {
				text.WriteString(l[i:j])
			}
			i = j
			continue
		}
		if c > 0x20 && c < 0x7f {
			text.WriteByte(c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(l[i:])
		if r == utf8.RuneError && n <= 1 {
			flush()
			segs = append(segs, Seg{T: fmt.Sprintf(`\x%02x`, c), K: SegEsc})
			sh.Hidden = true
			i++
			continue
		}
		if esc, ok := queue.Printable(l[i : i+n]); !ok {
			flush()
			segs = append(segs, Seg{T: esc, K: SegEsc})
			sh.Hidden = true
		} else {
			text.WriteString(l[i : i+n])
		}
		i += n
	}
	flush()
	if segs == nil {
		segs = []Seg{}
	}
	return segs
}

// Plain is s made safe for one line of plain text elsewhere (a
// notification's title and body): queue.Printable, cut to n runes.
func Plain(s string, n int) string { return devices.Plain(s, n) }
