package screen

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkWrite measures the emulator's throughput, fed 4 KiB at a time as
// a pty hands output over.
func BenchmarkWrite(b *testing.B) {
	yes := bytes.Repeat([]byte("y\n"), 2048)
	raw := make([]byte, 3<<10)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range raw {
		raw[i] = byte(rng.Uint32())
	}
	var b64 bytes.Buffer
	enc := base64.StdEncoding.EncodeToString(raw)
	for len(enc) > 76 {
		b64.WriteString(enc[:76] + "\n")
		enc = enc[76:]
	}
	colour := &bytes.Buffer{}
	for i := 0; colour.Len() < 4<<10; i++ {
		fmt.Fprintf(colour, "\x1b[3%dm%6d\x1b[m \x1b[1mok\x1b[m  github.com/sluice-dev/sluice/tui/screen\n", i%8, i)
	}
	for _, bm := range []struct {
		name string
		data []byte
	}{
		{"yes", yes},
		{"base64", b64.Bytes()},
		{"colour", colour.Bytes()},
	} {
		b.Run(bm.name, func(b *testing.B) {
			s := New(80, 24, nil)
			defer s.Close()
			b.SetBytes(int64(len(bm.data)))
			for b.Loop() {
				_, _ = s.Write(bm.data)
			}
		})
	}
}

// BenchmarkRender measures drawing a full, coloured screen.
func BenchmarkRender(b *testing.B) {
	for _, size := range [][2]int{{80, 24}, {200, 50}} {
		cols, rows := size[0], size[1]
		b.Run(fmt.Sprintf("%dx%d", cols, rows), func(b *testing.B) {
			s := New(cols, rows, nil)
			defer s.Close()
			for i := range rows * 2 {
				line := fmt.Sprintf("\x1b[3%dm%4d\x1b[m %s \x1b[1;4mbold\x1b[m 世界", i%8, i, bytes.Repeat([]byte("text "), cols/5))
				_, _ = s.Write([]byte(line[:min(len(line), cols+20)] + "\x1b[m\n"))
			}
			for b.Loop() {
				_ = s.Render(rows)
			}
		})
	}
}
