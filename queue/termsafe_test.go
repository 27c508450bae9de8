package queue

import (
	"strings"
	"testing"
)

// TestTermSafe: what a child prints reaches the person's terminal as
// text only: no clipboard write (OSC 52), no title, no cursor moves, no
// C1 controls, even when a sequence is split across writes.
func TestTermSafe(t *testing.T) {
	t.Parallel()
	in := "ok\n\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07\x1b[31mred\x1b[0m\r\n\x1b]0;title\x1b\\\x1bPdcs\x1b\\tab\there\u009bX\x00é\n"
	for _, split := range []int{1, 3, len(in)} {
		var b strings.Builder
		ts := &TermSafe{W: &b}
		for i := 0; i < len(in); i += split {
			end := min(i+split, len(in))
			if _, err := ts.Write([]byte(in[i:end])); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := b.String(), "ok\nred\r\ntab\thereXé\n"; got != want {
			t.Errorf("split %d: got %q, want %q", split, got, want)
		}
	}
}
