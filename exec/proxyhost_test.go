package exec

import (
	"github.com/sluice-dev/sluice/netproxy"
	"github.com/sluice-dev/sluice/netproxy/netrule"
)

// The package's own tests host proxies as exec/proxyhost makes a program
// do (which they cannot import: it imports this package).
func init() {
	NewProxyServer = func(cfg netrule.Config) (ProxyServer, error) {
		p, err := netproxy.New(cfg)
		if err != nil {
			return nil, err
		}
		return p, nil
	}
}
