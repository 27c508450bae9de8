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
// d, or Esc) no; no reason is asked for. A opens a dialog that keeps a
// network_allow entry for the host in the person's policy file, for every
// later run, and allows this one for the rest of its run. Over the hub
// the rule is the box's person's to make: A allows for the run and says
// so.

// connectHint is what the queue row of a connect request offers.
const connectHint = " — y once · r this run · A rule · n"

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
	rule := key.Matches(msg, k.ApproveRule)
	switch {
	case key.Matches(msg, k.Deny), key.Matches(msg, k.No):
		// Saying no needs no grace, nor a reason.
		return m.denyCmd(it.req.ID, "a person refused the connection"), true
	case !once && !forRun && !rule:
		return nil, false
	}
	if left := m.graceLeft(); left > 0 {
		m.setStatus(fmt.Sprintf("approve keys wait %.1fs: look at what changed", left.Seconds()))
		return nil, true
	}
	switch {
	case rule && m.d.opt.Fleet != nil:
		// The box's policy file is its person's: this console cannot
		// write it, and a rule made here would not reach the box.
		box := HostOf(it.req.ID)
		return noted(m.approveAs(it.req.ID, queue.Approval{Scope: queue.ScopeRun}, "allowed for the rest of its run"),
			fmt.Sprintf("no rule is kept from here: make the rule on %s (A in its console, or network_allow in its policy file)", box)), true
	case rule:
		entries, def := []string(nil), 0
		if m.d.opt.Rules != nil {
			entries, def = m.d.opt.Rules.ProposeHostRule(it.req.Host, it.req.Port)
		}
		if len(entries) == 0 {
			m.setErr(fmt.Errorf("no network_allow entry can name %s here; y once, r for this run", plainText(it.req.Target())))
			return nil, true
		}
		it.busy = true
		return m.proposeHostCmd(it.req, entries, def), true
	case forRun:
		return m.approveAs(it.req.ID, queue.Approval{Scope: queue.ScopeRun}, "allowed for the rest of its run"), true
	}
	return m.approveAs(it.req.ID, queue.Approval{Scope: queue.ScopeOnce}, "allowed once"), true
}

// noted adds note to the status line of the act cmd reports.
func noted(cmd tea.Cmd, note string) tea.Cmd {
	if cmd == nil {
		return nil
	}
	return func() tea.Msg {
		msg := cmd()
		if a, ok := msg.(actedMsg); ok {
			a.note = note
			return a
		}
		return msg
	}
}

// proposeHostCmd reads what each proposed network_allow entry would make
// of the person's policy file, off the UI goroutine; the dialog opens on
// def.
func (m *Model) proposeHostCmd(req *queue.Request, entries []string, def int) tea.Cmd {
	rules := m.d.opt.Rules
	return func() tea.Msg {
		msg := hostProposedMsg{id: req.ID, entries: entries, choice: def, texts: make([]string, len(entries))}
		for i, e := range entries {
			text, err := rules.HostRuleText(req, e)
			if err != nil {
				msg.err = fmt.Errorf("no rule can be added: %w; y once, r for this run", err)
				return msg
			}
			msg.texts[i] = text
		}
		// One read of the audit log for all of them; unreadable, the
		// dialog says it could not count.
		if n, err := rules.CountHostMatches(entries); err == nil && len(n) == len(entries) {
			msg.matches = n
		}
		return msg
	}
}

// addHostRuleCmd keeps entry in the person's network_allow; the approval
// follows.
func (m *Model) addHostRuleCmd(req *queue.Request, entry string) tea.Cmd {
	rules := m.d.opt.Rules
	return func() tea.Msg {
		where, err := rules.AddHostRule(req, entry)
		return hostRuleAddedMsg{id: req.ID, entry: entry, where: where, err: err}
	}
}

// afterHostPropose opens the host rule dialog on the request it was
// proposed for, if it is still the one selected.
func (m *Model) afterHostPropose(msg hostProposedMsg) tea.Cmd {
	if !m.proposalStands(msg.id, msg.err) {
		return nil
	}
	m.open(&hostRuleDialog{rule: msg})
	return nil
}

// afterHostRule allows the connection for the rest of its run once its
// rule is kept (the run's proxy took its hosts when it started: the rule
// reaches the runs that start from now on).
func (m *Model) afterHostRule(msg hostRuleAddedMsg) tea.Cmd {
	if msg.err != nil {
		m.idle(msg.id)
		m.setErr(fmt.Errorf("rule not added: %w; the connection still waits: y once, r for this run", msg.err))
		return nil
	}
	rule := fmt.Sprintf("network_allow %q added to %s", msg.entry, msg.where)
	return m.approveAs(msg.id, queue.Approval{Scope: queue.ScopeRun, Rule: rule},
		"allowed for the rest of its run, "+plainText(rule)+",")
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
