// Package netproxy is a networked run's own egress proxy: the run reaches
// the network only through it, and it lets through only the hosts the run's
// verdict and the person's rules name, asking the person about the rest.
//
// One Proxy serves one run on a listener its caller passes (in production
// a TCP listener made inside the run's network namespace and handed over,
// or one on the host's loopback where there are no namespaces). On that
// one listener it speaks HTTP CONNECT, plain HTTP forwarding of
// absolute-form requests, and SOCKS5 (CONNECT only, no authentication),
// told apart by the first byte.
//
// Once a connection is let through, its bytes (a tunnel's, and a
// forwarded message's body of known length) go from one TCP socket to the
// other by splice(2) on Linux, past the few the proxy had already read
// (a request's header, a ClientHello), and are counted from what each
// copy returns.
//
// It never resolves a name the rules do not admit (a DNS query can carry
// data out), never re-resolves a name after checking its addresses (the dial
// goes to the address that was checked, so a name that resolves to the
// host's loopback is refused: DNS rebinding), and never lets a name rule
// admit an IP literal. The host's own services (loopback, link-local and the
// cloud metadata address, private ranges, the docker API ports) are refused
// unless an Allow rule names the address (an IP or CIDR rule no wider than
// the range: 0.0.0.0/0 does not open loopback) or the docker port (a rule
// with that port). A TLS ClientHello inside a tunnel that names
// a server other than the one the tunnel was opened to is refused.
//
// It does not inspect what an allowed connection carries: a run may send
// anything to a host it is allowed to reach, and the Host inside a TLS
// session may name another site of the same CDN (domain fronting past the
// SNI check). A client using Encrypted Client Hello shows only its public
// name, and is refused where that differs from the tunnel's host. SOCKS5
// has no room for the refusal line: a refused SOCKS client is told "not
// allowed by ruleset", and the refusal is recorded. Nor does it see traffic that
// does not go through it (git over SSH without a rule, UDP): keeping the run
// from reaching anything else is the sandbox's job.
package netproxy
