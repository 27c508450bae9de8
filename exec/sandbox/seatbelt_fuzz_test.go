package sandbox

import (
	"strings"
	"testing"
)

// FuzzSeatbeltProfile: whatever path an agent's request leads to, the
// profile either refuses it or holds it as one well-formed string: every
// line's parentheses balance outside strings, every string ends on its
// line, and the path's text cannot end a rule early.
func FuzzSeatbeltProfile(f *testing.F) {
	for _, s := range []string{"/work/proj", `/work/a "b"\c`, "/tmp/x\")(allow default)(\"", "/p\nq", "/\x00", "/é/ü", "/a\\", "/a\u2028b"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, root, hidden string) {
		if !strings.HasPrefix(root, "/") || !strings.HasPrefix(hidden, "/") {
			return
		}
		p, err := SeatbeltProfile(&Spec{Profile: Mutating, Roots: []string{root}, Hidden: []string{hidden}})
		if err != nil {
			return
		}
		for _, line := range strings.Split(strings.TrimSuffix(p, "\n"), "\n") {
			depth, inString, escaped := 0, false, false
			for _, r := range line {
				switch {
				case escaped:
					escaped = false
				case inString && r == '\\':
					escaped = true
				case r == '"':
					inString = !inString
				case !inString && r == '(':
					depth++
				case !inString && r == ')':
					depth--
					if depth < 0 {
						t.Fatalf("a rule closes early in %q", line)
					}
				}
			}
			if inString || depth != 0 || escaped {
				t.Fatalf("an unbalanced rule: %q", line)
			}
		}
	})
}
