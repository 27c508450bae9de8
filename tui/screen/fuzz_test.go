package screen

import (
	"strings"
	"testing"
)

// FuzzWrite feeds arbitrary bytes in two Writes to a screen of fuzzed size,
// then checks that x/vt did not panic (guard would hide it) and that
// Render, scrolled or not and after a resize, holds nothing but text and
// SGR and stays inside the pane.
func FuzzWrite(f *testing.F) {
	for _, h := range hostile {
		f.Add([]byte("before\n"+h+"after"), uint16(len(h)/2+7), uint8(30), uint8(6))
	}
	f.Add([]byte("a\rb\n"), uint16(1), uint8(80), uint8(24))
	f.Add([]byte("\xe4\xb8\x96\x1b[31m\xe4"), uint16(2), uint8(3), uint8(1))
	f.Add([]byte("\x9d\x90\x98\x9e\x9f\x9b"), uint16(3), uint8(10), uint8(2))
	f.Add([]byte(strings.Repeat("line\n", 100)), uint16(250), uint8(10), uint8(4))
	f.Add([]byte("世界世界世界世界世界"), uint16(9), uint8(5), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16, cols, rows uint8) {
		c, r := 1+int(cols)%120, 1+int(rows)%40
		s := New(c, r, func([]byte) {})
		defer s.Close()
		i := min(int(cut), len(data))
		_, _ = s.Write(data[:i])
		_, _ = s.Write(data[i:])
		s.mu.Lock()
		panics := s.panics
		s.mu.Unlock()
		if panics > 0 {
			t.Fatalf("x/vt panicked %d times (recovered)", panics)
		}
		checkRender(t, s.Render(r), c, r)
		checkRender(t, s.Render(r/2), c, r/2)
		s.ScrollUp(1 + int(cut)%50)
		checkRender(t, s.Render(r), c, r)
		c2, r2 := 1+int(cut)%97, 1+int(cut>>8)%31
		s.Resize(c2, r2)
		checkRender(t, s.Render(r2), c2, r2)
		s.Follow()
		checkRender(t, s.Render(r2), c2, r2)
	})
}
