// Package proxyhost makes the program that imports it one that hosts the
// proxies of networked runs: it sets exec.NewProxyServer to package
// netproxy's proxy. Package netproxy links net/http, which would cost
// every process of sluice's agent path (run, hook, sandbox, check) about
// 0.3 ms to start; the programs that run commands import this package
// (sluice-engine, sluice-console, sluice-mcp) and sluice itself does not.
package proxyhost

import (
	"github.com/sluice-dev/sluice/exec"
	"github.com/sluice-dev/sluice/netproxy"
	"github.com/sluice-dev/sluice/netproxy/netrule"
)

func init() {
	exec.NewProxyServer = func(cfg netrule.Config) (exec.ProxyServer, error) {
		p, err := netproxy.New(cfg)
		if err != nil {
			return nil, err
		}
		return p, nil
	}
}
