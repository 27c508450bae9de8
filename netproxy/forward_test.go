package netproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/internal/testnet"
)

// plainServer is an HTTP server standing in for plain.test.
func plainServer(t *testing.T) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/echo":
			b, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "got %d bytes: %.10s", len(b), b)
		case "/chunked":
			for i := range 3 {
				fmt.Fprintf(w, "part %d;", i)
				w.(http.Flusher).Flush()
			}
		case "/headers":
			fmt.Fprintf(w, "host=%s ua=%q proxy=%q conn=%q", r.Host, r.UserAgent(),
				r.Header.Get("Proxy-Connection")+r.Header.Get("Proxy-Authorization"), r.Header.Get("Connection"))
		case "/upgrade":
			if r.Header.Get("Upgrade") != "echo" {
				http.Error(w, "no upgrade", http.StatusBadRequest)
				return
			}
			c, brw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			defer c.Close()
			_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
			_ = brw.Flush()
			_, _ = io.Copy(c, brw)
		default:
			fmt.Fprintf(w, "plain %s", r.URL.Path)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func plainProxy(t *testing.T) (*Proxy, string) {
	t.Helper()
	local := netip.MustParseAddrPort(plainServer(t).Listener.Addr().String())
	return start(t, Config{
		Allow: append(rules(t, "knowledge: curl", "plain.test"), rules(t, "test server", local.String())...),
		Resolve: table(map[string]netip.AddrPort{
			"plain.test": local, "other.test": local,
		}),
	})
}

func proxyClient(addr string) *http.Client {
	u := &url.URL{Scheme: "http", Host: addr}
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u)}}
}

func TestForward(t *testing.T) {
	t.Parallel()
	p, addr := plainProxy(t)
	cl := proxyClient(addr)
	get := func(method, u, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, u, strings.NewReader(body))
		if body == "" {
			req.Body = nil
		}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct{ method, url, body, want string }{
		{"GET", "http://plain.test/a", "", "plain /a"},
		{"GET", "http://plain.test/b?q=1", "", "plain /b"},
		{"POST", "http://plain.test/echo", strings.Repeat("x", 100000), "got 100000 bytes: xxxxxxxxxx"},
		{"GET", "http://plain.test/chunked", "", "part 0;part 1;part 2;"},
		{"HEAD", "http://plain.test/a", "", ""},
		{"GET", "http://plain.test/headers", "", `host=plain.test ua="Go-http-client/1.1" proxy="" conn=""`},
	} {
		code, body := get(tc.method, tc.url, tc.body)
		if code != 200 || body != tc.want {
			t.Errorf("%s %s: %d %q, want %q", tc.method, tc.url, code, body, tc.want)
		}
	}
	code, body := get("GET", "http://other.test/", "")
	if code != http.StatusForbidden || body != "sluice: other.test:80 refused: not in this run's hosts\n" {
		t.Errorf("refused: %d %q", code, body)
	}
	cl.CloseIdleConnections()
	_ = p.Close()
	got := contactsOf(p, "plain.test", 80)
	if len(got) != 1 || got[0].AllowedBy != "knowledge: curl" || got[0].Sent < 100000 || got[0].Received == 0 {
		t.Fatalf("contacts %+v", p.Contacts())
	}
	if got := contactsOf(p, "other.test", 80); len(got) != 1 || got[0].AllowedBy != "refused: not in this run's hosts" {
		t.Fatalf("contacts %+v", p.Contacts())
	}
}

// rawExchange writes req to the proxy and returns what comes back until
// the proxy closes.
func rawExchange(t *testing.T, addr, req string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	_ = c.(*net.TCPConn).CloseWrite()
	b, _ := io.ReadAll(c)
	return string(b)
}

func TestForwardRaw(t *testing.T) {
	t.Parallel()
	_, addr := plainProxy(t)
	for _, tc := range []struct{ name, req, want string }{
		{"HTTP/1.0 gets no chunks", "GET http://plain.test/chunked HTTP/1.0\r\n\r\n", "HTTP/1.0 200 OK\r\n"},
		{"two requests on one connection", "GET http://plain.test/1 HTTP/1.1\r\nHost: plain.test\r\n\r\nGET http://plain.test/2 HTTP/1.1\r\nHost: plain.test\r\nConnection: close\r\n\r\n", "plain /2"},
		{"origin form", "GET / HTTP/1.1\r\nHost: plain.test\r\n\r\n", "HTTP/1.1 400 sluice: the proxy forwards absolute http:// requests"},
		{"https absolute form", "GET https://plain.test/ HTTP/1.1\r\nHost: plain.test\r\n\r\n", "HTTP/1.1 400 "},
		{"garbage", "\x00\x01 not http\r\n\r\n", "HTTP/1.1 400 sluice: the proxy could not read the request"},
		{"header too large", "GET http://plain.test/ HTTP/1.1\r\nConnection: close\r\nX: " + strings.Repeat("a", 2*maxHeader) + "\r\n\r\n", "HTTP/1.1 400 "},
		{"Proxy-Authorization stays here", "GET http://plain.test/headers HTTP/1.1\r\nProxy-Authorization: Basic eDp5\r\nProxy-Connection: keep-alive\r\nConnection: close\r\n\r\n", `proxy="" conn="close"`},
		{"no user agent added", "GET http://plain.test/headers HTTP/1.1\r\nConnection: close\r\n\r\n", `ua=""`},
		{"expect 100-continue", "POST http://plain.test/echo HTTP/1.1\r\nContent-Length: 3\r\nExpect: 100-continue\r\nConnection: close\r\n\r\nabc", "got 3 bytes: abc"},
		{"bad CONNECT target", "CONNECT 127.1:80 HTTP/1.1\r\n\r\n", "HTTP/1.1 400 sluice: bad target"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := rawExchange(t, addr, tc.req); !strings.Contains(got, tc.want) {
				t.Fatalf("got %q, want %q in it", got, tc.want)
			}
		})
	}
	// The HTTP/1.0 answer's body is plain.
	if got := rawExchange(t, addr, "GET http://plain.test/chunked HTTP/1.0\r\n\r\n"); !strings.HasSuffix(got, "\r\n\r\npart 0;part 1;part 2;") {
		t.Fatalf("HTTP/1.0: %q", got)
	}
}

func TestForwardUpgrade(t *testing.T) {
	t.Parallel()
	_, addr := plainProxy(t)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "GET http://plain.test/upgrade HTTP/1.1\r\nHost: plain.test\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("%v %v", resp, err)
	}
	fmt.Fprint(c, "ping")
	buf := make([]byte, 4)
	if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo %q %v", buf, err)
	}
}

// A chain: this run's proxy forwards through an upstream (another
// netproxy here, standing in for a corporate proxy), which resolves and
// applies its own rules.
func TestUpstream(t *testing.T) {
	t.Parallel()
	srv := tlsServer(t, "via upstream", "registry.test")
	tlsAddr := addrOf(t, srv)
	plainAddr := netip.MustParseAddrPort(plainServer(t).Listener.Addr().String())
	up, upAddr := start(t, Config{
		Allow: rules(t, "corporate", "registry.test", "plain.test", "blocked.test", tlsAddr.String(), plainAddr.String()),
		Deny:  rules(t, "corporate deny", "blocked.test"),
		Resolve: table(map[string]netip.AddrPort{
			"registry.test": tlsAddr, "plain.test": plainAddr,
		}),
	})
	p, addr := start(t, Config{
		Allow:    rules(t, "verdict", "registry.test", "plain.test", "blocked.test"),
		Upstream: "http://user:secret@" + upAddr,
	})

	c := tunnel(t, addr, "registry.test:443")
	if body, err := httpsGet(t, c, "registry.test", "/x"); err != nil || body != "via upstream /x" {
		t.Fatalf("%q %v", body, err)
	}

	resp, err := proxyClient(addr).Get("http://plain.test/headers")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The credentials for the upstream stop there.
	if !strings.Contains(string(b), `proxy=""`) || !strings.HasPrefix(string(b), "host=plain.test") {
		t.Fatalf("%s", b)
	}

	// This proxy's own rules still hold, and the upstream's refusal
	// reaches the client.
	if status, _ := connect(t, addr, "evil.test:443"); !strings.Contains(status, "refused: not in this run's hosts") {
		t.Fatal(status)
	}
	if status, _ := connect(t, addr, "blocked.test:443"); !strings.HasPrefix(status, "502 ") ||
		!strings.Contains(status, "upstream proxy answered 403 sluice: blocked.test:443 refused: denied by rule blocked.test") {
		t.Fatal(status)
	}
	_ = p.Close()
	_ = up.Close()
	if got := contactsOf(p, "registry.test", 443); len(got) != 1 || got[0].AllowedBy != "verdict" || got[0].Received == 0 {
		t.Fatalf("contacts %+v", p.Contacts())
	}
	if got := contactsOf(up, "plain.test", 80); len(got) != 1 || got[0].AllowedBy != "corporate" {
		t.Fatalf("upstream contacts %+v", up.Contacts())
	}
}

// An upstream proxy that wants credentials gets them on CONNECT.
func TestUpstreamCredentials(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := make(chan string, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			got <- err.Error()
			return
		}
		got <- req.Method + " " + req.RequestURI + " " + req.Header.Get("Proxy-Authorization")
		io.WriteString(c, "HTTP/1.1 407 Proxy Authentication Required\r\n\r\n")
	}()
	_, addr := start(t, Config{Allow: rules(t, "verdict", "registry.test"), Upstream: "http://user:secret@" + l.Addr().String()})
	status, _ := connect(t, addr, "registry.test:443")
	if !strings.Contains(status, "upstream proxy answered 407") {
		t.Fatal(status)
	}
	if g := <-got; g != "CONNECT registry.test:443 Basic dXNlcjpzZWNyZXQ=" {
		t.Fatal(g)
	}
}

// A server that closes a kept-alive connection between requests does not
// turn the client's next request into a 502: the proxy closes the
// client's connection as the server did, and the client retries.
func TestForwardServerClosedBetweenRequests(t *testing.T) {
	t.Parallel()
	local := testnet.Serve(t, func(c net.Conn) {
		// One response, kept alive in words, then gone.
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
	_, addr := start(t, Config{
		Allow:   rules(t, "verdict", "once.test", local.String()),
		Resolve: table(map[string]netip.AddrPort{"once.test": local}),
	})
	cl := proxyClient(addr)
	defer cl.CloseIdleConnections()
	for i := range 3 {
		resp, err := cl.Get("http://once.test/")
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "ok" {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, b)
		}
	}
}
