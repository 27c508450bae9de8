package netproxy

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
)

// dial connects to an allowed target: to its checked addresses in turn, or
// through the upstream proxy. With tunnel (CONNECT, SOCKS) an upstream is
// asked to CONNECT; without (plain HTTP) the connection is to the upstream
// itself, which gets the absolute-form requests. The reader, when not nil,
// holds bytes the upstream sent after its answer; read through it. The
// connection is tracked: release it with p.untrack.
func (p *Proxy) dial(ctx context.Context, t target, v verdict, tunnel bool) (net.Conn, *bufio.Reader, error) {
	var (
		c   net.Conn
		br  *bufio.Reader
		err error
	)
	switch {
	case p.upstream != nil:
		c, err = p.dialer.DialContext(ctx, "tcp", p.upstream.Host)
		if err != nil {
			return nil, nil, fmt.Errorf("upstream proxy: %w", err)
		}
		if tunnel {
			br, err = upstreamConnect(c, p.upstream, t)
			if err != nil {
				_ = c.Close()
				return nil, nil, err
			}
		}
	default:
		err = errors.New("no addresses")
		for _, a := range v.addrs {
			c, err = p.dialer.DialContext(ctx, "tcp", a.String())
			if err == nil {
				break
			}
		}
		if err != nil {
			return nil, nil, err
		}
	}
	if !p.track(c) {
		_ = c.Close()
		return nil, nil, errors.New("the proxy stopped")
	}
	return c, br, nil
}

// upstreamConnect asks the upstream proxy on c for a tunnel to t.
func upstreamConnect(c net.Conn, u *url.URL, t target) (*bufio.Reader, error) {
	req := "CONNECT " + t.String() + " HTTP/1.1\r\nHost: " + t.String() + "\r\n"
	if auth := proxyAuth(u); auth != "" {
		req += "Proxy-Authorization: " + auth + "\r\n"
	}
	if _, err := c.Write([]byte(req + "\r\n")); err != nil {
		return nil, fmt.Errorf("upstream proxy: %w", err)
	}
	br := bufio.NewReader(&limitReader{r: c, n: 1 << 62})
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return nil, fmt.Errorf("upstream proxy: %w", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("upstream proxy answered %s", clean(resp.Status))
	}
	return br, nil
}

// proxyAuth is the Proxy-Authorization header for the upstream, if any.
func proxyAuth(u *url.URL) string {
	if u == nil || u.User == nil {
		return ""
	}
	pass, _ := u.User.Password()
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pass))
}
