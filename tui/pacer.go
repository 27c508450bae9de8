package tui

import (
	"sync"
	"time"

	"github.com/sluice-dev/sluice/tui/screen"
)

// Pacing of a run's output into its pane: the emulator costs far more per
// byte than the pty (~7.6 MB/s measured against ~36 MB/s of base64), and
// on a small machine its CPU would be taken from the command. So the pane
// is fed at most paceFrame bytes per frame: under a flood it skips ahead
// to the newest output (the log keeps every byte).
const (
	paceEvery = 50 * time.Millisecond
	paceFrame = 6 << 10
)

// pacer holds a run's newest output and feeds it to the screen once a
// frame, from its own goroutine; write never blocks on the emulator.
type pacer struct {
	scr  *screen.Screen
	done chan struct{}
	wg   sync.WaitGroup

	mu   sync.Mutex
	buf  []byte
	stop bool
}

func newPacer(scr *screen.Screen) *pacer {
	p := &pacer{scr: scr, done: make(chan struct{}), buf: make([]byte, 0, paceFrame)}
	p.wg.Add(1)
	go p.loop()
	return p
}

// write keeps the newest paceFrame bytes of what arrived this frame.
func (p *pacer) write(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stop {
		return
	}
	if len(b) >= paceFrame {
		p.buf = append(p.buf[:0], b[len(b)-paceFrame:]...)
		return
	}
	if over := len(p.buf) + len(b) - paceFrame; over > 0 {
		p.buf = append(p.buf[:0], p.buf[over:]...)
	}
	p.buf = append(p.buf, b...)
}

// flush hands what is held to the screen.
func (p *pacer) flush(out []byte) []byte {
	p.mu.Lock()
	out = append(out[:0], p.buf...)
	p.buf = p.buf[:0]
	p.mu.Unlock()
	if len(out) > 0 {
		_, _ = p.scr.Write(out)
	}
	return out
}

func (p *pacer) loop() {
	defer p.wg.Done()
	t := time.NewTicker(paceEvery)
	defer t.Stop()
	out := make([]byte, 0, paceFrame)
	for {
		select {
		case <-t.C:
			out = p.flush(out)
		case <-p.done:
			p.flush(out)
			return
		}
	}
}

// close feeds the last bytes and stops; later writes are dropped.
func (p *pacer) close() {
	p.mu.Lock()
	if p.stop {
		p.mu.Unlock()
		return
	}
	p.stop = true
	p.mu.Unlock()
	close(p.done)
	p.wg.Wait()
}
