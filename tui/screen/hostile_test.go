package screen

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// hostile is output a child could use to reach past its pane.
var hostile = []string{
	"\x1b]52;c;c2VjcmV0\x07",                           // OSC 52 clipboard, BEL
	"\x1b]52;c;c2VjcmV0\x1b\\",                         // OSC 52, ST
	"\x1b]0;pwned title\x07",                           // OSC 0 title
	"\x1b]2;title\x9c",                                 // OSC 2, C1 ST
	"\x1b]8;;https://evil.example\x07link\x1b]8;;\x07", // hyperlink
	"\x1b[2J\x1b[3J\x1b[H",                             // clear screen and scrollback
	"\a\a\a",                                           // bell
	"\x1bP1$qm\x1b\\",                                  // DCS DECRQSS
	"\x1bPq#0;2;0;0;0#0~~@@vv@@~~\x1b\\",               // sixel
	"\x1b_Gf=100;AAAA\x1b\\",                           // APC (kitty graphics)
	"\x1b^privacy\x1b\\",                               // PM
	"\x1bXsos\x1b\\",                                   // SOS
	"\x9b31m\x9d0;t\x07\x90q\x9c",                      // 8-bit C1 controls
	"\u009b31m\u0085\u009d",                            // C1 controls as UTF-8
	"\x1b[?1049h\x1b[?25l\x1b[5;5Halt",                 // alternate screen, hide cursor, CUP
	"\x1b[?1049l",
	"\x1b7\x1b[99;99Hx\x1b8",                 // save cursor, CUP, restore
	"\x1b[21t\x1b[18t\x1b[>0q",               // title and size reports, XTVERSION
	"\x1b[4:3m\x1b[58;2;1;2;3mcurly\x1b[m",   // underline style and colour
	"\x1b[38;2;255;0;0;48;5;200mtrue colour", // left unreset on purpose
	"\x1b#8",                                 // DECALN fills the screen with E
	"\x1b(0lqqk\x1b(B",                       // DEC line drawing
	"\x1bc",                                  // RIS
	"\x1b[1000;1006;1015h",                   // mouse reporting
	"e\u0301\u200d\U0001F469\u200d\U0001F4BB\U0001F1FA\U0001F1F8", // clusters
	"\ufe0f\u0300 \x1b[31m\u200b\u2028",
	strings.Repeat("\x1b[", 100) + "m",
	"\x1b[" + strings.Repeat("9", 50) + "C\x1b[" + strings.Repeat("9", 50) + "@",
	"\x1b[1;999r\x1b[999S\x1b[999T\x1b[999L\x1b[999M",
	"x\x1b[2147483647b\x1b[2147483647X\x1b[2147483647I", // counts x/vt loops over
}

func TestHostileOutputStaysInPane(t *testing.T) {
	t.Parallel()
	for i, h := range hostile {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			s := newScreen(t, 30, 6, nil)
			write(t, s, "before\n", h, "after")
			for _, height := range []int{1, 6} {
				out := s.Render(height)
				checkRender(t, out, 30, height)
				if strings.Contains(out, "evil.example") || strings.Contains(out, "\a") {
					t.Fatalf("Render leaked %q", out)
				}
			}
			s.ScrollUp(3)
			render(t, s, 6)
		})
	}
	t.Run("all", func(t *testing.T) {
		t.Parallel()
		s := newScreen(t, 30, 6, nil)
		for range 3 {
			write(t, s, hostile...)
			render(t, s, 6)
		}
	})
}

func TestFlood(t *testing.T) {
	t.Parallel()
	s := newScreen(t, 40, 5, nil)
	write(t, s, "\x1b[?1049h\x1b]0;") // in an OSC string, on the alternate screen
	var b bytes.Buffer
	for i := 0; b.Len() < 1<<20; i++ {
		fmt.Fprintf(&b, "\x1b[3%dmflood line %d\x1b[m\n", i%8, i)
	}
	b.WriteString("last line")
	start := time.Now()
	write(t, s, b.String())
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("1 MiB Write took %v", d)
	}
	if s.emu.IsAltScreen() {
		t.Error("still on the alternate screen after a flood reset")
	}
	if got := render(t, s, 5); got[4] != "last line" {
		t.Fatalf("after flood Render = %q", got)
	}
	// The tail, not the whole Write, went through the emulator.
	if n := s.emu.ScrollbackLen(); n > TailSize/10 {
		t.Errorf("scrollback holds %d lines; want only the tail's", n)
	}
}

func TestHugeCountsStayCheap(t *testing.T) {
	t.Parallel()
	for _, seq := range []string{"b", "X", "I", "Z", "@", "P", "L", "M", "S", "T", "E", "F"} {
		t.Run(seq, func(t *testing.T) {
			t.Parallel()
			s := newScreen(t, 200, 50, nil)
			start := time.Now()
			write(t, s, "ab\x1b[2147483647"+seq+"c")
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("CSI 2147483647 %s took %v", seq, d)
			}
			render(t, s, 50)
		})
	}
	t.Run("REP still repeats", func(t *testing.T) {
		t.Parallel()
		s := newScreen(t, 10, 3, nil)
		write(t, s, "ab\x1b[3b|")
		if got := render(t, s, 3); got[0] != "abbbb|" {
			t.Errorf("REP 3 = %q", got[0])
		}
		// 1,000,004 z from the second row: full rows, then four columns.
		write(t, s, "\r\nz\x1b[1000003b|")
		if got := render(t, s, 3); got[0] != "zzzzzzzzzz" || got[1] != "zzzzzzzzzz" || got[2] != "zzzz|" {
			t.Errorf("huge REP = %q", got)
		}
	})
}

func TestFloodOfShortLines(t *testing.T) {
	t.Parallel()
	s := newScreen(t, 80, 24, nil)
	write(t, s, strings.Repeat("y\n", 50_000)+"end")
	got := render(t, s, 24)
	if got[22] != "y" || got[23] != "end" {
		t.Fatalf("Render = %q", got)
	}
	s.mu.Lock()
	n := s.emu.ScrollbackLen()
	s.mu.Unlock()
	if limit := floodCells / (80 * 24) / 2; n > limit {
		t.Errorf("scrollback holds %d lines; want at most the %d of the tail", n, limit)
	}
}

func TestMarginsBeyondScreen(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, in string }{
		{"DECSTBM bottom", "\x1b[2;999r\x1b[1S\x1b[3L\x1b[2M\x1b[99T"},
		{"DECSTBM top and bottom", "\x1b[999;9999r\x1b[1S"},
		{"DECSTBM no top", "\x1b[;999r\x1b[99S\x1b[999T\x1b[999L\x1b[999M"},
		{"DECSLRM right", "\x1b[?69h\x1b[2;999s\x1b[5@\x1b[5P\x1b[1S\x1b[1T\x1b[2L\x1b[2Mxyz\x1b[?69l"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newScreen(t, 10, 5, nil)
			write(t, s, "\x1b[Hline1\nline2\n", tt.in, "\x1b[r\x1b[Hline1")
			s.mu.Lock()
			panics := s.panics
			s.mu.Unlock()
			if panics != 0 {
				t.Errorf("x/vt panicked %d times", panics)
			}
			if got := render(t, s, 5); got[0] != "line1" {
				t.Errorf("Render = %q", got)
			}
		})
	}
}
