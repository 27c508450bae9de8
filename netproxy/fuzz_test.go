package netproxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/internal/testnet"
)

// captureHello returns the records crypto/tls sends as a client's first
// flight with cfg.
func captureHello(t testing.TB, cfg *tls.Config) []byte {
	t.Helper()
	a, b := net.Pipe()
	go func() {
		_ = tls.Client(a, cfg).Handshake()
		_ = a.Close()
	}()
	raw, _, err := readClientHello(b)
	_ = b.Close()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// refragment splits a ClientHello's records into records of at most n
// bytes of payload each, as a client may.
func refragment(raw []byte, n int) []byte {
	var payload []byte
	for len(raw) >= recordHeaderLen {
		l := int(raw[3])<<8 | int(raw[4])
		payload = append(payload, raw[recordHeaderLen:recordHeaderLen+l]...)
		raw = raw[recordHeaderLen+l:]
	}
	var out []byte
	for len(payload) > 0 {
		k := min(n, len(payload))
		out = append(out, recordTypeHandshake, 3, 1, byte(k>>8), byte(k))
		out = append(out, payload[:k]...)
		payload = payload[k:]
	}
	return out
}

func TestServerNameOfRealHellos(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  *tls.Config
		want string
	}{
		{&tls.Config{ServerName: "registry.npmjs.org"}, "registry.npmjs.org"},
		{&tls.Config{ServerName: "Proxy.Golang.Org."}, "proxy.golang.org"},
		{&tls.Config{ServerName: "files.pythonhosted.org", MaxVersion: tls.VersionTLS12}, "files.pythonhosted.org"},
		{&tls.Config{ServerName: "1.2.3.4"}, ""},    // Go sends no SNI for an address
		{&tls.Config{InsecureSkipVerify: true}, ""}, //nolint:gosec // no SNI
	} {
		raw := captureHello(t, tc.cfg)
		for _, frag := range []int{1 << 14, 100, 1} {
			in := refragment(raw, frag)
			got, hello, err := readClientHello(bytes.NewReader(append(in, "after"...)))
			if err != nil || !bytes.Equal(got, in) {
				t.Fatalf("%s in %d-byte records: %v", tc.cfg.ServerName, frag, err)
			}
			name, err := serverName(hello)
			if err != nil || name != tc.want {
				t.Fatalf("%s in %d-byte records: %q, %v", tc.cfg.ServerName, frag, name, err)
			}
		}
	}
}

// seedHellos adds real ClientHellos and broken ones to a fuzz corpus.
func seedHellos(f *testing.F) {
	for _, cfg := range []*tls.Config{
		{ServerName: "registry.npmjs.org"},
		{ServerName: "a.test", MaxVersion: tls.VersionTLS12},
		{InsecureSkipVerify: true}, //nolint:gosec // no SNI
	} {
		raw := captureHello(f, cfg)
		f.Add(raw)
		f.Add(refragment(raw, 7))
		f.Add(raw[:len(raw)/2])
	}
	f.Add([]byte{22, 3, 1, 0, 4, 1, 0, 0, 0})
	f.Add([]byte{22, 3, 1, 0, 1, 1})
	f.Add([]byte{})
}

func FuzzClientHello(f *testing.F) {
	seedHellos(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		raw, hello, err := readClientHello(bytes.NewReader(data))
		if err != nil {
			return
		}
		if !bytes.HasPrefix(data, raw) || len(hello) > maxClientHello {
			t.Fatalf("raw is not what was read")
		}
		name, err := serverName(hello)
		if err != nil {
			return
		}
		// A name comes back checked: a host name or an address.
		if name != "" {
			if _, err := makeTarget(name, 443); err != nil {
				t.Fatalf("server name %q: %v", name, err)
			}
		}
		again, _ := serverName(hello)
		if again != name {
			t.Fatal("not deterministic")
		}
	})
}

// FuzzServerName mutates ClientHello bodies directly, past the record
// layer FuzzClientHello spends its effort on.
func FuzzServerName(f *testing.F) {
	for _, cfg := range []*tls.Config{
		{ServerName: "registry.npmjs.org"},
		{ServerName: "a.test", MaxVersion: tls.VersionTLS12},
		{InsecureSkipVerify: true}, //nolint:gosec // no SNI
	} {
		_, hello, err := readClientHello(bytes.NewReader(captureHello(f, cfg)))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(hello)
	}
	f.Fuzz(func(t *testing.T, hello []byte) {
		name, err := serverName(hello)
		if err != nil || name == "" {
			return
		}
		if _, err := makeTarget(name, 443); err != nil {
			t.Fatalf("server name %q: %v", name, err)
		}
	})
}

func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{
		"registry.npmjs.org:443", "[::1]:443", "127.0.0.1:80", "[::ffff:127.0.0.1]:1", "[fe80::1%eth0]:1",
		"a:b:c", "host", "host:", ":443", "[]:1", "127.1:80", "A.B.:1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tg, err := parseTarget(s, 0)
		if err != nil {
			return
		}
		back, err := parseTarget(tg.String(), 0)
		if err != nil || back != tg {
			t.Fatalf("%q -> %q -> %+v, %v", s, tg.String(), back, err)
		}
		if tg.literal() && hostService(tg.addr) == "" && tg.addr.Is4In6() {
			t.Fatalf("%q: a mapped address kept", s)
		}
	})
}

// pipeConn is a client that sends data, then ends; what it is sent is
// dropped.
type pipeConn struct {
	r      *bytes.Reader
	mu     sync.Mutex
	closed bool
}

func (c *pipeConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	return c.r.Read(b)
}

func (c *pipeConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	return len(b), nil
}

func (c *pipeConn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	return nil
}

func (*pipeConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (*pipeConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (*pipeConn) SetDeadline(time.Time) error      { return nil }
func (*pipeConn) SetReadDeadline(time.Time) error  { return nil }
func (*pipeConn) SetWriteDeadline(time.Time) error { return nil }
func (c *pipeConn) CloseWrite() error              { return nil }

// sink is a TCP server that answers every connection with one HTTP
// response, then reads and drops what it is sent: what an allowed
// connection in FuzzServe reaches.
func sink(tb testing.TB) netip.AddrPort {
	tb.Helper()
	return testnet.Serve(tb, func(c net.Conn) {
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		closeWrite(c)
		_, _ = io.Copy(io.Discard, c)
	})
}

// FuzzServe feeds a client's bytes to the proxy: HTTP, CONNECT, SOCKS5 or
// neither. It must not panic, and must end when the client does.
func FuzzServe(f *testing.F) {
	for _, s := range []string{
		"CONNECT ok.test:443 HTTP/1.1\r\n\r\n",
		"CONNECT ok.test:443 HTTP/1.1\r\n\r\n\x16\x03\x01\x00\x05\x01\x00\x00\x01\x00",
		"CONNECT evil.test:443 HTTP/1.1\r\n\r\n",
		"CONNECT [::1]:443 HTTP/1.1\r\n\r\n",
		"GET http://ok.test/ HTTP/1.1\r\nHost: ok.test\r\n\r\n",
		"GET http://ok.test/ HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nabcde",
		"GET http://evil.test/ HTTP/1.0\r\n\r\nGET / HTTP/1.1\r\n\r\n",
		"\x05\x01\x00\x05\x01\x00\x03\x07ok.test\x01\xbb",
		"\x05\x01\x00\x05\x01\x00\x01\x7f\x00\x00\x01\x00\x50",
		"\x05\x02\x01\x02",
		"\x05\x01\x00\x05\x02\x00\x04" + string(make([]byte, 18)),
	} {
		f.Add([]byte(s))
	}
	f.Add(captureHello(f, &tls.Config{ServerName: "ok.test"}))
	to := sink(f)
	p, err := New(Config{
		Allow: append(rules(f, "fuzz", "ok.test"), rules(f, "sink", to.String())...),
		Resolve: func(_ context.Context, host string, _ int) ([]netip.AddrPort, error) {
			if host == "ok.test" {
				return []netip.AddrPort{to}, nil
			}
			return nil, errors.New("no such host")
		},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = p.Close() })
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &pipeConn{r: bytes.NewReader(data)}
		if !p.track(c) {
			t.Fatal("closed")
		}
		p.serveConn(c)
	})
}
