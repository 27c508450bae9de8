package app

import (
	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/exec"
	"github.com/sluice-dev/sluice/queue"
)

// network fills in what a confined networked run's proxy lets through:
// network_allow, network_deny, network_upstream_proxy and
// network_ask_timeout.
func (c *Config) network(conf *exec.Confine) {
	conf.NetAllow, conf.NetDeny = c.NetworkAllow, c.NetworkDeny
	conf.NetUpstream, conf.NetAskTimeout = c.NetworkUpstreamProxy, c.NetworkAskTimeout
}

// NetworkAsk asks a person, through spool sp, whether a networked run may
// reach a host outside its set: a connect request, whose allow is checked
// against the audit log at auditPath ("" for the one the engine serving sp
// published).
func NetworkAsk(sp *queue.Spool, auditPath string) exec.AskFunc {
	return exec.SpoolAsk(sp, audit.Verifier{Path: auditPath, Spool: sp}, audit.Login)
}
