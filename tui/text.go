package tui

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sluice-dev/sluice/queue"
)

// Agent-written text (commands, paths, notes, agent names) reaches the
// screen only through these functions: every control character, escape
// sequence, bidi override or invisible rune is shown escaped, in the
// Escaped style, and nothing an agent wrote can move the cursor or
// restyle the screen.

// escapeRune shows one rune (or an invalid byte) of agent text, and
// reports whether it had to be escaped. \n is left to the caller.
func escapeRune(s string) (string, bool) {
	out, ok := queue.Printable(s)
	return out, !ok
}

// maxShown is the most of one field of agent text the console lays out:
// beyond it a marker says how much more there is. A frame's work must not
// grow with what an agent sends (a 1 MiB command would take seconds a
// frame); a request too long to read here is one to deny, or to read with
// 'sluice ls --json'.
const maxShown = 4096

// clipRunes cuts s after n runes and reports how many bytes it dropped.
func clipRunes(s string, n int) (string, int) {
	if len(s) <= n {
		return s, 0
	}
	i := 0
	for ; n > 0 && i < len(s); n-- {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i], len(s) - i
}

// styledText renders agent text in base style, escapes in esc style, one
// output line per input line (\n splits lines; every other control is
// escaped). hidden reports whether anything was escaped. Past maxShown
// runes the text is cut, with a line saying how much was not shown.
func styledText(s string, base, esc lipgloss.Style) (lines []string, hidden bool) {
	s, dropped := clipRunes(s, maxShown)
	for _, line := range strings.Split(s, "\n") {
		var b, escaped strings.Builder
		plain := 0 // start of the pending plain run
		flush := func(end int) {
			if escaped.Len() > 0 {
				b.WriteString(esc.Render(escaped.String()))
				escaped.Reset()
			}
			if end > plain {
				b.WriteString(base.Render(line[plain:end]))
			}
		}
		for i := 0; i < len(line); {
			r, n := utf8.DecodeRuneInString(line[i:])
			// A backslash is shown as it is: what the escapes below stand
			// for is drawn in the Escaped style, so printf '\rbuild' reads
			// as what runs, and a real carriage return cannot pass for it.
			if r >= 0x20 && r < 0x7f {
				i += n
				continue
			}
			shown, isEscaped := escapeRune(line[i : i+n])
			if isEscaped {
				if i > plain {
					flush(i)
				}
				escaped.WriteString(shown) // consecutive escapes: one Render
				hidden = true
				plain = i + n
			}
			i += n
		}
		flush(len(line))
		lines = append(lines, b.String())
	}
	if dropped > 0 {
		lines = append(lines, esc.Render(fmt.Sprintf("… %d more bytes not shown: too long to review here (sluice ls --json shows it all)", dropped)))
	}
	return lines, hidden
}

// plainText is agent text escaped for a one-line place (a queue row, a
// notification): newlines escaped too.
func plainText(s string) string {
	s, dropped := clipRunes(s, maxShown)
	out, ok := queue.Printable(s)
	if ok {
		// Nothing in s needed escaping: show what runs as it is
		// (printf '\rbuild', not '\\rbuild'). Where something did, the
		// backslashes stay doubled, so that a real \r and a typed one
		// differ in a place without styles, and the row is flagged.
		out = s
	}
	if dropped > 0 {
		out += fmt.Sprintf("… (%d more bytes)", dropped)
	}
	return out
}

// hasHidden reports whether a request holds text that would be escaped:
// in its command, names and paths, in the strings of a tool's input, and
// in file content (where tabs are layout, not hidden).
func hasHidden(r *queue.Request) bool {
	for _, s := range []string{r.Command, r.Path, r.Note, r.Agent, r.Session, r.Cwd, r.Tool} {
		if hiddenText(s, false) {
			return true
		}
	}
	for _, s := range []string{r.Content, r.OldString, r.NewString, r.Diff} {
		if hiddenText(s, true) {
			return true
		}
	}
	if len(r.Input) > 0 {
		var v any
		if json.Unmarshal(r.Input, &v) != nil {
			return hiddenText(string(r.Input), false)
		}
		return hiddenValue(v)
	}
	return false
}

// hiddenText reports whether a line of s would be escaped; tabs pass when
// they are layout.
func hiddenText(s string, tabs bool) bool {
	for _, line := range strings.Split(s, "\n") {
		if tabs {
			line = strings.ReplaceAll(line, "\t", " ")
		}
		if _, ok := queue.Printable(line); !ok {
			return true
		}
	}
	return false
}

// hiddenValue walks a decoded JSON value's strings and keys.
func hiddenValue(v any) bool {
	switch v := v.(type) {
	case string:
		return hiddenText(v, false)
	case []any:
		for _, e := range v {
			if hiddenValue(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if hiddenText(k, false) || hiddenValue(e) {
				return true
			}
		}
	}
	return false
}

// wrap hard-wraps styled lines to width cells: long lines continue on the
// next line, never cut.
func wrap(lines []string, width int) []string {
	if width < 1 {
		width = 1
	}
	var out []string
	for _, l := range lines {
		if ansi.StringWidth(l) <= width {
			out = append(out, l)
			continue
		}
		out = append(out, strings.Split(ansi.Hardwrap(l, width, true), "\n")...)
	}
	return out
}

// fit pads or cuts a styled line to exactly width cells.
func fit(s string, width int) string {
	w := ansi.StringWidth(s)
	switch {
	case w > width:
		return ansi.Truncate(s, width, "…")
	case w < width:
		return s + strings.Repeat(" ", width-w)
	}
	return s
}

// Folding: a run of at least foldLines blank lines, or of foldSpaces
// spaces, is how an agent pushes the end of a command out of sight (80
// newlines after "npm install", then "curl … | sh").
const (
	foldLines  = 3
	foldSpaces = 16
)

// layoutTricks says how a command's layout could hide part of it ("81
// blank lines in a row; a run of 200 spaces"), or "".
func layoutTricks(cmd string) string {
	blank, spaces := longestRuns(cmd)
	var out []string
	if blank >= foldLines {
		out = append(out, fmt.Sprintf("%d blank lines in a row", blank))
	}
	if spaces >= foldSpaces {
		out = append(out, fmt.Sprintf("a run of %d spaces", spaces))
	}
	return strings.Join(out, "; ")
}

// longestRuns is the longest run of blank (empty or all-space) lines and
// of spaces in s.
func longestRuns(s string) (blank, spaces int) {
	s, _ = clipRunes(s, maxShown)
	run := 0
	for _, line := range strings.Split(s, "\n") {
		if strings.Trim(line, " \t") == "" {
			run++
			blank = max(blank, run)
		} else {
			run = 0
		}
		n := 0
		for i := 0; i < len(line); i++ {
			if line[i] == ' ' {
				n++
				spaces = max(spaces, n)
			} else {
				n = 0
			}
		}
	}
	return blank, spaces
}

// foldedText is styledText with runs of blank lines folded into one
// marker line and long runs of spaces into a marker span, in esc style.
func foldedText(s string, base, esc lipgloss.Style) []string {
	s, dropped := clipRunes(s, maxShown)
	var out []string
	lines := strings.Split(s, "\n")
	for i := 0; i < len(lines); {
		j := i
		for j < len(lines) && strings.Trim(lines[j], " \t") == "" {
			j++
		}
		if j-i >= foldLines {
			out = append(out, esc.Render(fmt.Sprintf("⟨%d blank lines⟩", j-i)))
			i = j
			continue
		}
		out = append(out, foldSpaceRuns(lines[i], base, esc))
		i++
	}
	if dropped > 0 {
		out = append(out, esc.Render(fmt.Sprintf("… %d more bytes not shown: too long to review here (sluice ls --json shows it all)", dropped)))
	}
	return out
}

// foldSpaceRuns styles one line, long runs of spaces shown as ⟨N spaces⟩.
func foldSpaceRuns(line string, base, esc lipgloss.Style) string {
	var b strings.Builder
	start := 0
	for i := 0; i < len(line); {
		if line[i] != ' ' {
			i++
			continue
		}
		j := i
		for j < len(line) && line[j] == ' ' {
			j++
		}
		if j-i >= foldSpaces {
			seg, _ := styledText(line[start:i], base, esc)
			b.WriteString(seg[0])
			b.WriteString(esc.Render(fmt.Sprintf("⟨%d spaces⟩", j-i)))
			start = j
		}
		i = j
	}
	seg, _ := styledText(line[start:], base, esc)
	b.WriteString(seg[0])
	return b.String()
}

// wordWrap wraps one styled line of sluice's own words (not agent text,
// which wrap keeps exact) at spaces where it can, to width cells.
func wordWrap(line string, width int) []string {
	return strings.Split(ansi.Wrap(line, max(1, width), ""), "\n")
}
