package netproxy

import (
	"io"
	"sync"
	"sync/atomic"

	"github.com/sluice-dev/sluice/queue"
)

// Contact is one host and port a run contacted or tried to, as the result
// JSON's "network" array and the audit finished line carry it.
type Contact struct {
	// Host is the name the run asked for, or the IP literal it gave.
	Host string `json:"host"`
	// Port is the port it asked for.
	Port int `json:"port"`
	// Sent counts the bytes the run sent to the host (inside a tunnel:
	// what went through it; plain HTTP: the requests as forwarded).
	Sent int64 `json:"sent"`
	// Received counts the bytes the host sent back.
	Received int64 `json:"received"`
	// AllowedBy says what let the connections through: an Allow rule's
	// By ("knowledge: npm", "network_allow"), "asked-once" or "asked-run";
	// or "refused: " and why.
	AllowedBy string `json:"allowed_by"`
}

type contactKey struct {
	host string
	port int
	by   string
}

// contacts is the run's table of Contact, in the order first seen.
type contacts struct {
	mu      sync.Mutex
	index   map[contactKey]int
	entries []Contact
}

// add counts bytes against host:port allowed (or refused) by by, making
// the entry if it is new.
func (cs *contacts) add(t target, by string, sent, received int64) {
	k := contactKey{t.host, t.port, by}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	i, ok := cs.index[k]
	if !ok {
		if cs.index == nil {
			cs.index = map[contactKey]int{}
		}
		i = len(cs.entries)
		cs.index[k] = i
		cs.entries = append(cs.entries, Contact{Host: t.host, Port: t.port, AllowedBy: by})
	}
	cs.entries[i].Sent += sent
	cs.entries[i].Received += received
}

func (cs *contacts) list() []Contact {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return append([]Contact(nil), cs.entries...)
}

// limitReader reads from r until n bytes have been read, then reports
// errHeaderTooLarge; serveConn lifts the limit once a request's header is
// read, so that only headers are bounded.
type limitReader struct {
	r io.Reader
	n int64
}

func (l *limitReader) Read(b []byte) (int, error) {
	if l.n <= 0 {
		return 0, errHeaderTooLarge
	}
	if int64(len(b)) > l.n {
		b = b[:l.n]
	}
	n, err := l.r.Read(b)
	l.n -= int64(n)
	return n, err
}

// countConn counts what is read from and written to a connection. The
// request's writer and the response's reader run at once.
type countConn struct {
	io.ReadWriter
	read, written atomic.Int64
}

func (c *countConn) Read(b []byte) (int, error) {
	n, err := c.ReadWriter.Read(b)
	c.read.Add(int64(n))
	return n, err
}

func (c *countConn) Write(b []byte) (int, error) {
	n, err := c.ReadWriter.Write(b)
	c.written.Add(int64(n))
	return n, err
}

// Queue gives contacts in the form results and audit lines carry them
// (queue.Result.Network); nil for none.
func Queue(cs []Contact) []queue.Contact {
	if len(cs) == 0 {
		return nil
	}
	out := make([]queue.Contact, len(cs))
	for i, c := range cs {
		out[i] = queue.Contact{Host: c.Host, Port: c.Port, Sent: c.Sent, Received: c.Received, AllowedBy: c.AllowedBy}
	}
	return out
}
