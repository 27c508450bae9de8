package screen

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFilter(t *testing.T) {
	t.Parallel()
	var in input
	for _, tt := range []struct{ in, want string }{
		{"plain", "plain"},
		{"a\nb\r\n", "a\r\nb\r\r\n"},
		{"\xe4\xb8", ""},           // held back
		{"\x96", "世"},              // completed
		{"\xf0\x9f", ""},           // held back
		{"", ""},                   // still held
		{"\x98", ""},               // still short
		{"\x80\n", "😀\r\n"},        // completed
		{"\xe4", ""},               // held back
		{"\x1b[m", "\uFFFD\x1b[m"}, // not continued: ESC survives
		{"\xc0\xaf\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD"},
	} {
		if got := string(in.filter([]byte(tt.in))); got != tt.want {
			t.Errorf("filter(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestChunk(t *testing.T) {
	t.Parallel()
	inputs := []string{
		strings.Repeat("世界", 10_000),
		strings.Repeat("y\r\n", 10_000),
		strings.Repeat("x", 40_000) + "\n" + strings.Repeat("é", 9_000),
		"short",
	}
	for _, in := range inputs {
		for _, lines := range []int{1, 7, 1 << 20} {
			var got []string
			for buf := []byte(in); len(buf) > 0; {
				c := chunk(buf, feedChunk, lines)
				if len(c) == 0 || len(c) > feedChunk || bytes.Count(c, newline) > lines {
					t.Fatalf("chunk of %d bytes, %d newlines", len(c), bytes.Count(c, newline))
				}
				if !utf8.Valid(c) {
					t.Fatalf("chunk splits a rune: %q", c[len(c)-3:])
				}
				got = append(got, string(c))
				buf = buf[len(c):]
			}
			if strings.Join(got, "") != in {
				t.Fatal("chunks do not add up to the input")
			}
		}
	}
}
