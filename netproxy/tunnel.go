package netproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/netip"
	"time"
)

// helloTimeout bounds the wait for the rest of a ClientHello once its
// first byte has come.
const helloTimeout = 30 * time.Second

// tunnel relays between the client and remote until both directions end,
// then records the bytes. The client's bytes go through cbr (it may hold
// what the client sent early), the remote's through rbr when not nil.
// Nothing the client sends reaches remote before the gate: a TLS
// ClientHello that names another server than t is refused. The remote's
// bytes flow from the start (a server may speak first); they are the only
// bytes of a refused tunnel, and are recorded as received by it.
func (p *Proxy) tunnel(client net.Conn, lr *limitReader, cbr *bufio.Reader, remote net.Conn, rbr *bufio.Reader, t target, by string) {
	defer p.untrack(remote)
	lr.n = 1 << 62
	_ = client.SetReadDeadline(time.Time{})

	var received int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		var err error
		received, err = relay(client, remote, rbr)
		if err != nil {
			_ = client.Close()
			_ = remote.Close()
			return
		}
		closeWrite(client)
	}()

	sent, why, err := p.relayIn(remote, client, cbr, t, by)
	if err != nil || why != "" {
		_ = client.Close()
		_ = remote.Close()
	} else {
		closeWrite(remote)
	}
	<-done
	if why != "" {
		by = "refused: " + why
	}
	p.contacts.add(t, by, sent, received)
}

// relayIn is the client-to-remote direction: the gate, then the bytes. It
// returns why the gate refused the tunnel, if it did. Once the gate has
// passed, the contact is on record (the bytes come when the tunnel ends).
func (p *Proxy) relayIn(remote, client net.Conn, cbr *bufio.Reader, t target, by string) (sent int64, why string, err error) {
	first, err := cbr.Peek(1)
	if err != nil {
		// The client sent nothing: an end, not an error.
		if errors.Is(err, io.EOF) {
			err = nil
		}
		p.contacts.add(t, by, 0, 0)
		return 0, "", err
	}
	if first[0] == recordTypeHandshake {
		_ = client.SetReadDeadline(time.Now().Add(helloTimeout))
		raw, hello, err := readClientHello(cbr)
		_ = client.SetReadDeadline(time.Time{})
		if errors.Is(err, errNotHello) {
			return 0, "its TLS ClientHello is malformed", nil
		}
		if err != nil {
			return 0, "", err
		}
		name, err := serverName(hello)
		if err != nil {
			return 0, "its TLS ClientHello is malformed", nil
		}
		if name != "" && !sameServer(name, t) {
			return 0, "its TLS ClientHello names " + name + ", another server", nil
		}
		p.contacts.add(t, by, 0, 0)
		n, err := remote.Write(raw)
		sent += int64(n)
		if err != nil {
			return sent, "", err
		}
	} else {
		p.contacts.add(t, by, 0, 0)
	}
	n, err := relay(remote, client, cbr)
	return sent + n, "", err
}

// relay copies src to dst until src ends: first what br holds of src, then
// src itself, so that the kernel can splice TCP and unix sockets.
func relay(dst, src net.Conn, br *bufio.Reader) (int64, error) {
	var n int64
	if br != nil && br.Buffered() > 0 {
		b, _ := br.Peek(br.Buffered())
		m, err := dst.Write(b)
		n += int64(m)
		if err != nil {
			return n, err
		}
		_, _ = br.Discard(m)
	}
	m, err := io.Copy(dst, src)
	return n + m, err
}

// sameServer reports whether a ClientHello's server name is t's host.
func sameServer(name string, t target) bool {
	if a, err := netip.ParseAddr(name); err == nil {
		return t.literal() && a.Unmap() == t.addr
	}
	return !t.literal() && name == t.host
}

// closeWrite ends c's sending half, where c has one.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}
