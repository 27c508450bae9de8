//go:build !linux

package sandbox

import "net"

// proxySupported reports whether this platform can give a run its own
// proxy: only Linux can.
func proxySupported() bool { return false }

// ProxyListener is where the caller serves the run's proxy; no run has
// one here.
func (c *Confinement) ProxyListener() net.Listener { return nil }

// ProxyURL is the proxy's address as the run reaches it; no run has one
// here.
func (c *Confinement) ProxyURL() string { return "" }

// ProxyShared reports whether other processes can reach the run's proxy;
// no run has one here.
func (c *Confinement) ProxyShared() bool { return false }

// Network says, for the sandbox line, how the run reaches the network.
func (c *Confinement) Network() string {
	switch {
	case c == nil:
		return ""
	case c.spec.Profile.Network():
		return "network: any host"
	}
	return "network: none"
}
