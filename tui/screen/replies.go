package screen

import "bytes"

// replyQueue bounds the answers waiting for a slow reply func. A child
// asks a handful of questions at start-up; more than this in flight means
// reply is stuck, and further answers are dropped.
const replyQueue = 64

// startReplies starts the reader that drains the emulator's answers and,
// if reply is set, the goroutine that hands them over. x/vt writes each
// answer into an unbuffered pipe from inside Write (x#939), so the reader
// must always be running or Write would block.
func (s *Screen) startReplies(reply func([]byte)) {
	var q chan []byte
	if reply != nil {
		q = make(chan []byte, replyQueue)
		go s.deliver(q, reply)
	}
	go s.drain(q)
}

// drain reads the emulator's answers until Close shuts the pipe, queueing
// them without ever waiting. It does not take s.mu: Write holds the lock
// while the emulator writes into the pipe.
func (s *Screen) drain(q chan<- []byte) {
	defer close(s.drained)
	if q != nil {
		defer close(q)
	}
	buf := make([]byte, 512)
	for {
		n, err := s.emu.Read(buf)
		if n > 0 && q != nil {
			select {
			case q <- bytes.Clone(buf[:n]):
			default: // reply is stuck; the child will time out its query
			}
		}
		if err != nil {
			return
		}
	}
}

// deliver hands queued answers to reply, in order, until the queue is
// closed, dropping what is left once Close has begun.
func (s *Screen) deliver(q <-chan []byte, reply func([]byte)) {
	for b := range q {
		if !s.stopped.Load() {
			reply(b)
		}
	}
}
