package netproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

const (
	// maxHeader bounds a request's line and header.
	maxHeader = 64 << 10
	// idleTimeout closes a client connection that sends no request.
	idleTimeout = 2 * time.Minute
	// lingerTimeout and lingerBytes bound the reading after a refusal.
	lingerTimeout = time.Second
	lingerBytes   = 256 << 10
)

var errHeaderTooLarge = errors.New("netproxy: request header too large")

// serveHTTP reads requests from a client: a CONNECT turns the connection
// into a tunnel; an absolute-form http:// request is forwarded, and the
// connection stays open for the next while both sides keep it.
func (p *Proxy) serveHTTP(c net.Conn, lr *limitReader, br *bufio.Reader) {
	var up *upstream
	defer func() { up.close(p) }()
	for {
		lr.n = maxHeader
		_ = c.SetReadDeadline(time.Now().Add(idleTimeout))
		req, err := http.ReadRequest(br)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !isTimeout(err) {
				writeStatus(c, http.StatusBadRequest, "sluice: the proxy could not read the request")
			}
			return
		}
		lr.n = 1 << 62
		_ = c.SetReadDeadline(time.Time{})
		if !p.authorized(req) {
			writeStatusHeader(c, http.StatusProxyAuthRequired,
				"sluice: this proxy serves one run, and the request does not carry its token",
				"Proxy-Authenticate: Basic realm=\"sluice\"\r\n")
			return
		}
		if req.Method == http.MethodConnect {
			up.close(p)
			up = nil
			p.serveConnect(c, lr, br, req)
			return
		}
		var keep bool
		up, keep = p.forward(c, br, req, up)
		if !keep {
			return
		}
	}
}

// serveConnect answers a CONNECT: refused (403 and the refusal line),
// unreachable (502), or 200 and a tunnel.
func (p *Proxy) serveConnect(c net.Conn, lr *limitReader, br *bufio.Reader, req *http.Request) {
	t, err := parseTarget(req.RequestURI, 0)
	if err != nil {
		writeStatus(c, http.StatusBadRequest, "sluice: "+clean(err.Error()))
		return
	}
	v := p.decide(p.ctx, t)
	if v.refused != "" {
		p.contacts.add(t, "refused: "+v.refused, 0, 0)
		writeStatus(c, http.StatusForbidden, refusalLine(t, v.refused))
		return
	}
	remote, rbr, err := p.dial(p.ctx, t, v, true)
	if err != nil {
		p.contacts.add(t, v.by, 0, 0)
		writeStatus(c, http.StatusBadGateway, "sluice: "+t.String()+" unreachable: "+clean(err.Error()))
		return
	}
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		p.untrack(remote)
		p.contacts.add(t, v.by, 0, 0)
		return
	}
	p.tunnel(c, lr, br, remote, rbr, t, v.by)
}

// writeStatus answers with code, line as the reason phrase and as the
// body (so that a client that shows only the status shows the line too),
// and closes the connection's sending half. It then reads a little of
// what the client still sends (a request body), for a while: closing a
// socket with unread bytes resets it, and the reset can overtake the
// answer.
func writeStatus(c net.Conn, code int, line string) { writeStatusHeader(c, code, line, "") }

// writeStatusHeader is writeStatus with more header lines (each ending
// in CR LF).
func writeStatusHeader(c net.Conn, code int, line, header string) {
	line = clean(line)
	body := line + "\n"
	_, _ = io.WriteString(c, "HTTP/1.1 "+strconv.Itoa(code)+" "+line+"\r\n"+header+
		"Content-Type: text/plain; charset=utf-8\r\n"+
		"Content-Length: "+strconv.Itoa(len(body))+"\r\n"+
		"Connection: close\r\n\r\n"+body)
	closeWrite(c)
	_ = c.SetReadDeadline(time.Now().Add(lingerTimeout))
	_, _ = io.Copy(io.Discard, io.LimitReader(c, lingerBytes))
}

// isTimeout reports a deadline's error.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// hopHeaders are the headers of one connection, not passed on (RFC 9110
// section 7.6.1), Proxy-* included: they are for this proxy.
var hopHeaders = []string{
	"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// removeHop deletes the hop-by-hop headers, and those the Connection
// header names, from h; it reports whether the sender asked to upgrade.
func removeHop(h http.Header) (upgrade string) {
	for _, v := range h.Values("Connection") {
		for _, f := range strings.Split(v, ",") {
			f = strings.TrimSpace(f)
			if strings.EqualFold(f, "upgrade") {
				upgrade = h.Get("Upgrade")
			}
			if f != "" {
				h.Del(f)
			}
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
	return upgrade
}
