package netproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/netip"
	"syscall"
)

// SOCKS5 (RFC 1928): no authentication (or, with a token, a password:
// RFC 1929), CONNECT only.
const (
	socksVersion     = 5
	socksNoAuth      = 0
	socksNoMethod    = 0xff
	socksCmdConnect  = 1
	socksAtypIPv4    = 1
	socksAtypName    = 3
	socksAtypIPv6    = 4
	socksOK          = 0
	socksFailure     = 1
	socksNotAllowed  = 2
	socksUnreachable = 4
	socksRefused     = 5
	socksBadCommand  = 7
	socksBadAddrType = 8
)

// serveSOCKS answers one SOCKS5 client. SOCKS has no room for the refusal
// line: a refused client gets "connection not allowed by ruleset", and
// the refusal is recorded.
func (p *Proxy) serveSOCKS(c net.Conn, lr *limitReader, br *bufio.Reader) {
	methods, err := readSOCKSGreeting(br)
	if err != nil {
		return
	}
	switch {
	case p.cfg.Token != "" && methods[socksUserPass]:
		if _, err := c.Write([]byte{socksVersion, socksUserPass}); err != nil || !p.socksAuth(c, br) {
			return
		}
	case p.cfg.Token == "" && methods[socksNoAuth]:
		if _, err := c.Write([]byte{socksVersion, socksNoAuth}); err != nil {
			return
		}
	default:
		_, _ = c.Write([]byte{socksVersion, socksNoMethod})
		return
	}
	t, code, err := readSOCKSRequest(br)
	if err != nil {
		if code != 0 {
			_ = socksReply(c, code)
		}
		return
	}
	v := p.decide(p.ctx, t)
	if v.refused != "" {
		p.contacts.add(t, "refused: "+v.refused, 0, 0)
		_ = socksReply(c, socksNotAllowed)
		return
	}
	remote, rbr, err := p.dial(p.ctx, t, v, true)
	if err != nil {
		p.contacts.add(t, v.by, 0, 0)
		code := byte(socksUnreachable)
		if errors.Is(err, syscall.ECONNREFUSED) {
			code = socksRefused
		}
		_ = socksReply(c, code)
		return
	}
	if err := socksReply(c, socksOK); err != nil {
		p.untrack(remote)
		p.contacts.add(t, v.by, 0, 0)
		return
	}
	p.tunnel(c, lr, br, remote, rbr, t, v.by)
}

// readSOCKSGreeting reads the version and the offered methods.
func readSOCKSGreeting(r io.Reader) (map[byte]bool, error) {
	var hdr [2]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	if hdr[0] != socksVersion {
		return nil, errors.New("netproxy: not SOCKS5")
	}
	ms := make([]byte, hdr[1])
	if _, err := io.ReadFull(r, ms); err != nil {
		return nil, err
	}
	methods := map[byte]bool{}
	for _, m := range ms {
		methods[m] = true
	}
	return methods, nil
}

// readSOCKSRequest reads a request; on an error, code is the reply to
// send (0: none, the client is gone or not speaking SOCKS).
func readSOCKSRequest(r io.Reader) (t target, code byte, err error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return target{}, 0, err
	}
	if hdr[0] != socksVersion || hdr[2] != 0 {
		return target{}, socksFailure, errors.New("netproxy: bad SOCKS request")
	}
	var host string
	switch hdr[3] {
	case socksAtypIPv4:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return target{}, 0, err
		}
		host = netip.AddrFrom4(b).String()
	case socksAtypIPv6:
		var b [16]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return target{}, 0, err
		}
		host = netip.AddrFrom16(b).String()
	case socksAtypName:
		var n [1]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return target{}, 0, err
		}
		b := make([]byte, n[0])
		if _, err := io.ReadFull(r, b); err != nil {
			return target{}, 0, err
		}
		host = string(b)
	default:
		return target{}, socksBadAddrType, errors.New("netproxy: bad SOCKS address type")
	}
	var pb [2]byte
	if _, err := io.ReadFull(r, pb[:]); err != nil {
		return target{}, 0, err
	}
	if hdr[1] != socksCmdConnect {
		return target{}, socksBadCommand, errors.New("netproxy: SOCKS command not supported")
	}
	port := int(pb[0])<<8 | int(pb[1])
	if port == 0 {
		return target{}, socksFailure, errors.New("netproxy: SOCKS port 0")
	}
	t, err = makeTarget(host, port)
	if err != nil {
		return target{}, socksNotAllowed, err
	}
	return t, 0, nil
}

// socksReply sends a reply with an empty bound address.
func socksReply(c net.Conn, code byte) error {
	_, err := c.Write([]byte{socksVersion, code, 0, socksAtypIPv4, 0, 0, 0, 0, 0, 0})
	return err
}
