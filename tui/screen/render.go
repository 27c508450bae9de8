package screen

import (
	"strings"
	"unicode"
	"unicode/utf8"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
)

// sgrReset ends every styled line, so no style leaks into the layout.
const sgrReset = "\x1b[m"

// Render returns the view as exactly min(height, rows) lines joined by
// "\n" (no trailing newline); blank lines are empty strings, and it returns
// "" if height < 1.
//
// While following, the view is the screen; if height is smaller than the
// screen, it is the part of the screen that ends at the cursor or the last
// written row, whichever is lower. After ScrollUp it is a window into the
// scrollback and the screen as they were when scrolling began.
//
// Each line holds text and SGR sequences only, is at most cols cells wide
// by ansi.StringWidth, has no trailing blanks, and ends with an SGR reset
// if it is styled. Hyperlinks are dropped and control characters that
// reached a cell are removed.
func (s *Screen) Render(height int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	cols, rows := s.emu.Width(), s.emu.Height()
	n := min(height, rows)
	if n < 1 {
		return ""
	}
	s.view.height = n

	var b strings.Builder
	b.Grow(n * (cols + 16))
	if s.view.frozen == nil {
		top := s.followTop(n)
		for y := top; y < top+n; y++ {
			if y > top {
				b.WriteByte('\n')
			}
			writeLine(&b, cols, func(x int) *uv.Cell { return s.emu.CellAt(x, y) }, cols)
		}
		return b.String()
	}

	lines := s.view.window(n)
	for i := range n {
		if i > 0 {
			b.WriteByte('\n')
		}
		if i < len(lines) {
			line := lines[i]
			writeLine(&b, len(line), func(x int) *uv.Cell { return &line[x] }, cols)
		}
	}
	return b.String()
}

// followTop returns the first screen row shown by an n-row view that
// follows the output.
func (s *Screen) followTop(n int) int {
	rows := s.emu.Height()
	if n >= rows {
		return 0
	}
	bottom := s.emu.CursorPosition().Y + 1
	for y := rows - 1; y >= bottom; y-- {
		if !s.rowBlank(y) {
			bottom = y + 1
			break
		}
	}
	return min(max(bottom-n, 0), rows-n)
}

func (s *Screen) rowBlank(y int) bool {
	for x := range s.emu.Width() {
		if c := s.emu.CellAt(x, y); c != nil && !blank(c) && (c.Width != 0 || c.Content != "") {
			return false
		}
	}
	return true
}

// writeLine renders width cells, got from at, as at most cols cells of text
// and SGR. Unlike uv's Line.Render it emits no hyperlinks, strips control
// characters, stops at cols and drops trailing blanks.
func writeLine(b *strings.Builder, width int, at func(x int) *uv.Cell, cols int) {
	start := b.Len()
	var pen uv.Style
	styled, wide := false, false
	used, pending := 0, 0 // cells written; blank cells not yet written
	for x := range width {
		c := at(x)
		if c == nil || c.Width == 0 && c.Content == "" { // second half of a wide cell
			continue
		}
		if blank(c) {
			pending++
			continue
		}
		w := max(c.Width, 1)
		if used+pending+w > cols {
			break
		}
		if pending > 0 {
			if !plain(&pen) {
				b.WriteString(sgrReset)
				pen = uv.Style{}
			}
			b.WriteString(strings.Repeat(" ", pending))
			used, pending = used+pending, 0
		}
		if !c.Style.Equal(&pen) {
			b.WriteString(c.Style.Diff(&pen))
			pen, styled = c.Style, true
		}
		wide = writeContent(b, c.Content, w) || wide
		used += w
	}
	if styled {
		b.WriteString(sgrReset)
	}
	// x/vt measures a cell once, when it is written; lipgloss measures the
	// line with ansi.StringWidth. Trust the latter for anything non-ASCII.
	if wide {
		if line := b.String()[start:]; ansi.StringWidth(line) > cols {
			line = ansi.Truncate(line, cols, "")
			if styled {
				line += sgrReset
			}
			rewrite(b, start, line)
		}
	}
}

// rewrite replaces what b holds from start with s.
func rewrite(b *strings.Builder, start int, s string) {
	head := b.String()[:start]
	b.Reset()
	b.WriteString(head)
	b.WriteString(s)
}

// blank reports whether c draws as an unstyled space.
func blank(c *uv.Cell) bool {
	return (c.Content == " " || c.Content == "") && plain(&c.Style)
}

// plain is st.IsZero without comparing whole structs, which showed in
// profiles of Render.
func plain(st *uv.Style) bool {
	return st.Fg == nil && st.Bg == nil && st.UnderlineColor == nil && st.Underline == 0 && st.Attrs == 0
}

// writeContent writes a cell's text, w cells wide, without control
// characters, and reports whether it held anything but ASCII.
func writeContent(b *strings.Builder, s string, w int) bool {
	if safeASCII(s) {
		b.WriteString(s)
		return false
	}
	clean := strings.Map(func(r rune) rune {
		if r < 0x20 || (r >= 0x7F && r < 0xA0) { // C0, DEL, C1
			return -1
		}
		if unicode.Is(unicode.Cf, r) && r != 0x200D { // bidi controls, zero-width (ZWJ joins emoji)
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, string(utf8.RuneError)))
	if clean == "" {
		clean = strings.Repeat(" ", w)
	}
	b.WriteString(clean)
	return true
}

func safeASCII(s string) bool {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c >= 0x7F {
			return false
		}
	}
	return true
}
