package devices

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// What a browser sends as its user agent is kept as one line of plain
// text: no escape reaches a terminal, and a long one is cut to n runes
// with an ellipsis.
func TestPlain(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"Firefox", "Firefox"},
		{"Firefox/132.0", "Firefox…"},
		{"ünïcødé", "ünïcødé"},
		{strings.Repeat("é", 10), strings.Repeat("é", 7) + "…"},
	} {
		if got := Plain(c.in, 8); got != c.want {
			t.Errorf("Plain(%q, 8) = %q, want %q", c.in, got, c.want)
		}
	}
	got := Plain("a\x1b]52;c;aGk=\x07\nb"+strings.Repeat("x", 200), 40)
	if strings.ContainsAny(got, "\x1b\x07\n") || utf8.RuneCountInString(got) != 40 || !strings.HasSuffix(got, "…") {
		t.Errorf("Plain of escapes and a long tail: %q", got)
	}
}
