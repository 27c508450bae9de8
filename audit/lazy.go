package audit

import (
	"sync"

	"github.com/sluice-dev/sluice/queue"
)

// Lazy is a queue.Recorder that opens the log on its first Record, so
// that a writer that only waits for its answer never touches the log.
// Path names the log then.
type Lazy struct {
	Path func() (string, error)

	once sync.Once
	log  *Log
	err  error
}

// Record implements queue.Recorder.
func (l *Lazy) Record(ev queue.Event) error {
	l.once.Do(func() {
		var p string
		if p, l.err = l.Path(); l.err == nil {
			l.log, l.err = Open(p)
		}
	})
	if l.err != nil {
		return l.err
	}
	return l.log.Record(ev)
}

// LastRun implements queue.RunLedger, on the log Path names (opened or
// not).
func (l *Lazy) LastRun(req *queue.Request) (*queue.Event, error) {
	p, err := l.Path()
	if err != nil {
		return nil, err
	}
	return LastRun(p, req)
}

// Close closes the log if it was opened.
func (l *Lazy) Close() {
	if l.log != nil {
		l.log.Close()
	}
}
