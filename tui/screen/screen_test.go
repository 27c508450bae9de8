package screen

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newScreen returns a Screen closed when the test ends.
func newScreen(t testing.TB, cols, rows int, reply func([]byte)) *Screen {
	t.Helper()
	s := New(cols, rows, reply)
	t.Cleanup(s.Close)
	return s
}

// size returns the emulator's size under the lock.
func (s *Screen) size() (cols, rows int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emu.Width(), s.emu.Height()
}

func write(t testing.TB, s *Screen, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if n, err := s.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v; want %d, nil", p, n, err, len(p))
		}
	}
}

// render renders height rows, checks the invariants, and returns the lines
// with styling stripped.
func render(t testing.TB, s *Screen, height int) []string {
	t.Helper()
	out := s.Render(height)
	cols, rows := s.size()
	checkRender(t, out, cols, min(height, rows))
	lines := strings.Split(ansi.Strip(out), "\n")
	if height < 1 {
		return nil
	}
	return lines
}

// checkRender fails t if out is not n lines of at most cols cells holding
// nothing but text and SGR, each styled line ending with a reset.
func checkRender(t testing.TB, out string, cols, n int) {
	t.Helper()
	if n < 1 {
		if out != "" {
			t.Fatalf("Render = %q; want empty", out)
		}
		return
	}
	lines := strings.Split(out, "\n")
	if len(lines) != n {
		t.Fatalf("Render gave %d lines; want %d:\n%q", len(lines), n, out)
	}
	for i, line := range lines {
		if err := checkLine(line, cols); err != nil {
			t.Fatalf("line %d %q: %v", i, line, err)
		}
	}
}

func checkLine(line string, cols int) error {
	if !utf8.ValidString(line) {
		return fmt.Errorf("invalid UTF-8")
	}
	if w := ansi.StringWidth(line); w > cols {
		return fmt.Errorf("%d cells wide; cols %d", w, cols)
	}
	styled, reset := false, true
	for i := 0; i < len(line); {
		r, size := utf8.DecodeRuneInString(line[i:])
		switch {
		case r == 0x1b:
			j := i + 1
			if j >= len(line) || line[j] != '[' {
				return fmt.Errorf("escape other than CSI at %d", i)
			}
			j++
			for j < len(line) && (line[j] >= '0' && line[j] <= '9' || line[j] == ';' || line[j] == ':') {
				j++
			}
			if j >= len(line) || line[j] != 'm' {
				return fmt.Errorf("CSI other than SGR at %d", i)
			}
			p := line[i+2 : j]
			styled, reset = true, p == "" || p == "0"
			i = j + 1
			continue
		case r < 0x20 || r >= 0x7f && r < 0xa0:
			return fmt.Errorf("control character %U at %d", r, i)
		}
		i += size
	}
	if styled && !reset {
		return fmt.Errorf("styled line does not end with a reset")
	}
	return nil
}

func TestText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   []string
		want []string // first lines of Render, stripped
	}{
		{"carriage return", []string{"a\rb\n"}, []string{"b", ""}},
		{"bare LF is CR LF", []string{"ab\ncd"}, []string{"ab", "cd"}},
		{"CR LF", []string{"ab\r\ncd\r\n"}, []string{"ab", "cd", ""}},
		{"CR LF split", []string{"ab\r", "\ncd"}, []string{"ab", "cd"}},
		{"cursor up and erase line", []string{"one\ntwo\nthree\n\x1b[2A\x1b[2Kfixed\n"}, []string{"one", "fixed", "three"}},
		{"erase to end of line", []string{"hello world\r\x1b[6C\x1b[K"}, []string{"hello"}},
		{"tab", []string{"a\tb"}, []string{"a       b"}},
		{"wide rune", []string{"世界!"}, []string{"世界!"}},
		{"rune split across writes", []string{"\xe4\xb8", "\x96!"}, []string{"世!"}},
		{"rune split in three", []string{"\xf0", "\x9f", "\x98\x80"}, []string{"😀"}},
		{"cut rune before ESC", []string{"\xe4\xb8", "\x1b[31mred"}, []string{"\uFFFDred"}},
		{"cut rune in one write", []string{"\xe4\x1b[31mred"}, []string{"\uFFFDred"}},
		{"stray C1 byte", []string{"\x9dhello\nworld"}, []string{"\uFFFDhello", "world"}},
		{"invalid bytes", []string{"a\xff\xc0b"}, []string{"a\uFFFD\uFFFDb"}},
		{"starts mid-rune", []string{"\x96\x96ok"}, []string{"\uFFFD\uFFFDok"}},
		{"starts mid-CSI", []string{"31mtext\x1b[0m"}, []string{"31mtext"}},
		{"starts mid-OSC", []string{";title\x07text"}, []string{";titletext"}},
		{"OSC cut by skip-ahead", []string{"\x1b]52;c;QUJD", "no terminator", "\x1b[mvisible"}, []string{"visible"}},
		{"backspace", []string{"abc\b\bX"}, []string{"aXc"}},
		{"clear screen", []string{"old\n\x1b[2J\x1b[Hnew"}, []string{"new", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newScreen(t, 20, 5, nil)
			write(t, s, tt.in...)
			got := render(t, s, 5)
			for i, want := range tt.want {
				if got[i] != want {
					t.Fatalf("line %d = %q; want %q (all: %q)", i, got[i], want, got)
				}
			}
		})
	}
}

func TestColour(t *testing.T) {
	t.Parallel()
	s := newScreen(t, 20, 3, nil)
	write(t, s, "\x1b[31mred\x1b[m plain \x1b[1;42mbold\n")
	out := s.Render(3)
	checkRender(t, out, 20, 3)
	first := strings.Split(out, "\n")[0]
	if !strings.HasPrefix(first, "\x1b[31mred") {
		t.Errorf("line %q does not start with SGR 31 and red", first)
	}
	if !strings.Contains(first, "bold") || !strings.Contains(first, "42") {
		t.Errorf("line %q lost SGR 1;42", first)
	}
	if got := ansi.Strip(first); got != "red plain bold" {
		t.Errorf("text = %q", got)
	}
	// A background that reaches the end of the line is drawn, and reset.
	write(t, s, "\x1b[44m\x1b[K\x1b[m")
	if line := strings.Split(s.Render(3), "\n")[1]; !strings.Contains(line, "44") {
		t.Errorf("erased line with background = %q; want SGR 44", line)
	}
}

func TestProgressBar(t *testing.T) {
	t.Parallel()
	s := newScreen(t, 40, 4, nil)
	var b bytes.Buffer
	for i := range 1000 {
		fmt.Fprintf(&b, "\r[%-20s] %4d", strings.Repeat("#", i/50), i)
	}
	b.WriteString("\n")
	write(t, s, b.String())
	got := render(t, s, 4)
	want := fmt.Sprintf("[%-20s]  999", strings.Repeat("#", 19))
	if got[0] != want || got[1] != "" {
		t.Fatalf("Render = %q; want %q then blank", got, want)
	}
}

func TestReplies(t *testing.T) {
	t.Parallel()
	got := make(chan string, 4)
	s := newScreen(t, 20, 5, func(p []byte) { got <- string(p) })
	write(t, s, "ab\x1b[6n")
	select {
	case r := <-got:
		if r != "\x1b[1;3R" {
			t.Fatalf("reply = %q; want CPR 1;3", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no reply to DSR")
	}
}

// writeSoon fails t if writing p n times takes more than a few seconds:
// x/vt blocks Write until its answers are read (x#939).
func writeSoon(t *testing.T, s *Screen, p string, n int) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range n {
			_, _ = s.Write([]byte(p))
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Write blocked")
	}
}

func TestRepliesNeverBlockWrite(t *testing.T) {
	t.Parallel()
	queries := "\x1b[6n\x1b[5n\x1b[c\x1b[>c\x1b[?6n\x1b]11;?\x07\x1b[?2048h"
	t.Run("nil reply", func(t *testing.T) {
		t.Parallel()
		s := newScreen(t, 20, 5, nil)
		writeSoon(t, s, queries, 1000)
		s.Resize(30, 6) // in-band resize report, mode 2048
	})
	t.Run("reply blocks", func(t *testing.T) {
		t.Parallel()
		unblock := make(chan struct{})
		s := newScreen(t, 20, 5, func([]byte) { <-unblock })
		t.Cleanup(func() { close(unblock) })
		writeSoon(t, s, queries, 1000)
		write(t, s, "\rstill drawn")
		if got := render(t, s, 5)[0]; got != "still drawn" {
			t.Fatalf("line 0 = %q", got)
		}
		s.Close() // must not wait for the stuck reply
	})
}

func TestScrollback(t *testing.T) {
	t.Parallel()
	s := newScreen(t, 20, 10, nil)
	for i := range 500 {
		write(t, s, fmt.Sprintf("line %d\n", i))
	}
	// Following: the last 9 lines and the cursor's empty row.
	if got := render(t, s, 10); got[8] != "line 499" || !s.Following() {
		t.Fatalf("following Render = %q", got)
	}
	s.ScrollUp(100)
	if s.Following() {
		t.Fatal("Following after ScrollUp")
	}
	before := render(t, s, 10)
	if before[0] != "line 391" || before[9] != "line 400" {
		t.Fatalf("after ScrollUp(100) Render = %q", before)
	}
	write(t, s, "\x1b[2J", strings.Repeat("new\n", 200))
	if got := render(t, s, 10); strings.Join(got, "|") != strings.Join(before, "|") {
		t.Fatalf("view moved with new output:\n%q\n%q", before, got)
	}
	s.ScrollUp(1 << 20) // clamps at the oldest line
	if got := render(t, s, 10); got[0] != "line 0" {
		t.Fatalf("top of scrollback = %q", got[0])
	}
	s.ScrollDown(5)
	if got := render(t, s, 10); got[0] != "line 5" {
		t.Fatalf("after ScrollDown(5) line 0 = %q", got[0])
	}
	s.Follow()
	if got := render(t, s, 10); !s.Following() || got[8] != "new" || got[9] != "" {
		t.Fatalf("after Follow Render = %q", got)
	}
	s.ScrollUp(3)
	s.ScrollDown(3)
	if !s.Following() {
		t.Fatal("ScrollDown to the bottom does not follow")
	}
}

func TestScrollNothingAbove(t *testing.T) {
	t.Parallel()
	s := newScreen(t, 20, 10, nil)
	write(t, s, "only line\n")
	s.ScrollUp(5)
	if !s.Following() {
		t.Fatal("ScrollUp with nothing above stopped following")
	}
	s.ScrollDown(5) // no-op
	if got := render(t, s, 10)[0]; got != "only line" {
		t.Fatalf("line 0 = %q", got)
	}
}

func TestRenderHeight(t *testing.T) {
	t.Parallel()
	s := newScreen(t, 20, 10, nil)
	write(t, s, "a\nb\nc\nd")
	if got := render(t, s, 2); got[0] != "c" || got[1] != "d" {
		t.Fatalf("Render(2) = %q; want the rows up to the cursor", got)
	}
	if got := render(t, s, 100); len(got) != 10 || got[0] != "a" {
		t.Fatalf("Render(100) = %q; want the 10 rows", got)
	}
	if got := s.Render(0); got != "" {
		t.Fatalf("Render(0) = %q", got)
	}
}

func TestResize(t *testing.T) {
	t.Parallel()
	s := newScreen(t, 40, 10, nil)
	for i := range 30 {
		write(t, s, fmt.Sprintf("\x1b[3%dm%02d %s\x1b[m 世界\n", i%8, i, strings.Repeat("x", i)))
	}
	for _, size := range [][2]int{{20, 5}, {120, 40}, {1, 1}, {3, 2}, {0, -1}, {80, 24}, {81, 25}} {
		s.Resize(size[0], size[1])
		cols, rows := max(size[0], 1), max(size[1], 1)
		if w, h := s.size(); w != cols || h != rows {
			t.Fatalf("Resize(%d, %d) gave %dx%d", size[0], size[1], w, h)
		}
		for _, h := range []int{1, rows, rows + 5} {
			render(t, s, h)
		}
		s.ScrollUp(7)
		render(t, s, rows)
		s.Follow()
		write(t, s, "after resize 世界\n")
	}
}

func TestResizeShorterKeepsCursorRow(t *testing.T) {
	t.Parallel()
	s := newScreen(t, 20, 10, nil)
	for i := range 9 {
		write(t, s, fmt.Sprintf("line %d\n", i))
	}
	write(t, s, "prompt")
	s.Resize(20, 4)
	got := render(t, s, 4)
	if got[2] != "line 8" || got[3] != "prompt" {
		t.Fatalf("after shrinking Render = %q; want line 8 and the cursor row at the bottom", got)
	}
	write(t, s, "!")
	if got := render(t, s, 4); got[3] != "prompt!" {
		t.Fatalf("cursor moved: %q", got)
	}
	s.ScrollUp(6)
	if got := render(t, s, 4); got[0] != "line 0" {
		t.Fatalf("pushed lines not in scrollback: %q", got)
	}
}

func TestCloseAndDirty(t *testing.T) {
	t.Parallel()
	s := New(20, 5, func([]byte) {})
	if !s.Dirty() {
		t.Error("new Screen not dirty")
	}
	if s.Dirty() {
		t.Error("Dirty not cleared")
	}
	write(t, s, "x")
	if !s.Dirty() {
		t.Error("not dirty after Write")
	}
	s.ScrollUp(1) // nothing above: no change
	if s.Dirty() {
		t.Error("dirty after a ScrollUp that changed nothing")
	}
	s.Resize(21, 5)
	if !s.Dirty() {
		t.Error("not dirty after Resize")
	}
	s.Close()
	s.Close()
	if n, err := s.Write([]byte("ignored\x1b[6n")); n != 11 || err != nil {
		t.Fatalf("Write after Close = %d, %v", n, err)
	}
	s.Resize(10, 3)
	if got := render(t, s, 3); got[0] != "x" {
		t.Fatalf("Render after Close = %q", got)
	}
}

func TestConcurrent(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	replies := 0
	s := newScreen(t, 80, 24, func([]byte) { mu.Lock(); replies++; mu.Unlock() })
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_, _ = fmt.Fprintf(s, "\x1b[3%dmline %d\x1b[m %s\x1b[6n\n", i%8, i, hostile[i%len(hostile)])
		}
	})
	for i := range 300 {
		out := s.Render(24 - i%5)
		cols, rows := s.size() // Resize only runs on this goroutine
		checkRender(t, out, cols, min(24-i%5, rows))
		switch i % 7 {
		case 0:
			s.ScrollUp(i % 13)
		case 1:
			s.ScrollDown(3)
		case 2:
			s.Resize(60+i%40, 10+i%20)
		case 3:
			s.Follow()
		}
		s.Dirty()
		s.Following()
	}
	go func() { time.Sleep(10 * time.Millisecond); s.Close() }() // Close while writing
	close(stop)
	wg.Wait()
}

func TestCheckLine(t *testing.T) {
	t.Parallel()
	bad := []string{
		"\x1b]8;;https://x\x07link",
		"\x1b[2J",
		"\x1b[31mred",
		"\x1b[31mred\x1b[m\x1b[1m",
		"bell\a",
		"\x1bPq\x1b\\",
		"csi\u009b31m",
		"abcdefghijk",
		"世界世界世界",
	}
	for _, line := range bad {
		if checkLine(line, 10) == nil {
			t.Errorf("checkLine(%q) = nil; want an error", line)
		}
	}
	for _, line := range []string{"", "plain", "\x1b[31mred\x1b[m", "\x1b[1;38;2;1;2;3mb\x1b[0m", "世界"} {
		if err := checkLine(line, 10); err != nil {
			t.Errorf("checkLine(%q) = %v", line, err)
		}
	}
}
