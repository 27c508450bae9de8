package netproxy

import "net/netip"

// hostRange is one range of addresses that reach the host's own services
// or its local network rather than the internet.
type hostRange struct {
	prefix netip.Prefix
	what   string
}

// hostRanges are refused unless an address rule names them.
var hostRanges = func() []hostRange {
	var rs []hostRange
	for _, r := range []struct{ cidr, what string }{
		{"0.0.0.0/8", "this host"}, // 0.0.0.0 reaches the host's own listeners on Linux
		{"127.0.0.0/8", "loopback"},
		{"169.254.0.0/16", "link-local"}, // 169.254.169.254: cloud metadata
		{"10.0.0.0/8", "private"},
		{"172.16.0.0/12", "private"},
		{"192.168.0.0/16", "private"},
		{"100.64.0.0/10", "shared address space"},
		{"224.0.0.0/4", "multicast"},
		{"240.0.0.0/4", "reserved"}, // and 255.255.255.255, broadcast
		{"::/128", "this host"},
		{"::1/128", "loopback"},
		{"fe80::/10", "link-local"},
		{"fec0::/10", "site-local"},
		{"fc00::/7", "private"},
		{"ff00::/8", "multicast"},
	} {
		rs = append(rs, hostRange{netip.MustParsePrefix(r.cidr), r.what})
	}
	return rs
}()

// dockerPorts are the docker daemon's TCP API ports: whoever reaches one
// runs containers as root on that machine.
var dockerPorts = map[int]bool{2375: true, 2376: true}

// hostService says what kind of host service a is ("loopback", "private"),
// or "" for an address on the internet.
func hostService(a netip.Addr) string {
	r, _ := hostRangeOf(a)
	return r.what
}

// hostRangeOf finds the host-service range a is in.
func hostRangeOf(a netip.Addr) (hostRange, bool) {
	a = a.Unmap()
	for _, r := range hostRanges {
		if r.prefix.Contains(a) {
			return r, true
		}
	}
	return hostRange{}, false
}
