package queue

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable returns s with everything that could change how a terminal
// shows it replaced by a visible escape: control characters (\n, \t,
// \x1b, …), C1 controls, bidi overrides and isolates, zero-width and other
// invisible format characters, line and paragraph separators, and invalid
// UTF-8 bytes. ok is false when anything was escaped, so the caller can
// flag the text. Printable never returns a string a terminal would
// interpret.
//
// A backslash is doubled only where it would read as one of these
// escapes (before n, t, r, x, u or another backslash), so the output
// decodes one way and a command like grep 'a\|b' reads as typed. Every
// place sluice shows agent text (console, ls, show, approve, audit tail)
// goes through this function, so a command looks the same in all of them.
func Printable(s string) (out string, ok bool) {
	clean := true
	for i, r := range s {
		if r == utf8.RuneError || r == '\\' && EscapeLike(s, i+1) || hidden(r) {
			clean = false
			break
		}
	}
	if clean {
		return s, true
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	ok = true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
			ok = false
		case r == '\\' && EscapeLike(s, i+1):
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
			ok = false
		case r == '\t':
			b.WriteString(`\t`)
			ok = false
		case r == '\r':
			b.WriteString(`\r`)
			ok = false
		case r < 0x80 && hidden(r):
			fmt.Fprintf(&b, `\x%02x`, r)
			ok = false
		case hidden(r):
			fmt.Fprintf(&b, `\u{%04x}`, r)
			ok = false
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String(), ok
}

// EscapeLike reports whether a backslash before s[i:] would run into an
// escape: the next character is one an escape starts with (n, t, r, x, u,
// a backslash) or is itself shown escaped. Such a backslash is doubled.
func EscapeLike(s string, i int) bool {
	if i >= len(s) {
		return false
	}
	switch s[i] {
	case 'n', 't', 'r', 'x', 'u', '\\':
		return true
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	return r == utf8.RuneError && n <= 1 || hidden(r)
}

// hidden reports whether a terminal would act on r, or show it as nothing
// or as something else.
func hidden(r rune) bool {
	return unicode.Is(unicode.Cc, r) || // C0, DEL, C1
		unicode.Is(unicode.Cf, r) || // bidi controls, zero-width, tags, soft hyphen
		unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r) ||
		unicode.Is(unicode.Co, r) || // private use: fonts draw anything there
		(r >= 0xFE00 && r <= 0xFE0F) || (r >= 0xE0100 && r <= 0xE01EF) || // variation selectors
		r == 0x115F || r == 0x1160 || r == 0x3164 || r == 0xFFA0 || // Hangul fillers render blank
		r == 0xFFFD // replacement char: someone else's decoding error
}
