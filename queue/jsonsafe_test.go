package queue

import (
	"encoding/json"
	"testing"
)

// TestJSONSafe: what a terminal would act on comes back as a \u escape,
// and the line still decodes to the same value.
func TestJSONSafe(t *testing.T) {
	for _, raw := range []string{`{"c":"ls"}`, "{\"c\":\"a\u202eb\"}", "{\"c\":\"x\u0085y\u007f\"}", "{\"c\":\"\U000e0041\"}"} {
		got := JSONSafe([]byte(raw))
		for _, c := range got {
			if c < 0x20 || c >= 0x7f {
				t.Errorf("JSONSafe(%q) = %q: holds byte %#x", raw, got, c)
			}
		}
		var want, have any
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(got, &have); err != nil || have.(map[string]any)["c"] != want.(map[string]any)["c"] {
			t.Errorf("JSONSafe(%q) = %q: decodes to %v (%v), want %v", raw, got, have, err, want)
		}
	}
}

// TestClip: a cut is marked, counts runes (never splits one) and drops
// the spaces before the mark; ClipEscaped never splits an escape either.
func TestClip(t *testing.T) {
	for i, c := range []struct {
		clip func(string, int) string
		in   string
		n    int
		want string
	}{
		{Clip, "short", 5, "short"},
		{Clip, "abcdefghij", 5, "abcd…"},
		{Clip, "ab   cdefgh", 5, "ab…"},
		{Clip, "议议议议议议", 3, "议议…"},
		{ClipEscaped, "short", 10, "short"},
		{ClipEscaped, `abcdefghij`, 5, "abcd…"},
		{ClipEscaped, `ab\x1bcdef`, 5, "ab…"},
		{ClipEscaped, `ab\u{202e}cdefgh`, 11, `ab\u{202e}…`},
		{ClipEscaped, `a\\bcdef`, 4, `a\\…`},
	} {
		if got := c.clip(c.in, c.n); got != c.want {
			t.Errorf("case %d: clip(%q, %d) = %q, want %q", i, c.in, c.n, got, c.want)
		}
	}
}
