package hub

import (
	"encoding/json"
	"unicode/utf8"
)

func jsonUnmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// termText keeps what a box streams as text a terminal shows as such:
// printable characters, newlines and tabs; escape sequences and other
// control characters (a title, a clipboard write) are dropped.
func termText(p []byte) []byte {
	out := make([]byte, 0, len(p))
	for len(p) > 0 {
		r, n := utf8.DecodeRune(p)
		switch {
		case r == utf8.RuneError && n <= 1:
		case r == '\n' || r == '\t':
			out = append(out, byte(r))
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
		default:
			out = append(out, p[:n]...)
		}
		p = p[n:]
	}
	return out
}
