package netproxy

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
)

// verdict is the proxy's decision about one connection.
type verdict struct {
	// by is what allowed it (Contact.AllowedBy); empty when refused.
	by string
	// refused says why not; empty when allowed.
	refused string
	// addrs are the checked addresses to dial, in order; empty when the
	// upstream proxy resolves the name.
	addrs []netip.AddrPort
}

func refuse(format string, a ...any) verdict {
	return verdict{refused: fmt.Sprintf(format, a...)}
}

// decide runs the rules on t: deny first, then the host services, then the
// run's set or the person, and last (for a name) its resolved addresses,
// which are what the dial then uses. A name outside the set is not
// resolved until the person has allowed it: a DNS query can carry data.
func (p *Proxy) decide(ctx context.Context, t target) verdict {
	for _, r := range p.cfg.Deny {
		if t.literal() && r.MatchAddr(t.addr, t.port) || !t.literal() && r.MatchName(t.host, t.port) {
			return refuse("denied by rule %s", r)
		}
	}
	if t.literal() {
		if v := p.checkAddr(netip.AddrPortFrom(t.addr, uint16(t.port)), ""); v.refused != "" {
			return v
		}
	}
	if dockerPorts[t.port] && !p.namesPort(t) {
		return refuse("port %d is the docker API (a rule must name the port)", t.port)
	}
	v := p.admit(ctx, t)
	if v.refused != "" {
		return v
	}
	switch {
	case t.literal():
		v.addrs = []netip.AddrPort{netip.AddrPortFrom(t.addr, uint16(t.port))}
	case p.upstream != nil:
		// The upstream proxy resolves the name.
	default:
		addrs, err := p.resolve(ctx, t)
		if err != nil {
			return refuse("cannot resolve: %s", clean(err.Error()))
		}
		for _, a := range addrs {
			if c := p.checkAddr(a, t.host); c.refused != "" {
				return c
			}
		}
		v.addrs = addrs
	}
	return v
}

// admit finds what admits t: a rule of the run's set, an answer the person
// gave for the run, or the person now.
func (p *Proxy) admit(ctx context.Context, t target) verdict {
	for _, r := range p.cfg.Allow {
		if t.literal() && r.MatchAddr(t.addr, t.port) || !t.literal() && r.MatchName(t.host, t.port) {
			return verdict{by: r.Label()}
		}
	}
	return p.ask(ctx, t)
}

// checkAddr refuses an address the Deny rules cover, and an address of the
// host's own services that no Allow address rule inside its range names. name is the name
// that resolved to it, empty for an IP literal.
func (p *Proxy) checkAddr(ap netip.AddrPort, name string) verdict {
	a, port := ap.Addr().Unmap(), int(ap.Port())
	what := a.String()
	if name != "" {
		what = "it resolves to " + what + ", which"
	}
	for _, r := range p.cfg.Deny {
		if r.MatchAddr(a, port) {
			return refuse("%s is denied by rule %s", what, r)
		}
	}
	hr, ok := hostRangeOf(a)
	if !ok {
		return verdict{}
	}
	// Only a rule inside the host range names it: 0.0.0.0/0, meant as
	// "the internet", does not open the host's loopback.
	for _, r := range p.cfg.Allow {
		if r.MatchAddr(a, port) && r.Prefix.Bits() >= hr.prefix.Bits() {
			return verdict{}
		}
	}
	return refuse("%s is a host service (%s)", what, hr.what)
}

// namesPort reports whether an Allow rule that matches t names t's port
// explicitly.
func (p *Proxy) namesPort(t target) bool {
	for _, r := range p.cfg.Allow {
		if r.Port == t.port && (t.literal() && r.MatchAddr(t.addr, t.port) || !t.literal() && r.MatchName(t.host, t.port)) {
			return true
		}
	}
	return false
}

// resolve gives t's addresses with the port to dial: Config.Resolve's in
// tests, DNS's otherwise.
func (p *Proxy) resolve(ctx context.Context, t target) ([]netip.AddrPort, error) {
	var addrs []netip.AddrPort
	if p.cfg.Resolve != nil {
		got, err := p.cfg.Resolve(ctx, t.host, t.port)
		if err != nil {
			return nil, err
		}
		addrs = got
	} else {
		ctx, cancel := context.WithTimeout(ctx, p.cfg.DialTimeout)
		defer cancel()
		ips, err := netResolver.LookupNetIP(ctx, "ip", t.host)
		if err != nil {
			return nil, err
		}
		for _, ip := range ips {
			addrs = append(addrs, netip.AddrPortFrom(ip.Unmap(), uint16(t.port)))
		}
	}
	if len(addrs) == 0 {
		return nil, errors.New("no addresses")
	}
	if len(addrs) > 32 {
		addrs = addrs[:32]
	}
	return addrs, nil
}

// clean keeps an error's text printable and on one line, for a status line.
func clean(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c >= 0x7f {
			b[i] = '?'
		}
	}
	if len(b) > 200 {
		b = append(b[:200], "..."...)
	}
	return string(b)
}

// refusalLine is what a refused client is told.
func refusalLine(t target, why string) string {
	return "sluice: " + t.String() + " refused: " + why
}
