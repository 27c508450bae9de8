package tui

import (
	"fmt"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sluice-dev/sluice/queue"
)

// dialog is the open dialog's box, or "".
func (m *Model) dialog() string {
	ds := m.st.Dialog
	w := min(max(m.width-4, 20), 90)
	inner := w - ds.Box.GetHorizontalFrameSize()
	var title string
	var body []string
	no := ds.ButtonFocused.Render("Esc: no")
	switch m.mode {
	case modeDenyReason:
		title = "Deny " + m.selectedSummary()
		body = []string{m.input.View(), "", ds.Button.Render("Enter: deny") + "  " + no}
	case modeEdit:
		title = "Edit the command, then Enter to check it"
		body = []string{m.input.View(), "", ds.Button.Render("Enter: check") + "  " + no}
	case modeFilter:
		title = "Filter the queue"
		body = []string{m.input.View()}
	case modeConfirmEdit:
		title = "Run the edited command?"
		lines, _ := styledText(m.input.Value(), m.st.Detail.Command, m.st.Detail.Escaped)
		body = append(body, wrap(lines, inner)...)
		ev := m.editVerdict
		line := fmt.Sprintf("%s (%s, risk %s)", strings.ToUpper(string(ev.Action)), ev.Category, ev.Risk)
		if len(ev.Reasons) > 0 {
			line += ": " + strings.Join(ev.Reasons, "; ")
		}
		body = append(body, "", ds.Text.Render("verdict: "+plainText(line)))
		for _, p := range ev.Parts {
			body = append(body, "  "+m.st.BadgeFor(string(p.Action)).Render(string(p.Action))+" "+plainText(p.Command)+" "+m.st.Detail.Rule.Render(plainText(p.Rule)))
		}
		if ev.Action == queue.ActionDeny {
			body = append(body, "", m.st.App.Error.Render("the policy denies it: it cannot run"), no)
		} else {
			body = append(body, "", ds.Button.Render("y: run it")+"  "+no)
		}
	case modeConfirmRule:
		title = "Approve, and allow from now on (" + m.ruleScope.String() + "):"
		r := m.rule
		text := ""
		if it := m.find(r.id); it != nil && m.d.opt.RuleText != nil {
			text = m.d.opt.RuleText(it.req, r.pattern(), m.ruleScope)
		}
		for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
			body = append(body, m.st.Detail.Rule.Render("  "+plainText(l)))
		}
		var choices []string
		for i, p := range r.patterns {
			c := plainText(p)
			if i == r.choice {
				c = ds.ButtonFocused.Render(c)
			}
			choices = append(choices, c)
		}
		body = append(body, "",
			ds.Text.Render("← narrower · wider →   ")+strings.Join(choices, "  "),
			ds.Text.Render(fmt.Sprintf("%q would have matched %d past request(s) in the audit log.", plainText(r.pattern()), r.matches[r.choice])),
			ds.Text.Render("s: scope: everywhere, this project, this agent session"),
		)
		if m.ruleScope != ScopeSession {
			body = append(body, ds.Text.Render(policyFileText(m.d.opt.PolicyFile)))
		}
		body = append(body, "", ds.Button.Render("y: approve and keep the rule")+"  "+no)
	case modeConfirmTrust:
		title = "Approve, and trust it for this agent session for a while:"
		r := m.rule
		if it := m.find(r.id); it != nil {
			body = append(body, ds.Text.Render("agent session "+plainText(it.req.Agent+" "+it.req.Session)))
		}
		var choices []string
		for i, p := range r.patterns {
			c := plainText(p)
			if i == r.choice {
				c = ds.ButtonFocused.Render(c)
			}
			choices = append(choices, c)
		}
		body = append(body, "",
			ds.Text.Render("← narrower · wider →   ")+strings.Join(choices, "  "),
			ds.Text.Render(fmt.Sprintf("%q would have matched %d past request(s) in the audit log.", plainText(r.pattern()), r.matches[r.choice])),
			ds.Text.Render("Commands that match run without asking while the trust lasts (trust_minutes); the header counts down; 'sluice trust revoke' ends it."),
			"", ds.Button.Render("y: approve and trust")+"  "+no)
	case modeConfirmUnconfined:
		title = "Run UNCONFINED? " + m.selectedSummary()
		body = []string{
			m.st.App.Error.Render("No kernel confinement for this one run: it can read your secrets (~/.ssh, tokens),"),
			m.st.App.Error.Render("write anywhere you can, and use the network. The audit log records it as unconfined."),
			ds.Text.Render("To run it confined instead, press Esc and use a."),
			"", ds.Button.Render("y: run it unconfined") + "  " + no,
		}
	case modeConfirmUndo:
		p := m.undo
		title = fmt.Sprintf("Undo %s: restore %d file(s) to before it ran?", shortID(p.ID), len(p.Files)-len(p.Shared))
		rows := max(3, m.height-ds.Box.GetVerticalFrameSize()-8)
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
	case modeConfirmBatch:
		title = fmt.Sprintf("Approve these %d together? (no rule is kept)", m.markedCount())
		if m.markedCount() == 1 {
			title = "Approve the one marked? (no rule is kept)"
		}
		for _, it := range m.pending {
			if !it.marked {
				continue
			}
			row := fmt.Sprintf("%-9s %-9s %-10s %s", shortID(it.req.ID), strings.ToUpper(string(it.verdict.Action)),
				orNone(it.verdict.Profile), plainText(shortSummary(it.req)))
			body = append(body, ansi.Truncate(ds.Text.Render(row), inner, "…"))
		}
		body = append(body, "", ds.Button.Render(fmt.Sprintf("y: approve all %d", m.markedCount()))+"  "+no)
	case modeConfirmKill:
		title = "Kill " + shortID(m.killID) + "?"
		what := ""
		if r := m.byID[m.killID]; r != nil {
			what = plainText(r.req.Summary())
		}
		body = []string{ds.Text.Render(what),
			ds.Text.Render("It gets SIGTERM, then SIGKILL if it has not exited; the agent is told it was killed."),
			"", ds.Button.Render("y: kill it") + "  " + no}
	case modeConfirmQuit:
		title = "Quit?"
		body = []string{ds.Text.Render(fmt.Sprintf("%d command(s) still running: quitting kills them.", m.Running())),
			"", ds.Button.Render("y: quit and kill") + "  " + no}
	case modeHelp:
		title = "Keys"
		rows := max(1, m.height-ds.Box.GetVerticalFrameSize()-1)
		// What the header and the status line had to cut, whole.
		for _, p := range m.problems() {
			body = append(body, m.st.App.Error.Render(plainText(p)))
		}
		if m.status != "" && ansi.StringWidth(m.status) > m.width {
			st := ds.Text
			if m.statusErr {
				st = m.st.App.Error
			}
			body = append(body, st.Render(plainText(m.status)))
		}
		if len(body) > 0 {
			body = append(body, "")
		}
		body = append(body, m.keyGrid(inner, min(rows-1-len(body), 10))...)
		body = append(body, ds.Text.Render("any key closes this"))
		if len(body)+3 <= rows { // the sentence may wrap to two lines
			body = append(body, "", ds.Text.Render("approve keys pause after the selection changes or a request arrives"))
		}
	default:
		return ""
	}
	lines := []string{ds.Title.Render(fit(title, inner))}
	for _, b := range body {
		lines = append(lines, strings.Split(ansi.Wrap(b, inner, ""), "\n")...)
	}
	for i, l := range lines {
		lines[i] = fit(l, inner)
	}
	return ds.Box.Render(strings.Join(lines, "\n"))
}

// undoDiff is a diff for the undo dialog, coloured, at most rows lines
// (a marker says how many more: sluice undo ID shows it all).
func (m *Model) undoDiff(diff string, rows, width int) []string {
	lines := strings.Split(strings.TrimRight(diff, "\n"), "\n")
	var out []string
	for i, l := range lines {
		if len(out) >= rows-1 && i < len(lines)-1 {
			out = append(out, m.st.App.Flag.Render(fmt.Sprintf("… %d more lines ('sluice undo' in a terminal shows them all)", len(lines)-i)))
			break
		}
		out = append(out, ansi.Truncate(m.diffLine(l), width, "…"))
	}
	return out
}

// orNone is s, or "-" when it is empty.
func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// policyFileText says where an added rule goes.
func policyFileText(file string) string {
	if file == "" {
		return "It goes into your policy file; comments there are kept."
	}
	return "It is added to " + plainText(file) + " (comments there are kept)."
}

// keyGrid lays every key out in as few columns as fit rows lines, each
// column as wide as its widest entry: at 60x20 every key is on screen.
func (m *Model) keyGrid(width, rows int) []string {
	var entries []string
	for _, group := range m.helpKeys.FullHelp() {
		for _, b := range group {
			if !b.Enabled() {
				continue
			}
			h := b.Help()
			entries = append(entries, m.st.Help.Key.Render(h.Key)+" "+m.st.Help.Desc.Render(h.Desc))
		}
	}
	rows = max(rows, 1)
	for cols := max(1, (len(entries)+rows-1)/rows); ; cols-- {
		per := (len(entries) + cols - 1) / cols
		widths := make([]int, cols)
		for i, e := range entries {
			widths[i/per] = max(widths[i/per], ansi.StringWidth(e))
		}
		total := -2
		for _, w := range widths {
			total += w + 2
		}
		if total > width && cols > 1 {
			continue // too wide: fewer, longer columns
		}
		out := make([]string, per)
		for i, e := range entries {
			c, r := i/per, i%per
			if c > 0 {
				out[r] += "  "
			}
			out[r] += e
			if c < cols-1 {
				out[r] += strings.Repeat(" ", widths[c]-ansi.StringWidth(e))
			}
		}
		return out
	}
}

func (m *Model) selectedSummary() string {
	it := m.find(m.dialogID)
	if it == nil {
		it = m.current()
	}
	if it != nil {
		return shortID(it.req.ID) + ": " + plainText(it.req.Summary())
	}
	return ""
}

// overlay draws box over the middle of screen.
func (m *Model) overlay(screen, box string) string {
	lines := strings.Split(screen, "\n")
	boxLines := strings.Split(box, "\n")
	bw := lipgloss.Width(box)
	top := max(0, (len(lines)-len(boxLines))/2)
	left := max(0, (m.width-bw)/2)
	for i, bl := range boxLines {
		y := top + i
		if y >= len(lines) {
			break
		}
		line := fit(lines[y], m.width)
		lines[y] = ansi.Truncate(line, left, "") + "\x1b[m" + bl + "\x1b[m" + ansi.TruncateLeft(line, left+bw, "")
	}
	return strings.Join(lines, "\n")
}
