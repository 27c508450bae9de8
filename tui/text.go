package tui

import (
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

// styledText renders agent text in base style, escapes in esc style, one
// output line per input line (\n splits lines; every other control is
// escaped). hidden reports whether anything was escaped.
func styledText(s string, base, esc lipgloss.Style) (lines []string, hidden bool) {
	for _, line := range strings.Split(s, "\n") {
		var b strings.Builder
		plain := 0 // start of the pending plain run
		flush := func(end int) {
			if end > plain {
				b.WriteString(base.Render(line[plain:end]))
			}
		}
		for i := 0; i < len(line); {
			r, n := utf8.DecodeRuneInString(line[i:])
			if r == '\\' || (r >= 0x20 && r < 0x7f) {
				i += n
				continue
			}
			shown, escaped := escapeRune(line[i : i+n])
			if escaped {
				flush(i)
				b.WriteString(esc.Render(shown))
				hidden = true
				plain = i + n
			}
			i += n
		}
		flush(len(line))
		lines = append(lines, b.String())
	}
	return lines, hidden
}

// plainText is agent text escaped for a one-line place (a queue row, a
// notification): newlines escaped too.
func plainText(s string) string {
	out, _ := queue.Printable(s)
	return out
}

// hasHidden reports whether a request holds text that would be escaped.
func hasHidden(r *queue.Request) bool {
	for _, s := range []string{r.Command, r.Path, r.Note, r.Agent, r.Session, r.Cwd, r.Tool} {
		for _, line := range strings.Split(s, "\n") {
			if _, ok := queue.Printable(line); !ok {
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
