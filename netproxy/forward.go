package netproxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
)

// upstream is a client connection's current connection onward for plain
// HTTP: to the target, or to the upstream proxy for that target.
type upstream struct {
	t     target
	by    string
	conn  net.Conn
	count *countConn
	br    *bufio.Reader
}

// close releases u and records its bytes; a nil u is fine.
func (u *upstream) close(p *Proxy) {
	if u == nil {
		return
	}
	p.untrack(u.conn)
	p.contacts.add(u.t, u.by, u.count.written.Load(), u.count.read.Load())
}

// forward passes one absolute-form request on and its response back. The
// rules are asked when the request goes to another host or port than the
// client's previous one: one answer of the person's holds for the client
// connection. It returns the connection onward to keep, and whether the
// client connection stays open.
func (p *Proxy) forward(c net.Conn, br *bufio.Reader, req *http.Request, up *upstream) (*upstream, bool) {
	if req.URL == nil || req.URL.Scheme != "http" || req.URL.Host == "" {
		writeStatus(c, http.StatusBadRequest,
			"sluice: the proxy forwards absolute http:// requests; https goes through CONNECT")
		return up, false
	}
	t, err := parseTarget(req.URL.Host, 80)
	if err != nil {
		writeStatus(c, http.StatusBadRequest, "sluice: "+clean(err.Error()))
		return up, false
	}
	reused := up != nil && up.t == t
	if !reused {
		up.close(p)
		up = nil
		v := p.decide(p.ctx, t)
		if v.refused != "" {
			p.contacts.add(t, "refused: "+v.refused, 0, 0)
			writeStatus(c, http.StatusForbidden, refusalLine(t, v.refused))
			return nil, false
		}
		conn, _, err := p.dial(p.ctx, t, v, false)
		if err != nil {
			p.contacts.add(t, v.by, 0, 0)
			writeStatus(c, http.StatusBadGateway, "sluice: "+t.String()+" unreachable: "+clean(err.Error()))
			return nil, false
		}
		p.contacts.add(t, v.by, 0, 0) // on record now, the bytes when it closes
		cc := &countConn{ReadWriter: conn}
		up = &upstream{t: t, by: v.by, conn: conn, count: cc, br: bufio.NewReader(cc)}
	}

	upgrade := removeHop(req.Header)
	if upgrade != "" {
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", upgrade)
	}
	req.RequestURI = ""
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // not Go's
	}
	req.Header.Del("Proxy-Authorization")
	// The body is written while the response is read: a client that waits
	// for "100 Continue" before sending its body must get it.
	werr := make(chan error, 1)
	if auth := proxyAuth(p.upstream); auth != "" {
		req.Header.Set("Proxy-Authorization", auth)
	}
	var w io.Writer = up.count
	var mw *msgWriter
	if req.ContentLength > 0 && len(req.TransferEncoding) == 0 {
		// The body follows the header on the client's connection:
		// spliced from there (the body net/http read would be left
		// unread).
		req.Body = &rawBody{br: br, conn: c, remain: req.ContentLength}
		mw = newMsgWriter(up.count, up.conn, &up.count.written)
		w = mw
	}
	go func() {
		var err error
		if p.upstream != nil {
			err = req.WriteProxy(w)
		} else {
			err = req.Write(w)
		}
		if err == nil && mw != nil {
			err = mw.Flush()
		}
		werr <- err
	}()

	keep := p.relayResponse(c, br, req, up, upgrade != "", reused)
	select {
	case err := <-werr:
		keep = keep && err == nil
	default:
		if req.ContentLength != 0 {
			// The response came before the whole body went: what the
			// client sends next may be more body or a new request; only
			// closing tells them apart.
			_ = c.Close()
			_ = up.conn.Close()
			keep = false
		}
		if err := <-werr; err != nil {
			keep = false
		}
	}
	if !keep {
		up.close(p)
		return nil, false
	}
	return up, true
}

// relayResponse passes the response (and any 1xx before it) back to the
// client, and reports whether both connections may carry another request.
// A 101 to an upgrade request turns the connection into a tunnel. A kept
// connection onward that the server had closed meanwhile ends the
// client's connection without an answer, as the server would have: the
// client then retries on a new one.
func (p *Proxy) relayResponse(c net.Conn, br *bufio.Reader, req *http.Request, up *upstream, upgrade, reused bool) bool {
	for first := true; ; first = false {
		before := up.count.read.Load()
		resp, err := http.ReadResponse(up.br, req)
		if err != nil {
			_ = up.conn.Close()
			if reused && first && up.count.read.Load() == before {
				_ = c.Close()
				return false
			}
			writeStatus(c, http.StatusBadGateway, "sluice: "+up.t.String()+" answered badly: "+clean(err.Error()))
			return false
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			if !upgrade {
				_ = up.conn.Close()
				writeStatus(c, http.StatusBadGateway, "sluice: "+up.t.String()+" switched protocols unasked")
				return false
			}
			if err := resp.Write(c); err != nil {
				return false
			}
			p.splice(c, br, up)
			return false
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 {
			if err := resp.Write(c); err != nil {
				return false
			}
			continue
		}
		removeHop(resp.Header)
		if !req.ProtoAtLeast(1, 1) {
			// An HTTP/1.0 client reads neither chunks nor keep-alive.
			resp.Proto, resp.ProtoMajor, resp.ProtoMinor = "HTTP/1.0", 1, 0
			resp.TransferEncoding = nil
			resp.Close = true
		}
		if resp.ContentLength > 0 && len(resp.TransferEncoding) == 0 && req.Method != http.MethodHead {
			// The body follows on the connection onward: spliced
			// from there, and net/http's reader of it left unread.
			body := &rawBody{br: up.br, conn: up.conn, remain: resp.ContentLength, read: &up.count.read}
			resp.Body = body
			mw := newMsgWriter(c, c, nil)
			err = resp.Write(mw)
			if err == nil {
				err = mw.Flush()
			}
			return err == nil && body.remain == 0 && !req.Close && !resp.Close
		}
		err = resp.Write(c)
		_ = resp.Body.Close()
		return err == nil && !req.Close && !resp.Close
	}
}

// splice relays an upgraded connection both ways until either side ends.
func (p *Proxy) splice(c net.Conn, br *bufio.Reader, up *upstream) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		counted := int64(up.br.Buffered()) // counted when read into br
		n, _ := relay(c, up.conn, up.br)
		up.count.read.Add(n - counted)
		closeWrite(c)
	}()
	n, _ := relay(up.conn, c, br)
	up.count.written.Add(n)
	closeWrite(up.conn)
	<-done
}
