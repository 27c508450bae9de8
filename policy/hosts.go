package policy

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/sluice-dev/sluice/netproxy/netrule"
)

// netConfig is what the person's configuration says about the network,
// shared by a Policy and the copies With makes.
type netConfig struct {
	// allow and deny are network_allow and network_deny from
	// config.toml and the policy files, in load order.
	allow, deny []hostGrant
	// getenv reads the engine's environment (GOPROXY, GOENV).
	getenv func(string) string
	// aptDir holds the APT sources lists (/etc/apt).
	aptDir string
}

// loadNetwork takes config.toml's network_allow and network_deny from
// opts (config.toml's own checks have already refused bad entries; a
// caller that skipped them gets the error here).
func (p *Policy) loadNetwork(opts Options) error {
	p.net = &netConfig{getenv: opts.Getenv, aptDir: "/etc/apt"}
	if p.net.getenv == nil {
		p.net.getenv = os.Getenv
	}
	for _, l := range []struct {
		key   string
		specs []string
		to    *[]hostGrant
	}{{"network_allow", opts.NetworkAllow, &p.net.allow}, {"network_deny", opts.NetworkDeny, &p.net.deny}} {
		rules, err := netrule.ParseRules("", l.specs...)
		if err != nil {
			return fmt.Errorf("policy: config %s: %s", l.key, strings.TrimPrefix(err.Error(), "netproxy: "))
		}
		for _, r := range rules {
			*l.to = append(*l.to, hostGrant{r.String(), "config: " + l.key})
		}
	}
	return nil
}

// layerNetwork adds a policy file's network_allow and network_deny. A
// project's file may only narrow: its network_allow is ignored, with a
// warning.
func (p *Policy) layerNetwork(allow, deny []string, src, origin, file string) error {
	for _, l := range []struct {
		key   string
		specs []string
		to    *[]hostGrant
	}{{"network_allow", allow, &p.net.allow}, {"network_deny", deny, &p.net.deny}} {
		if len(l.specs) == 0 {
			continue
		}
		line := lineOf(src, l.key)
		rules, err := netrule.ParseRules("", l.specs...)
		if err != nil {
			return &LoadError{File: file, Line: line, Msg: l.key + ": " + strings.TrimPrefix(err.Error(), "netproxy: ") +
				" (want a host, *.domain, host:port, an IP address or a CIDR range)"}
		}
		if origin == originProject && l.key == "network_allow" {
			p.warnings = append(p.warnings, fmt.Sprintf("%s:%d: network_allow ignored: a project policy may only narrow what runs reach (network_deny), never widen it", file, line))
			continue
		}
		by := fmt.Sprintf("rule: %s in %s:%d", l.key, file, line)
		if origin == OriginDefault {
			by = "rule: " + l.key + " in the default policy"
		}
		for _, r := range rules {
			*l.to = append(*l.to, hostGrant{r.String(), by})
		}
	}
	return nil
}

// network fills in the verdict's hosts: those of its parts, then the
// person's network_allow, less what network_deny refuses whole. A
// verdict gets them when a part reaches hosts by itself or its run is
// networked; the deny rules come with them, for the run's proxy.
func (p *Policy) network(v *Verdict) {
	if p.net == nil {
		return // a Policy not made by Load (Matcher's)
	}
	var s hostSet
	for _, c := range v.Commands {
		for _, h := range c.hosts {
			s.add(h.host, h.by)
		}
	}
	if len(s.list) == 0 && v.Profile() != "networked" || v.Action == Deny {
		return
	}
	for _, h := range p.net.allow {
		s.add(h.host, h.by)
	}
	var deny []netrule.Rule
	for _, d := range p.net.deny {
		if r, err := netrule.ParseRule(d.host); err == nil {
			deny = append(deny, r)
			v.HostsDenied = append(v.HostsDenied, d.host)
			if v.HostsDeniedBy == nil {
				v.HostsDeniedBy = map[string]string{}
			}
			if _, ok := v.HostsDeniedBy[d.host]; !ok {
				v.HostsDeniedBy[d.host] = d.by
			}
		}
	}
	for _, g := range s.list {
		a, err := netrule.ParseRule(g.host)
		if err != nil {
			continue
		}
		if i := slices.IndexFunc(deny, func(d netrule.Rule) bool { return covers(d, a) }); i >= 0 {
			why := fmt.Sprintf("%s (%s) is refused by network_deny %s (%s)", g.host, g.by, deny[i], v.HostsDeniedBy[deny[i].String()])
			if !slices.Contains(v.Reasons, why) {
				v.Reasons = append(v.Reasons, why)
			}
			continue
		}
		v.Hosts = append(v.Hosts, g.host)
		if v.HostsBy == nil {
			v.HostsBy = map[string]string{}
		}
		v.HostsBy[g.host] = g.by
	}
}

// covers reports whether deny rule d refuses everything allow rule a
// admits (a port-limited deny covers only an allow for that port).
func covers(d, a netrule.Rule) bool {
	if d.Port != 0 && d.Port != a.Port {
		return false
	}
	switch {
	case d.Prefix.IsValid():
		return a.Prefix.IsValid() && d.Prefix.Bits() <= a.Prefix.Bits() && d.Prefix.Contains(a.Prefix.Addr())
	case a.Prefix.IsValid():
		return false
	case d.Wildcard:
		return strings.HasSuffix(a.Name, "."+d.Name) || a.Wildcard && a.Name == d.Name
	}
	return !a.Wildcard && a.Name == d.Name
}
