package netproxy

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// testCA is a certificate authority made for one test binary: the servers
// standing in for registries present certificates it signed, and clients
// trust it (curl --cacert, a Go RootCAs pool).
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
	pool *x509.CertPool
}

var (
	caOnce sync.Once
	ca     *testCA
)

func getCA(t testing.TB) *testCA {
	t.Helper()
	caOnce.Do(func() {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber:          big.NewInt(1),
			Subject:               pkix.Name{CommonName: "sluice netproxy test CA"},
			NotBefore:             time.Now().Add(-time.Hour),
			NotAfter:              time.Now().Add(24 * time.Hour),
			IsCA:                  true,
			KeyUsage:              x509.KeyUsageCertSign,
			BasicConstraintsValid: true,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			panic(err)
		}
		cert, _ := x509.ParseCertificate(der)
		pool := x509.NewCertPool()
		pool.AddCert(cert)
		ca = &testCA{cert: cert, key: key, pool: pool,
			pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
	})
	return ca
}

// leaf makes a server certificate for names.
func (c *testCA) leaf(t testing.TB, names ...string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: names[0]},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, n := range names {
		if a, err := netip.ParseAddr(n); err == nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, a.AsSlice())
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// file writes the CA's PEM for curl.
func (c *testCA) file(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(p, c.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// tlsServer starts an HTTPS server for names that answers with body and
// the path it was asked for.
func tlsServer(t testing.TB, body string, names ...string) *httptest.Server {
	t.Helper()
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s", body, r.URL.Path)
	}))
	s.TLS = &tls.Config{Certificates: []tls.Certificate{getCA(t).leaf(t, names...)}}
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are the point
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

// addrOf is a test server's address.
func addrOf(t testing.TB, s *httptest.Server) netip.AddrPort {
	t.Helper()
	return netip.MustParseAddrPort(s.Listener.Addr().String())
}

// table is a test resolver: names to addresses, ports included.
func table(m map[string]netip.AddrPort) func(context.Context, string, int) ([]netip.AddrPort, error) {
	return func(_ context.Context, host string, _ int) ([]netip.AddrPort, error) {
		if a, ok := m[host]; ok {
			return []netip.AddrPort{a}, nil
		}
		return nil, fmt.Errorf("no such host %s", host)
	}
}

// rules parses patterns for a test.
func rules(t testing.TB, by string, patterns ...string) []Rule {
	t.Helper()
	rs, err := ParseRules(by, patterns...)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// start serves a proxy with cfg on a loopback TCP port.
func start(t testing.TB, cfg Config) (*Proxy, string) {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(l) }()
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return p, l.Addr().String()
}

// connect opens a tunnel through the proxy at proxy to target and returns
// the status line and the connection (nil unless 200).
func connect(t testing.TB, proxy, target string) (string, net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		_ = c.Close()
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		_ = c.Close()
		return resp.Status + "|" + strings.TrimSpace(string(body)), nil
	}
	if br.Buffered() > 0 {
		t.Fatal("bytes after the CONNECT answer")
	}
	return resp.Status, c
}

// httpsGet fetches url through a tunnel on conn, with serverName in the
// ClientHello.
func httpsGet(t testing.TB, conn net.Conn, serverName, path string) (string, error) {
	t.Helper()
	tc := tls.Client(conn, &tls.Config{ServerName: serverName, RootCAs: getCA(t).pool})
	defer tc.Close()
	if err := tc.Handshake(); err != nil {
		return "", err
	}
	fmt.Fprintf(tc, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, serverName)
	resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// contact finds host:port's entries.
func contactsOf(p *Proxy, host string, port int) []Contact {
	var out []Contact
	for _, c := range p.Contacts() {
		if c.Host == host && c.Port == port {
			out = append(out, c)
		}
	}
	return out
}

// openTunnel asks for a tunnel to target on c, a connection to the
// proxy, and reads the 200's line and empty line without a buffer that
// could swallow what follows.
func openTunnel(tb testing.TB, c net.Conn, target string) {
	tb.Helper()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	want := "HTTP/1.1 200 Connection established\r\n\r\n"
	buf := make([]byte, len(want))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != want {
		tb.Fatalf("CONNECT %s: %q %v", target, buf, err)
	}
}

// tunnel is connect's connection, the test failed if the proxy refused.
func tunnel(t testing.TB, proxy, target string) net.Conn {
	t.Helper()
	status, c := connect(t, proxy, target)
	if c == nil {
		t.Fatalf("CONNECT %s refused: %s", target, status)
	}
	return c
}

// registryConfig admits registry.test, resolved to a new HTTPS server
// that answers with body.
func registryConfig(t testing.TB, body string) Config {
	t.Helper()
	local := addrOf(t, tlsServer(t, body, "registry.test"))
	return Config{
		Allow:   rules(t, "verdict", "registry.test", local.String()),
		Resolve: table(map[string]netip.AddrPort{"registry.test": local}),
	}
}
