package queue

import (
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// ClipEscaped shortens s, the output of Printable, to n runes,
// marking the cut, and never cuts an escape (\x1b, \u{202e}) in two.
func ClipEscaped(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	limit := n - 1 // room for the mark
	i := 0
	for i < len(r) {
		step := 1
		if r[i] == '\\' && i+1 < len(r) {
			switch r[i+1] {
			case 'x':
				step = 4
			case 'u':
				step = 2
				for i+step < len(r) && r[i+step-1] != '}' {
					step++
				}
			default:
				step = 2
			}
		}
		if i+step > limit {
			break
		}
		i += step
	}
	return strings.TrimRight(string(r[:i]), " ") + "…"
}

// Clip shortens s to n runes, marking the cut (for the agent text an
// error message quotes; it escapes nothing).
func Clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:n-1]), " ") + "…"
}

// JSONSafe returns a JSON line with every character a terminal would act
// on written as a \u escape: the same JSON value, safe to print. Lines
// sluice wrote hold no raw control characters (encoding/json escapes them),
// but DEL, C1 controls and bidi or invisible format characters pass
// through encoding/json as they are.
func JSONSafe(raw []byte) []byte {
	clean := true
	for _, c := range raw {
		if c < 0x20 || c >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return raw
	}
	out := make([]byte, 0, len(raw)+32)
	for s := string(raw); len(s) > 0; {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size <= 1: // not UTF-8: JSON cannot hold it
			out = append(out, `\ufffd`...)
		case r < 0x80 && (r < 0x20 || r == 0x7f):
			out = fmt.Appendf(out, `\u%04x`, r)
		case r < 0x80:
			out = append(out, byte(r))
		case isPrintable(s[:size]):
			out = append(out, s[:size]...)
		case r > 0xffff:
			hi, lo := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, hi, lo)
		default:
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		s = s[size:]
	}
	return out
}

func isPrintable(s string) bool {
	_, ok := Printable(s)
	return ok
}
