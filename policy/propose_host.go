package policy

import (
	"strings"

	"github.com/sluice-dev/sluice/netproxy/netrule"
)

// HostProposals gives the network_allow entries a person may choose for a
// run's connection to host at port, narrowest first, and the one to offer
// first: host:port; host on any port; and, for a name with a parent
// domain of two labels or more, *.domain (every name below it, on that
// port unless it is a web port). The host alone is offered first for the
// web's ports (80 and 443), host:port for any other: a person who allows
// registry.example:443 allows the registry, one who allows
// db.example:5432 allows a database, not every service on that machine.
// The wildcard is never the first offer.
//
// A host no rule can name (not a plain host name or IP address, or a
// wildcard itself) gives none.
func HostProposals(host string, port int) (entries []string, def int) {
	if host == "" || strings.HasPrefix(host, "*") || strings.ContainsAny(host, "/[]") || port < 1 || port > 65535 {
		return nil, 0
	}
	r, err := netrule.ParseRule(host)
	if err != nil || r.Port != 0 {
		return nil, 0 // host:port given as the host, or not a host at all
	}
	web := port == 80 || port == 443
	withPort := r
	withPort.Port = port
	entries = []string{withPort.String(), r.String()}
	if web {
		def = 1
	}
	if parent, ok := parentDomain(r); ok {
		w := netrule.Rule{Name: parent, Wildcard: true}
		if !web {
			w.Port = port
		}
		entries = append(entries, w.String())
	}
	return entries, def
}

// parentDomain is the domain a wildcard for name rule r would name: the
// name without its first label, when that keeps two labels or more
// (never *.com).
func parentDomain(r netrule.Rule) (string, bool) {
	if r.Prefix.IsValid() || r.Wildcard {
		return "", false
	}
	_, parent, ok := strings.Cut(r.Name, ".")
	if !ok || !strings.Contains(parent, ".") {
		return "", false
	}
	return parent, true
}
