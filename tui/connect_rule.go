package tui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
)

// hostRuleDialog allows a connect request for the rest of its run and
// keeps a network_allow entry for its host (A): every networked run that
// starts later reaches the host without asking.
type hostRuleDialog struct {
	rule hostProposedMsg
}

// Render implements dialog.
func (d *hostRuleDialog) Render(m *Model, _ int) (string, []string) {
	ds := m.st.Dialog
	r := d.rule
	var body []string
	if it := m.find(r.id); it != nil {
		body = append(body, ds.Text.Render(plainText(it.req.Command)+" wants "+plainText(it.req.Target())))
	}
	body = append(body, ruleLines(m, r.texts[r.choice])...)
	body = append(body, "",
		choiceLine(m, r.entries, r.choice),
		ds.Text.Render(entryMeaning(r.entries[r.choice])+": networked runs that start from now on, in every project, reach it without asking (network_deny still wins); this run, for the rest of it."),
		ds.Text.Render(pastConnections(r.pastMatches())),
		ds.Text.Render(policyFileText(m.d.opt.PolicyFile)),
		"", ds.Button.Render("y: allow and keep the rule")+"  "+noButton(m))
	return "Allow, and let every run reach it from now on:", body
}

// pastConnections says how many past connect requests an entry would
// have admitted (n < 0: the audit log could not be read).
func pastConnections(n int) string {
	if n < 0 {
		return "The audit log could not be read to count the past connection requests it would have admitted."
	}
	return fmt.Sprintf("It would have admitted %d past connection request(s) in the audit log.", n)
}

// pastMatches is how many past connect requests the chosen entry would
// have admitted (-1: not counted).
func (r hostProposedMsg) pastMatches() int {
	if r.choice < len(r.matches) {
		return r.matches[r.choice]
	}
	return -1
}

// HandleKey implements dialog: ← and → narrow and widen the entry, y
// keeps it and allows the connection.
func (d *hostRuleDialog) HandleKey(m *Model, msg tea.KeyPressMsg) (dialog, tea.Cmd) {
	if narrowWiden(msg, &d.rule.choice, len(d.rule.entries)) {
		return d, nil
	}
	it := m.confirmed(msg, d.rule.id)
	if it == nil {
		return nil, nil
	}
	it.busy = true
	return nil, m.addHostRuleCmd(it.req, d.rule.entries[d.rule.choice])
}

// entryMeaning says in words what a network_allow entry admits.
func entryMeaning(entry string) string {
	host, port := entry, ""
	switch {
	case strings.HasPrefix(entry, "["):
		if i := strings.Index(entry, "]:"); i > 0 {
			host, port = entry[1:i], entry[i+2:]
		}
	case strings.Count(entry, ":") == 1:
		host, port, _ = strings.Cut(entry, ":")
	}
	host = plainText(host)
	on := "on any port"
	if port != "" {
		on = "on port " + plainText(port) + " only"
	}
	if domain, ok := strings.CutPrefix(host, "*."); ok {
		return fmt.Sprintf("every name under %s (not %s itself), %s", domain, domain, on)
	}
	return host + " " + on
}
