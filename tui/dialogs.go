package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sluice-dev/sluice/queue"
)

// The console's dialogs. Each holds what it asks about from the moment it
// opened (a request's id, a plan, a verdict): it answers for that request
// wherever the selection has gone since, and for nothing if it left the
// queue. Anything but the keys a dialog names closes it and means no.

// denyDialog asks for the reason of a deny (d).
type denyDialog struct {
	id    string
	input lineInput
}

// Render implements dialog.
func (d *denyDialog) Render(m *Model, _ int) (string, []string) {
	ds := m.st.Dialog
	return "Deny " + m.summaryOf(d.id), []string{d.input.View(), "", ds.Button.Render("Enter: deny") + "  " + noButton(m)}
}

// HandleKey implements dialog.
func (d *denyDialog) HandleKey(m *Model, msg tea.KeyPressMsg) (dialog, tea.Cmd) {
	if !key.Matches(msg, m.keys.Submit) {
		return typed(d, &d.input, msg), nil
	}
	it := m.stillQueued(d.id)
	if it == nil {
		return nil, nil
	}
	return nil, m.denyCmd(it.req.ID, strings.TrimSpace(d.input.Value()))
}

func (d *denyDialog) paste(p tea.PasteMsg) { d.input.Update(p) }

// editDialog edits a command before it is judged again (e).
type editDialog struct {
	id    string
	input lineInput
}

// Render implements dialog.
func (d *editDialog) Render(m *Model, _ int) (string, []string) {
	ds := m.st.Dialog
	return "Edit the command, then Enter to check it", []string{d.input.View(), "", ds.Button.Render("Enter: check") + "  " + noButton(m)}
}

// HandleKey implements dialog.
func (d *editDialog) HandleKey(m *Model, msg tea.KeyPressMsg) (dialog, tea.Cmd) {
	if !key.Matches(msg, m.keys.Submit) {
		return typed(d, &d.input, msg), nil
	}
	it := m.stillQueued(d.id)
	val := d.input.Value()
	if it == nil || strings.TrimSpace(val) == "" {
		return nil, nil
	}
	m.setStatus("checking the edited command…")
	m.judging = val
	return nil, m.judgeEditCmd(it.req, val)
}

func (d *editDialog) paste(p tea.PasteMsg) { d.input.Update(p) }

// confirmEditDialog shows an edited command's verdict and asks to run it.
type confirmEditDialog struct {
	id, command string
	verdict     queue.Verdict
}

// Render implements dialog.
func (d *confirmEditDialog) Render(m *Model, inner int) (string, []string) {
	ds := m.st.Dialog
	lines, _ := styledText(d.command, m.st.Detail.Command, m.st.Detail.Escaped)
	body := wrap(lines, inner)
	ev := d.verdict
	line := fmt.Sprintf("%s (%s, risk %s)", strings.ToUpper(string(ev.Action)), ev.Category, ev.Risk)
	if len(ev.Reasons) > 0 {
		line += ": " + strings.Join(ev.Reasons, "; ")
	}
	body = append(body, "", ds.Text.Render("verdict: "+plainText(line)))
	for _, p := range ev.Parts {
		body = append(body, "  "+m.st.BadgeFor(string(p.Action)).Render(string(p.Action))+" "+plainText(p.Command)+" "+m.st.Detail.Rule.Render(plainText(p.Rule)))
	}
	if ev.Action == queue.ActionDeny {
		return "Run the edited command?", append(body, "", m.st.App.Error.Render("the policy denies it: it cannot run"), noButton(m))
	}
	return "Run the edited command?", append(body, "", ds.Button.Render("y: run it")+"  "+noButton(m))
}

// HandleKey implements dialog.
func (d *confirmEditDialog) HandleKey(m *Model, msg tea.KeyPressMsg) (dialog, tea.Cmd) {
	it := m.confirmed(msg, d.id)
	if it == nil {
		return nil, nil
	}
	if d.verdict.Action == queue.ActionDeny {
		m.setErr(fmt.Errorf("the policy denies the edited command"))
		return nil, nil
	}
	return nil, m.approveCmd(it.req.ID, d.command)
}

// ruleDialog approves and keeps a rule (A), or, with trust, approves and
// trusts a pattern for the agent session (T).
type ruleDialog struct {
	rule  ruleProposedMsg
	scope RuleScope
	trust bool
}

// Render implements dialog.
func (d *ruleDialog) Render(m *Model, _ int) (string, []string) {
	ds := m.st.Dialog
	r := d.rule
	var body []string
	pick := []string{
		choiceLine(m, r.patterns, r.choice),
		ds.Text.Render(fmt.Sprintf("%q would have matched %d past request(s) in the audit log.", plainText(r.pattern()), r.matches[r.choice])),
	}
	if d.trust {
		if it := m.find(r.id); it != nil {
			body = append(body, ds.Text.Render("agent session "+plainText(it.req.Agent+" "+it.req.Session)))
		}
		body = append(body, "")
		body = append(body, pick...)
		body = append(body,
			ds.Text.Render("Commands that match run without asking while the trust lasts (trust_minutes); the header counts down; 'sluice trust revoke' ends it."),
			"", ds.Button.Render("y: approve and trust")+"  "+noButton(m))
		return "Approve, and trust it for this agent session for a while:", body
	}
	text := ""
	if it := m.find(r.id); it != nil && m.d.opt.Rules != nil {
		text = m.d.opt.Rules.RuleText(it.req, r.pattern(), d.scope)
	}
	body = append(body, ruleLines(m, strings.TrimRight(text, "\n"))...)
	body = append(body, "")
	body = append(body, pick...)
	body = append(body, ds.Text.Render("s: scope: everywhere, this project, this agent session"))
	if d.scope != ScopeSession {
		body = append(body, ds.Text.Render(policyFileText(m.d.opt.PolicyFile)))
	}
	body = append(body, "", ds.Button.Render("y: approve and keep the rule")+"  "+noButton(m))
	return "Approve, and allow from now on (" + d.scope.String() + "):", body
}

// HandleKey implements dialog: ← and → narrow and widen the pattern, s
// changes a rule's scope, y approves.
func (d *ruleDialog) HandleKey(m *Model, msg tea.KeyPressMsg) (dialog, tea.Cmd) {
	if narrowWiden(msg, &d.rule.choice, len(d.rule.patterns)) {
		return d, nil
	}
	switch msg.String() {
	case "s":
		if d.trust {
			return d, nil // a trust is for the agent session
		}
		d.scope = (d.scope + 1) % 3
		if d.scope == ScopeSession {
			if it := m.find(d.rule.id); it != nil && it.req.Session == "" {
				d.scope = ScopeEverywhere // no session to scope to
			}
		}
		return d, nil
	}
	it := m.confirmed(msg, d.rule.id)
	if it == nil {
		return nil, nil
	}
	if d.trust {
		it.busy = true
		return nil, m.trustCmd(it.req, d.rule.pattern())
	}
	return nil, m.approveSelected(it, d.rule.pattern(), d.scope)
}

// unconfinedDialog asks before a run without confinement (U).
type unconfinedDialog struct{ id string }

// Render implements dialog.
func (d *unconfinedDialog) Render(m *Model, _ int) (string, []string) {
	ds := m.st.Dialog
	return "Run UNCONFINED? " + m.summaryOf(d.id), []string{
		m.st.App.Error.Render("No kernel confinement for this one run: it can read your secrets (~/.ssh, tokens),"),
		m.st.App.Error.Render("write anywhere you can, and use the network. The audit log records it as unconfined."),
		ds.Text.Render("To run it confined instead, press Esc and use a."),
		"", ds.Button.Render("y: run it unconfined") + "  " + noButton(m),
	}
}

// HandleKey implements dialog.
func (d *unconfinedDialog) HandleKey(m *Model, msg tea.KeyPressMsg) (dialog, tea.Cmd) {
	if it := m.confirmed(msg, d.id); it != nil {
		return nil, m.approveUnconfinedCmd(it.req.ID)
	}
	return nil, nil
}

// confirmed is the request a yes/no dialog about id approves when msg
// says yes, or nil, with the status line saying why not.
func (m *Model) confirmed(msg tea.KeyPressMsg, id string) *item {
	if !key.Matches(msg, m.keys.Yes) && !key.Matches(msg, m.keys.Submit) {
		m.setStatus("not approved")
		return nil
	}
	it := m.stillQueued(id)
	if it == nil || it.busy {
		return nil
	}
	return it
}

// stillQueued is the row of request id, which a dialog was opened for;
// nil, saying so, when the request has left the queue since.
func (m *Model) stillQueued(id string) *item {
	it := m.find(id)
	if it == nil {
		m.setErr(fmt.Errorf("%s left the queue meanwhile; nothing was done", shortID(id)))
	}
	return it
}

// typed is a text dialog's answer to a key other than Submit: Esc
// closes it (no); any other key edits its input, and it stays.
func typed(d dialog, input *lineInput, msg tea.KeyPressMsg) dialog {
	if msg.String() == "esc" {
		return nil
	}
	input.Update(msg)
	return d
}

// undoDialog shows what undoing a run restores and asks (u).
type undoDialog struct{ plan *UndoPlan }

// Render implements dialog.
func (d *undoDialog) Render(m *Model, inner int) (string, []string) {
	ds := m.st.Dialog
	p := d.plan
	no := noButton(m)
	title := fmt.Sprintf("Undo %s: restore %d file(s) to before it ran?", shortID(p.ID), len(p.Files)-len(p.Shared))
	rows := max(3, m.height-ds.Box.GetVerticalFrameSize()-8)
	var body []string
	if len(p.Conflicts) > 0 {
		body = append(body, m.st.App.Error.Render(fmt.Sprintf("%d file(s) changed again since; undoing overwrites those changes:", len(p.Conflicts))))
		for _, c := range p.Conflicts {
			body = append(body, "  "+plainText(c))
		}
		body = append(body, "")
	}
	if len(p.Shared) > 0 {
		body = append(body, m.st.App.Error.Render(fmt.Sprintf("%d file(s) were also changed by %s, which ran at the same time; y leaves them, F restores them too:",
			len(p.Shared), strings.Join(p.SharedWith, ", "))))
		for _, c := range p.Shared {
			body = append(body, "  "+plainText(c))
		}
		body = append(body, "")
	}
	body = append(body, m.undoDiff(p.Diff+p.SharedDiff, rows-len(body), inner)...)
	switch {
	case len(p.Conflicts) > 0:
		body = append(body, "", ds.Button.Render("F: overwrite and undo")+"  "+no)
	case len(p.Shared) == len(p.Files):
		body = append(body, "", ds.Button.Render("F: restore them too")+"  "+no)
	case len(p.Shared) > 0:
		body = append(body, "", ds.Button.Render("y: undo its own")+"  "+ds.Button.Render("F: all")+"  "+no)
	default:
		body = append(body, "", ds.Button.Render("y: undo")+"  "+no)
	}
	return title, body
}

// HandleKey implements dialog: y undoes what only the run changed, F
// overwrites later changes and shared files too.
func (d *undoDialog) HandleKey(m *Model, msg tea.KeyPressMsg) (dialog, tea.Cmd) {
	p, k := d.plan, m.keys
	switch {
	case (len(p.Conflicts) > 0 || len(p.Shared) > 0) && key.Matches(msg, k.Force):
		return nil, m.applyUndoCmd(p, true)
	case len(p.Shared) == len(p.Files) && key.Matches(msg, k.Yes):
		m.setErr(fmt.Errorf("not undone: every file it changed was also changed by %s; F restores them", strings.Join(p.SharedWith, ", ")))
	case len(p.Conflicts) > 0 && key.Matches(msg, k.Yes):
		m.setErr(fmt.Errorf("not undone: %d file(s) changed again since; F overwrites them", len(p.Conflicts)))
	case key.Matches(msg, k.Yes):
		return nil, m.applyUndoCmd(p, false)
	default:
		m.setStatus("not undone")
	}
	return nil, nil
}

// batchDialog asks before approving the marked requests together (a with
// marks).
type batchDialog struct{}

// Render implements dialog.
func (batchDialog) Render(m *Model, inner int) (string, []string) {
	ds := m.st.Dialog
	n := m.markedCount()
	title := fmt.Sprintf("Approve these %d together? (no rule is kept)", n)
	if n == 1 {
		title = "Approve the one marked? (no rule is kept)"
	}
	var body []string
	for _, it := range m.pending {
		if !it.marked {
			continue
		}
		row := fmt.Sprintf("%-9s %-9s %-10s %s", shortID(it.req.ID), strings.ToUpper(string(it.verdict.Action)),
			orNone(it.verdict.Profile), plainText(shortSummary(it.req)))
		body = append(body, ansi.Truncate(ds.Text.Render(row), inner, "…"))
	}
	return title, append(body, "", ds.Button.Render(fmt.Sprintf("y: approve all %d", n))+"  "+noButton(m))
}

// HandleKey implements dialog.
func (batchDialog) HandleKey(m *Model, msg tea.KeyPressMsg) (dialog, tea.Cmd) {
	if !key.Matches(msg, m.keys.Yes) {
		m.setStatus("not approved")
		return nil, nil
	}
	return nil, m.approveBatch()
}

// killDialog asks before killing a run (x).
type killDialog struct{ id string }

// Render implements dialog.
func (d *killDialog) Render(m *Model, _ int) (string, []string) {
	ds := m.st.Dialog
	what := ""
	if r := m.byID[d.id]; r != nil {
		what = plainText(r.req.Summary())
	}
	return "Kill " + shortID(d.id) + "?", []string{ds.Text.Render(what),
		ds.Text.Render("It gets SIGTERM, then SIGKILL if it has not exited; the agent is told it was killed."),
		"", ds.Button.Render("y: kill it") + "  " + noButton(m)}
}

// HandleKey implements dialog.
func (d *killDialog) HandleKey(m *Model, msg tea.KeyPressMsg) (dialog, tea.Cmd) {
	if key.Matches(msg, m.keys.Yes) {
		return nil, m.killCmd(d.id)
	}
	m.setStatus("not killed")
	return nil, nil
}

// quitDialog asks before quitting kills what runs (q).
type quitDialog struct{}

// Render implements dialog.
func (quitDialog) Render(m *Model, _ int) (string, []string) {
	ds := m.st.Dialog
	return "Quit?", []string{ds.Text.Render(fmt.Sprintf("%d command(s) still running: quitting kills them.", m.Running())),
		"", ds.Button.Render("y: quit and kill") + "  " + noButton(m)}
}

// HandleKey implements dialog.
func (quitDialog) HandleKey(m *Model, msg tea.KeyPressMsg) (dialog, tea.Cmd) {
	if key.Matches(msg, m.keys.Yes) {
		m.quitting = true
		return nil, tea.Quit
	}
	return nil, nil // anything else, Esc included, means no
}

// noButton is every dialog's focused default: no.
// choiceLine offers the choices narrowest first, the one at choice
// focused, for ← and →.
func choiceLine(m *Model, choices []string, choice int) string {
	ds := m.st.Dialog
	shown := make([]string, len(choices))
	for i, c := range choices {
		shown[i] = plainText(c)
		if i == choice {
			shown[i] = ds.ButtonFocused.Render(shown[i])
		}
	}
	return ds.Text.Render("← narrower · wider →   ") + strings.Join(shown, "  ")
}

// narrowWiden moves choice (of n) on ← and →, and says whether msg was
// one of them.
func narrowWiden(msg tea.KeyPressMsg, choice *int, n int) bool {
	switch msg.String() {
	case "left", "h", "<":
		*choice = max(0, *choice-1)
		return true
	case "right", "l", ">":
		*choice = min(n-1, *choice+1)
		return true
	}
	return false
}

// ruleLines is a rule's text as a dialog shows it, line by line.
func ruleLines(m *Model, text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		out = append(out, m.st.Detail.Rule.Render("  "+plainText(l)))
	}
	return out
}

func noButton(m *Model) string { return m.st.Dialog.ButtonFocused.Render("Esc: no") }
