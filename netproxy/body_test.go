package netproxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/internal/testnet"
)

// bigSize is larger than any buffer of the proxy's or the kernel's
// default socket buffers: a body this big is spliced for most of it.
const bigSize = 8 << 20

// pattern is n bytes that differ from one offset to the next (a byte
// lost, doubled or moved shows).
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>8)
	}
	return b
}

// countingServer is an HTTP/1.1 server on raw connections that counts
// every byte it reads and writes, the true figures a proxy's contact must
// report. /big answers bigSize bytes with a Content-Length, /chunked the
// same chunked, /up reads the body and says how much came; /half sends
// the first half of its body, then the rest once release is closed;
// /up closes upHalf once half of bigSize has come.
type countingServer struct {
	addr          netip.AddrPort
	read, written atomic.Int64
	conns         chan struct{} // a token per connection ended
	release       chan struct{}
	upHalf        chan struct{}
	halfOnce      sync.Once
}

func newCountingServer(t *testing.T) *countingServer {
	t.Helper()
	s := &countingServer{conns: make(chan struct{}, 16), release: make(chan struct{}), upHalf: make(chan struct{})}
	body := pattern(bigSize)
	s.addr = testnet.Serve(t, func(c net.Conn) {
		defer func() { s.conns <- struct{}{} }()
		cc := &countConn{ReadWriter: c}
		defer func() {
			s.read.Add(cc.read.Load())
			s.written.Add(cc.written.Load())
		}()
		br := bufio.NewReader(cc)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			switch req.URL.Path {
			case "/big":
				fmt.Fprintf(cc, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", len(body))
				_, err = cc.Write(body)
			case "/half":
				fmt.Fprintf(cc, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", len(body))
				_, err = cc.Write(body[:len(body)/2])
				<-s.release
				if err == nil {
					_, err = cc.Write(body[len(body)/2:])
				}
			case "/chunked":
				io.WriteString(cc, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
				for p := body; len(p) > 0 && err == nil; p = p[min(len(p), 100000):] {
					chunk := p[:min(len(p), 100000)]
					_, err = fmt.Fprintf(cc, "%x\r\n%s\r\n", len(chunk), chunk)
				}
				if err == nil {
					_, err = io.WriteString(cc, "0\r\n\r\n")
				}
			case "/up":
				var got []byte
				buf := make([]byte, 64<<10)
				for {
					n, err := req.Body.Read(buf)
					got = append(got, buf[:n]...)
					if len(got) >= bigSize/2 {
						s.halfOnce.Do(func() { close(s.upHalf) })
					}
					if err != nil {
						break
					}
				}
				n, ok := len(got), bytes.Equal(got, body[:min(len(got), len(body))])
				reply := fmt.Sprintf("got %d bytes, in order %v", n, ok)
				_, err = fmt.Fprintf(cc, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(reply), reply)
			default:
				_, err = io.WriteString(cc, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
			}
			if err != nil {
				return
			}
		}
	})
	return s
}

// countingProxy serves a proxy that admits big.test, the server.
func countingProxy(t *testing.T, s *countingServer) (*Proxy, string) {
	t.Helper()
	return start(t, Config{
		Allow:   rules(t, "verdict", "big.test", s.addr.String()),
		Resolve: table(map[string]netip.AddrPort{"big.test": s.addr}),
	})
}

// wantCounts closes p once the server's n connections have ended, and
// fails unless big.test's contact has exactly the bytes the server read
// and wrote.
func (s *countingServer) wantCounts(t *testing.T, p *Proxy, n int) {
	t.Helper()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for range n {
		<-s.conns
	}
	got := contactsOf(p, "big.test", 80)
	if len(got) != 1 || got[0].Sent != s.read.Load() || got[0].Received != s.written.Load() {
		t.Fatalf("contacts %+v, want big.test:80 with sent %d, received %d (what the server read and wrote)",
			p.Contacts(), s.read.Load(), s.written.Load())
	}
	if got[0].Received < bigSize {
		t.Fatalf("received %d, want at least the body's %d", got[0].Received, bigSize)
	}
}

// Large bodies forwarded as plain HTTP arrive whole and in order, each
// way, with a kept-alive connection's next message intact after them,
// and the contact's bytes are exactly those the server read and wrote.
func TestForwardLargeBodies(t *testing.T) {
	t.Parallel()
	s := newCountingServer(t)
	p, addr := countingProxy(t, s)
	cl := proxyClient(addr)
	body := pattern(bigSize)
	do := func(method, path string, reqBody []byte) []byte {
		t.Helper()
		var r io.Reader
		if reqBody != nil {
			r = bytes.NewReader(reqBody)
		}
		req, _ := http.NewRequest(method, "http://big.test"+path, r)
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d %v", method, path, resp.StatusCode, err)
		}
		return b
	}
	for i := range 2 {
		if got := do("GET", "/big", nil); !bytes.Equal(got, body) {
			t.Fatalf("download %d: %d bytes, not the server's %d", i, len(got), len(body))
		}
		if got := do("GET", "/chunked", nil); !bytes.Equal(got, body) {
			t.Fatalf("chunked download %d: %d bytes, not the server's %d", i, len(got), len(body))
		}
		if got, want := string(do("POST", "/up", body)), "got "+strconv.Itoa(bigSize)+" bytes, in order true"; got != want {
			t.Fatalf("upload %d: %q, want %q", i, got, want)
		}
	}
	cl.CloseIdleConnections()
	// One client connection, so one connection onward.
	s.wantCounts(t, p, 1)
}

// A tunnel's large download is counted exactly too.
func TestTunnelLargeDownload(t *testing.T) {
	t.Parallel()
	s := newCountingServer(t)
	p, addr := countingProxy(t, s)
	c := tunnel(t, addr, "big.test:80")
	io.WriteString(c, "GET /big HTTP/1.1\r\nHost: big.test\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	if err != nil || !bytes.Equal(got, pattern(bigSize)) {
		t.Fatalf("%d bytes, %v", len(got), err)
	}
	_ = c.Close()
	s.wantCounts(t, p, 1)
}

// A forwarded body is passed on as it comes, never held until it is
// whole: the client reads the first half of a download while the server
// waits to send the rest, and the server reads the first part of an
// upload while the client waits to send the rest.
func TestForwardStreams(t *testing.T) {
	t.Parallel()
	s := newCountingServer(t)
	_, addr := countingProxy(t, s)
	half := bigSize / 2

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET http://big.test/half HTTP/1.1\r\nHost: big.test\r\n\r\n")
	_ = c.SetReadDeadline(time.Now().Add(hangGuard))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, half)
	if _, err := io.ReadFull(resp.Body, first); err != nil { // would wait forever on a held body
		t.Fatal(err)
	}
	close(s.release)
	rest, err := io.ReadAll(resp.Body)
	if err != nil || !bytes.Equal(append(first, rest...), pattern(bigSize)) {
		t.Fatalf("download: %d bytes, %v", half+len(rest), err)
	}

	// The upload: the client sends the second half only once the
	// first half reached the server.
	body := pattern(bigSize)
	up, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	fmt.Fprintf(up, "POST http://big.test/up HTTP/1.1\r\nHost: big.test\r\nContent-Length: %d\r\n\r\n", len(body))
	if _, err := up.Write(body[:half]); err != nil {
		t.Fatal(err)
	}
	waitHalf(t, s)
	if _, err := up.Write(body[half:]); err != nil {
		t.Fatal(err)
	}
	resp, err = http.ReadResponse(bufio.NewReader(up), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if want := "got " + strconv.Itoa(bigSize) + " bytes, in order true"; string(b) != want {
		t.Fatalf("upload: %q, want %q", b, want)
	}
}

// hangGuard bounds a wait that only a proxy holding the bytes back
// would make long (a hang guard, not a speed assertion).
const hangGuard = time.Minute

// waitHalf waits until the server has half of an upload.
func waitHalf(t *testing.T, s *countingServer) {
	t.Helper()
	select {
	case <-s.upHalf:
	case <-time.After(hangGuard):
		t.Fatal("the first half of the upload never reached the server: the proxy holds the body back")
	}
}
