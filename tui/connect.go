package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/sluice-dev/sluice/queue"
)

// A connect request is a networked run's question about a host outside
// its set, while the run's connection waits (network_ask_timeout): it is
// answered with one key, y (or a) once, r for the rest of the run, n (or
// d, or Esc) no; no reason is asked for. A rule (network_allow) is made in
// config.toml, not here.

// connectHint is what the queue row of a connect request offers.
const connectHint = " — y once · r this run · n"

// connectKey answers the selected connect request; handled reports
// whether msg was one of its keys.
func (m *Model) connectKey(msg tea.KeyPressMsg) (cmd tea.Cmd, handled bool) {
	it := m.current()
	if it == nil || m.focus != focusQueue || it.req.Kind != queue.KindConnect || it.busy {
		return nil, false
	}
	k := m.keys
	once := key.Matches(msg, k.Approve) || key.Matches(msg, k.Yes)
	forRun := key.Matches(msg, k.ApproveRun)
	switch {
	case key.Matches(msg, k.Deny), key.Matches(msg, k.No):
		// Saying no needs no grace, nor a reason.
		return m.denyCmd(it.req.ID, "a person refused the connection"), true
	case key.Matches(msg, k.ApproveRule):
		m.setErr(fmt.Errorf("hosts every run may reach go in network_allow in config.toml; here: y once, r for this run"))
		return nil, true
	case !once && !forRun:
		return nil, false
	}
	if left := m.graceLeft(); left > 0 {
		m.setStatus(fmt.Sprintf("approve keys wait %.1fs: look at what changed", left.Seconds()))
		return nil, true
	}
	if forRun {
		if m.d.opt.Fleet != nil {
			m.setErr(fmt.Errorf("over the hub a connection is allowed once (y) or refused (n); for the whole run, answer on %s", HostOf(it.req.ID)))
			return nil, true
		}
		return m.approveAs(it.req.ID, queue.Approval{Scope: queue.ScopeRun}, "allowed for the rest of its run"), true
	}
	return m.approveAs(it.req.ID, queue.Approval{Scope: queue.ScopeOnce}, "allowed once"), true
}

// netSummary is a run's contacts in a few words: each host allowed, with
// the bytes each way, and how many were refused ("net: registry.npmjs.org:443
// ↑1.2k ↓45k · 1 refused"); "" for none.
func netSummary(cs []queue.Contact) string {
	if len(cs) == 0 {
		return ""
	}
	var parts []string
	refused := 0
	for _, c := range cs {
		if strings.HasPrefix(c.AllowedBy, "refused") {
			refused++
			continue
		}
		t := queue.Request{Host: c.Host, Port: c.Port}
		parts = append(parts, fmt.Sprintf("%s ↑%s ↓%s", plainText(t.Target()), size(c.Sent), size(c.Received)))
	}
	if len(parts) > 3 {
		parts = append(parts[:3], fmt.Sprintf("+%d", len(parts)-3))
	}
	if refused > 0 {
		parts = append(parts, fmt.Sprintf("%d refused", refused))
	}
	return "net: " + strings.Join(parts, " · ")
}

// size is a byte count in a few characters: 45, 1.2k, 45k, 3.4M.
func size(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 10_000:
		return fmt.Sprintf("%.1fk", float64(n)/1000)
	case n < 1_000_000:
		return fmt.Sprintf("%dk", n/1000)
	case n < 10_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n < 1_000_000_000:
		return fmt.Sprintf("%dM", n/1_000_000)
	}
	return fmt.Sprintf("%.1fG", float64(n)/1e9)
}

// netDetail is a run's contacts, one line each, for History's detail.
func netDetail(cs []queue.Contact) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		t := queue.Request{Host: c.Host, Port: c.Port}
		out = append(out, fmt.Sprintf("%s ↑%s ↓%s %s", plainText(t.Target()), size(c.Sent), size(c.Received), plainText(c.AllowedBy)))
	}
	return out
}
