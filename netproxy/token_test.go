package netproxy

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// A proxy with a token serves the clients that give it, over HTTP and
// SOCKS5 alike; others are refused before anything is decided or
// recorded, and the token is not passed on.
func TestToken(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var sawAuth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sawAuth = append(sawAuth, r.Header.Get("Proxy-Authorization"))
		mu.Unlock()
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(srv.Close)
	a := addrOf(t, srv)
	p, addr := start(t, Config{Allow: rules(t, "test", a.String()), Token: "s3cret"})

	get := func(auth string) (int, string) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\n%sConnection: close\r\n\r\n", a, a, auth)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	basic := func(user, pass string) string {
		return "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass)) + "\r\n"
	}
	for _, tc := range []struct {
		name, auth string
		code       int
	}{
		{"none", "", http.StatusProxyAuthRequired},
		{"wrong", basic("sluice", "guess"), http.StatusProxyAuthRequired},
		{"bearer", "Proxy-Authorization: Bearer s3cret\r\n", http.StatusProxyAuthRequired},
		{"right", basic("sluice", "s3cret"), http.StatusOK},
		{"any user", basic("", "s3cret"), http.StatusOK},
	} {
		code, body := get(tc.auth)
		if code != tc.code {
			t.Errorf("%s: %d %q, want %d", tc.name, code, body, tc.code)
		}
		if code == http.StatusProxyAuthRequired && !strings.Contains(body, "does not carry its token") {
			t.Errorf("%s: refusal %q", tc.name, body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, h := range sawAuth {
		if h != "" {
			t.Errorf("the server was sent Proxy-Authorization %q", h)
		}
	}
	if got := p.Contacts(); len(got) != 1 || got[0].AllowedBy != "test" {
		t.Errorf("contacts %+v: want the allowed host only", got)
	}

	// SOCKS5: no-auth is not offered, the password method takes the token.
	socks := func(methods []byte, pass string) byte {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = c.Write(append([]byte{5, byte(len(methods))}, methods...))
		var sel [2]byte
		if _, err := io.ReadFull(c, sel[:]); err != nil {
			t.Fatal(err)
		}
		if sel[1] != socksUserPass {
			return sel[1]
		}
		_, _ = c.Write(append([]byte{1, 1, 'u', byte(len(pass))}, pass...))
		var st [2]byte
		if _, err := io.ReadFull(c, st[:]); err != nil {
			return 0xee // closed
		}
		return st[1]
	}
	if got := socks([]byte{socksNoAuth}, ""); got != socksNoMethod {
		t.Errorf("SOCKS5 without a password: method %#x, want none acceptable", got)
	}
	if got := socks([]byte{socksNoAuth, socksUserPass}, "guess"); got != socksAuthFailed {
		t.Errorf("SOCKS5 wrong password: %#x, want failure", got)
	}
	if got := socks([]byte{socksUserPass}, "s3cret"); got != socksAuthOK {
		t.Errorf("SOCKS5 right password: %#x, want success", got)
	}
}

// curl sends the token from the proxy URL, over CONNECT too.
func TestTokenCurl(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "plain ok") }))
	t.Cleanup(srv.Close)
	a := addrOf(t, srv)
	_, addr := start(t, Config{Allow: rules(t, "test", a.String()), Token: "tok"})
	code, out, errOut := tool(t, []string{"http_proxy=http://sluice:tok@" + addr}, "curl", "-sS", "http://"+a.String()+"/")
	if code != 0 || out != "plain ok" {
		t.Fatalf("curl with the token: %d %q %s", code, out, errOut)
	}
	code, _, _ = tool(t, []string{"http_proxy=http://" + addr}, "curl", "-sSf", "http://"+a.String()+"/")
	if code == 0 {
		t.Fatal("curl without the token got through")
	}
}
