package netproxy

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/sluice-dev/sluice/netproxy/netrule"
)

// target is where a client asked to go: a checked host name or an IP
// literal, and a port.
type target struct {
	// host is the name (lower case, no trailing dot) or, for an IP
	// literal, the address's text.
	host string
	// addr is the address of an IP literal, invalid for a name.
	addr netip.Addr
	port int
}

// literal reports whether the client named an address rather than a name.
func (t target) literal() bool { return t.addr.IsValid() }

// String gives host:port, with brackets around an IPv6 address.
func (t target) String() string {
	if t.addr.Is6() {
		return "[" + t.host + "]:" + strconv.Itoa(t.port)
	}
	return t.host + ":" + strconv.Itoa(t.port)
}

// key is what remembered answers and pending questions are filed under.
func (t target) key() string { return t.String() }

// parseTarget reads an authority (host:port, [v6]:port, or a bare host
// when defPort is not 0), as a CONNECT line or an absolute URL carries it.
func parseTarget(s string, defPort int) (target, error) {
	if s == "" || len(s) > 300 {
		return target{}, fmt.Errorf("bad target")
	}
	host, portText := s, ""
	if rest, ok := strings.CutPrefix(s, "["); ok {
		inner, after, ok := strings.Cut(rest, "]")
		if !ok {
			return target{}, fmt.Errorf("bad target %q", s)
		}
		host = inner
		if after != "" {
			p, ok := strings.CutPrefix(after, ":")
			if !ok {
				return target{}, fmt.Errorf("bad target %q", s)
			}
			portText = p
		}
		if _, err := netip.ParseAddr(host); err != nil || !strings.Contains(host, ":") {
			return target{}, fmt.Errorf("bad IPv6 address in %q", s)
		}
	} else if i := strings.LastIndexByte(s, ':'); i >= 0 {
		host, portText = s[:i], s[i+1:]
		if strings.ContainsRune(host, ':') {
			return target{}, fmt.Errorf("bad target %q: an IPv6 address needs brackets", s)
		}
	}
	port := defPort
	if portText != "" || defPort == 0 {
		p, err := netrule.ParsePort(portText)
		if err != nil {
			return target{}, fmt.Errorf("bad target %q: %w", s, err)
		}
		port = p
	}
	return makeTarget(host, port)
}

// makeTarget checks a host (an IP literal or a name) and pairs it with a
// port.
func makeTarget(host string, port int) (target, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return target{}, fmt.Errorf("bad target %q: an address with a zone", host)
		}
		a = a.Unmap()
		return target{host: a.String(), addr: a, port: port}, nil
	}
	name, err := netrule.NormalName(host)
	if err != nil {
		return target{}, fmt.Errorf("bad target %q: %w", host, err)
	}
	return target{host: name, port: port}, nil
}
