package exec

import (
	"sync"
	"time"
)

// fanoutGather is how long the subscriber's goroutine waits after each
// delivery before taking what gathered meanwhile.
const fanoutGather = time.Millisecond

// fanoutSize bounds the bytes held for a slow subscriber. About 30 ms of
// work for the pane's emulator; anything older is skipped.
const fanoutSize = 256 << 10

// fanout hands output to one subscriber from its own goroutine. write never
// blocks on the subscriber: when the ring is full the oldest bytes are
// dropped, so a slow subscriber skips ahead to the newest output.
type fanout struct {
	fn   func([]byte)
	wake chan struct{} // capacity 1: "there is something to deliver"
	done chan struct{} // closed when the delivery goroutine returns

	mu     sync.Mutex
	ring   []byte
	start  int // index of the oldest held byte
	size   int // bytes held
	closed bool
}

func newFanout(fn func([]byte)) *fanout {
	f := &fanout{
		fn:   fn,
		wake: make(chan struct{}, 1),
		done: make(chan struct{}),
		ring: make([]byte, fanoutSize),
	}
	go f.loop()
	return f
}

// write copies p into the ring, dropping the oldest bytes if it is full.
func (f *fanout) write(p []byte) {
	n := len(f.ring)
	f.mu.Lock()
	if len(p) >= n {
		copy(f.ring, p[len(p)-n:])
		f.start, f.size = 0, n
	} else {
		if over := f.size + len(p) - n; over > 0 {
			f.start = (f.start + over) % n
			f.size -= over
		}
		end := (f.start + f.size) % n
		c := copy(f.ring[end:], p)
		copy(f.ring, p[c:])
		f.size += len(p)
	}
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// take moves the held bytes into out and reports how many, and whether
// the fanout is closed.
func (f *fanout) take(out []byte) (int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.ring)
	c := copy(out, f.ring[f.start:min(f.start+f.size, n)])
	if c < f.size {
		c += copy(out[c:], f.ring[:f.size-c])
	}
	f.start, f.size = 0, 0
	return c, f.closed
}

func (f *fanout) loop() {
	defer close(f.done)
	out := make([]byte, len(f.ring))
	for range f.wake {
		for {
			n, closed := f.take(out)
			if n == 0 {
				if closed {
					return
				}
				break
			}
			f.fn(out[:n])
			// Let output gather: under a flood this turns thousands of
			// small deliveries (and goroutine switches, which a 2-core
			// machine takes from the child) into a few hundred larger
			// ones; it delays live output by at most a millisecond.
			time.Sleep(fanoutGather)
		}
	}
}

// close delivers what is held, then waits for the subscriber's last call
// to return.
func (f *fanout) close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
	<-f.done
}
