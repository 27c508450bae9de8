package netproxy

import (
	"bufio"
	"crypto/subtle"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"strings"
)

// A proxy's port that other processes of the host can reach (the sandbox's
// fallback without namespaces: a TCP port on the host's loopback) takes
// only clients that know its run's token (Config.Token): the run's
// environment names the proxy with it as the password
// (http://sluice:TOKEN@127.0.0.1:PORT), which curl, Go, npm, pip and git
// send as Proxy-Authorization; a SOCKS5 client gives it as its password
// (RFC 1929).

// authorized reports whether req carries the token, or no token is set.
func (p *Proxy) authorized(req *http.Request) bool {
	if p.cfg.Token == "" {
		return true
	}
	scheme, cred, ok := strings.Cut(req.Header.Get("Proxy-Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "basic") {
		return false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return false
	}
	_, pass, _ := strings.Cut(string(raw), ":")
	return p.tokenIs(pass)
}

// tokenIs compares s with the token in constant time.
func (p *Proxy) tokenIs(s string) bool {
	return subtle.ConstantTimeCompare([]byte(s), []byte(p.cfg.Token)) == 1
}

// SOCKS5 username/password authentication (RFC 1929).
const (
	socksUserPass   = 2
	socksAuthOK     = 0
	socksAuthFailed = 1
)

// socksAuth reads a username/password subnegotiation and answers it; true
// when the password is the token.
func (p *Proxy) socksAuth(c net.Conn, br *bufio.Reader) bool {
	var ver [1]byte
	if _, err := io.ReadFull(br, ver[:]); err != nil || ver[0] != 1 {
		return false
	}
	read := func() (string, bool) {
		var n [1]byte
		if _, err := io.ReadFull(br, n[:]); err != nil {
			return "", false
		}
		b := make([]byte, n[0])
		if _, err := io.ReadFull(br, b); err != nil {
			return "", false
		}
		return string(b), true
	}
	if _, ok := read(); !ok {
		return false
	}
	pass, ok := read()
	if !ok {
		return false
	}
	if !p.tokenIs(pass) {
		_, _ = c.Write([]byte{1, socksAuthFailed})
		return false
	}
	_, err := c.Write([]byte{1, socksAuthOK})
	return err == nil
}
