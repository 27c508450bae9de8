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

// TestClipEscaped: a cut never splits an escape and is marked.
func TestClipEscaped(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{`abcdefghij`, 5, "abcd…"},
		{`ab\x1bcdef`, 5, "ab…"},
		{`ab\u{202e}cdefgh`, 11, `ab\u{202e}…`},
		{`a\\bcdef`, 4, `a\\…`},
	} {
		if got := ClipEscaped(c.in, c.n); got != c.want {
			t.Errorf("ClipEscaped(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

// TestClip: a cut is marked, counts runes (never splits one) and drops
// the spaces before the mark.
func TestClip(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 5, "short"},
		{"abcdefghij", 5, "abcd…"},
		{"ab   cdefgh", 5, "ab…"},
		{"议议议议议议", 3, "议议…"},
	} {
		if got := Clip(c.in, c.n); got != c.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
