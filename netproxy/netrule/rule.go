// Package netrule holds what a networked run's proxy is told: its host
// rules (ParseRule: host, *.domain, host:port, IP, CIDR), its Config and
// the person's Answers. It links no net/http, so the programs that only
// read and check rules (sluice's agent path: the policy, config.toml)
// start without it; package netproxy serves the proxy itself.
package netrule

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Rule is one entry of a run's host set (Config.Allow) or of its refusals
// (Config.Deny), as ParseRule reads it.
type Rule struct {
	// Name is the host name of a name rule, lower case without a trailing
	// dot; for a wildcard rule (*.domain) it is the domain.
	Name string
	// Wildcard makes a name rule match every name below Name (a.Name,
	// a.b.Name), not Name itself.
	Wildcard bool
	// Prefix is an address rule's range (a single address is a /32 or
	// /128); it is valid only for address rules, which never match a name.
	Prefix netip.Prefix
	// Port limits the rule to one port; 0 means any.
	Port int
	// By says where the rule comes from ("knowledge: npm",
	// "network_allow"); a connection it admits is recorded as allowed by
	// it. Empty reads as "rule".
	By string
}

// ParseRule reads one host rule: a host name (registry.npmjs.org), a
// wildcard (*.npmjs.org: names below it, not itself), an IP address or a
// CIDR range (10.0.0.0/8, fe80::/10), each optionally with a port
// (registry.npmjs.org:443, 127.0.0.1:8080, 10.0.0.0/8:5432, [::1]:443,
// [fc00::/7]:443). By is left empty.
func ParseRule(s string) (Rule, error) {
	if len(s) > 300 {
		return Rule{}, fmt.Errorf("netproxy: rule %.40q...: too long", s)
	}
	host, port, err := splitRule(s)
	if err != nil {
		return Rule{}, fmt.Errorf("netproxy: rule %q: %w", s, err)
	}
	r := Rule{Port: port}
	if strings.ContainsRune(host, '/') {
		p, err := netip.ParsePrefix(host)
		if err != nil {
			return Rule{}, fmt.Errorf("netproxy: rule %q: bad CIDR range", s)
		}
		r.Prefix = unmapPrefix(p).Masked()
		return r, nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return Rule{}, fmt.Errorf("netproxy: rule %q: an address with a zone", s)
		}
		a = a.Unmap()
		r.Prefix = netip.PrefixFrom(a, a.BitLen())
		return r, nil
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		r.Wildcard = true
		host = rest
	}
	name, err := NormalName(host)
	if err != nil {
		return Rule{}, fmt.Errorf("netproxy: rule %q: %w", s, err)
	}
	r.Name = name
	return r, nil
}

// ParseRules reads each pattern with ParseRule and labels the rules with by.
func ParseRules(by string, patterns ...string) ([]Rule, error) {
	rules := make([]Rule, 0, len(patterns))
	for _, p := range patterns {
		r, err := ParseRule(p)
		if err != nil {
			return nil, err
		}
		r.By = by
		rules = append(rules, r)
	}
	return rules, nil
}

// String gives the rule back in the form ParseRule reads.
func (r Rule) String() string {
	var host string
	switch {
	case r.Prefix.IsValid():
		if r.Prefix.IsSingleIP() {
			host = r.Prefix.Addr().String()
		} else {
			host = r.Prefix.String()
		}
		if r.Port != 0 && r.Prefix.Addr().Is6() {
			host = "[" + host + "]"
		}
	case r.Wildcard:
		host = "*." + r.Name
	default:
		host = r.Name
	}
	if r.Port != 0 {
		return host + ":" + strconv.Itoa(r.Port)
	}
	return host
}

// Label is the label a connection the rule admits is recorded with.
func (r Rule) Label() string {
	if r.By == "" {
		return "rule"
	}
	return r.By
}

// MatchName reports whether the rule admits (or refuses) the host name at
// port. Address rules never match a name.
func (r Rule) MatchName(name string, port int) bool {
	if r.Prefix.IsValid() || (r.Port != 0 && r.Port != port) {
		return false
	}
	if r.Wildcard {
		return len(name) > len(r.Name) && strings.HasSuffix(name, r.Name) &&
			name[len(name)-len(r.Name)-1] == '.'
	}
	return name == r.Name
}

// MatchAddr reports whether the rule covers the address at port. Name
// rules never match an address.
func (r Rule) MatchAddr(a netip.Addr, port int) bool {
	if !r.Prefix.IsValid() || (r.Port != 0 && r.Port != port) {
		return false
	}
	return r.Prefix.Contains(a.Unmap())
}

// MatchTarget reports whether the rule covers a connect request's target
// as the audit log records it: "host:port", "[v6]:port". Anything else
// matches nothing.
func (r Rule) MatchTarget(target string) bool {
	host, port, err := splitRule(target)
	if err != nil || port == 0 {
		return false
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return r.MatchAddr(a, port)
	}
	name, err := NormalName(host)
	return err == nil && r.MatchName(name, port)
}

// splitRule separates a rule's host from its optional port.
func splitRule(s string) (host string, port int, err error) {
	if s == "" {
		return "", 0, fmt.Errorf("empty")
	}
	if rest, ok := strings.CutPrefix(s, "["); ok {
		inner, after, ok := strings.Cut(rest, "]")
		if !ok || inner == "" {
			return "", 0, fmt.Errorf("unclosed [")
		}
		if after == "" {
			return inner, 0, nil
		}
		p, ok := strings.CutPrefix(after, ":")
		if !ok {
			return "", 0, fmt.Errorf("text after ]")
		}
		port, err := ParsePort(p)
		return inner, port, err
	}
	switch strings.Count(s, ":") {
	case 0:
		return s, 0, nil
	case 1:
		h, p, _ := strings.Cut(s, ":")
		port, err := ParsePort(p)
		return h, port, err
	default:
		// A bare IPv6 address or range: a port needs the brackets.
		return s, 0, nil
	}
}

// ParsePort reads a decimal port 1-65535.
func ParsePort(s string) (int, error) {
	if s == "" || len(s) > 5 {
		return 0, fmt.Errorf("bad port %q", s)
	}
	n := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("bad port %q", s)
		}
		n = n*10 + int(c-'0')
	}
	if n < 1 || n > 65535 {
		return 0, fmt.Errorf("bad port %q", s)
	}
	return n, nil
}

// NormalName checks a DNS host name and gives it in lower case without a
// trailing dot. It refuses what is not a plain name: empty labels, bytes
// outside letters, digits, '-' and '_', and a last label of digits only
// (127.1 and 0x7f.1 are addresses to some resolvers, never names).
func NormalName(s string) (string, error) {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return "", fmt.Errorf("not a host name")
	}
	s = strings.ToLower(s)
	label := 0
	digits := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '.':
			if label == 0 {
				return "", fmt.Errorf("not a host name")
			}
			label, digits = 0, true
			continue
		case c >= '0' && c <= '9':
		case c >= 'a' && c <= 'z', c == '-', c == '_':
			digits = false
		default:
			return "", fmt.Errorf("not a host name")
		}
		label++
		if label > 63 {
			return "", fmt.Errorf("not a host name")
		}
	}
	if label == 0 || digits || strings.HasPrefix(s, "0x") && !strings.Contains(s, ".") {
		return "", fmt.Errorf("not a host name")
	}
	return s, nil
}

// unmapPrefix turns an IPv4-mapped IPv6 range into its IPv4 range.
func unmapPrefix(p netip.Prefix) netip.Prefix {
	a := p.Addr()
	if !a.Is4In6() {
		return p
	}
	bits := p.Bits() - 96
	if bits < 0 {
		bits = 0
	}
	return netip.PrefixFrom(a.Unmap(), bits)
}

// DefaultAskTimeout is how long a connection to a host outside the run's
// set waits for the person when Config.AskTimeout is 0 (pip gives up after
// 15 s).
const DefaultAskTimeout = 10 * time.Second

// Config is what one run's proxy lets through.
type Config struct {
	// Allow is the run's host set: the hosts its verdict names and the
	// person's own rules (network_allow), each labelled with its By.
	Allow []Rule
	// Deny refuses what it matches even where Allow admits it: names by
	// name rule, IP literals and resolved addresses by address rule.
	Deny []Rule
	// Ask is asked about a host outside the run's set; the connection
	// holds meanwhile. Connections to the same host and port that arrive
	// while one question is open wait for its answer rather than asking
	// again. Ask must return when its context ends; an error refuses. Nil
	// refuses every host outside the set.
	Ask func(ctx context.Context, host string, port int) (Answer, error)
	// AskTimeout bounds the wait for an answer: nobody answering within it
	// refuses the connection (not remembered: the next one asks again).
	// 0 means DefaultAskTimeout.
	AskTimeout time.Duration
	// Upstream, if set, is an HTTP proxy (http://[user:pass@]host:port or
	// host:port) every allowed connection goes through
	// (network_upstream_proxy). Names are then resolved by the upstream,
	// not here: only IP literals are checked against the host-service
	// ranges and Deny's address rules.
	Upstream string
	// Resolve, if set, replaces DNS (tests only: it maps registries' names
	// to local servers, ports included). Its answers are checked like
	// DNS's: an answer in a host-service range (127.0.0.1) is refused
	// unless an Allow address rule names it, so a test that maps a name to
	// a local server also allows that server's address ("127.0.0.1:PORT").
	Resolve func(ctx context.Context, host string, port int) ([]netip.AddrPort, error)
	// DialTimeout bounds each dial; 0 means 30 s.
	DialTimeout time.Duration
	// Token, if set, is the password every client must give (HTTP:
	// Proxy-Authorization basic credentials, any user name; SOCKS5: its
	// username/password method): a proxy on a port other processes of
	// the host can reach serves its run alone. A client without it is
	// answered 407 (SOCKS5: no acceptable method) and not recorded.
	Token string
}

// Answer is the person's answer about a host outside the run's set.
type Answer int

// The answers. The zero Answer refuses.
const (
	// AnswerDeny refuses the connection and the rest of the run's
	// connections to that host and port.
	AnswerDeny Answer = iota
	// AnswerOnce admits the connection (and those waiting on the same
	// question); the next one asks again.
	AnswerOnce
	// AnswerRun admits the host and port for the rest of the run.
	AnswerRun
)

// String names the answer as the contacts record it.
func (a Answer) String() string {
	switch a {
	case AnswerOnce:
		return "asked-once"
	case AnswerRun:
		return "asked-run"
	default:
		return "asked-deny"
	}
}
