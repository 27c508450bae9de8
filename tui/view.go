package tui

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sluice-dev/sluice/queue"
)

// wideAt is the width from which panes sit side by side.
const wideAt = 120

// View implements tea.Model.
func (m *Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.WindowTitle = m.title()
	return v
}

// title is the window title: the pending count.
func (m *Model) title() string {
	if n := len(m.pending); n > 0 {
		return fmt.Sprintf("sluice (%d pending)", n)
	}
	return "sluice"
}

// leftWidth is the left column's width on a wide terminal: the queue's
// rows (verdict, age, agent, command) need more than two fifths to show a
// command, and the right column keeps 66 at 120 for diffs.
func leftWidth(w int) int { return w * 9 / 20 }

// layout is where each pane goes, from the terminal size.
type layout struct {
	wide                         bool
	leftW, rightW                int
	queueH, histH, detailH, outH int
}

func (m *Model) layout() layout {
	w, h := max(m.width, 20), max(m.height, 8)
	body := h - 3 // header, status, help
	var l layout
	if w >= wideAt {
		l = layout{wide: true, leftW: leftWidth(w)}
		l.rightW = w - l.leftW
		l.queueH = body * 3 / 5
		l.histH = body - l.queueH
		l.detailH, l.outH = m.rightSplit(body)
		return l
	}
	l = layout{leftW: w, rightW: w}
	rows := len(m.visible())
	if m.focus != focusQueue {
		rows = len(m.history)
	}
	l.queueH = min(max(rows, 1)+3, max(6, body*2/5))
	if it := m.current(); m.focus == focusQueue && it != nil && isFile(it.req) {
		// A file request's diff needs the height more than the queue:
		// on a short terminal the queue shows the selected row only.
		l.queueH = min(l.queueH, 5)
		if body < 20 {
			l.queueH = 4
		}
	}
	l.histH = l.queueH
	l.detailH, l.outH = m.rightSplit(body - l.queueH)
	return l
}

// minOut is the output pane's least height: its title and a line.
const minOut = 4

// rightSplit divides height between the detail and the output pane by
// what is selected: a file request's diff takes all but the output's
// least; a pending command's detail gets what it needs (its verdict and
// command come first), the output the rest; for History and the output
// pane, the output gets at least half.
func (m *Model) rightSplit(height int) (detailH, outH int) {
	if height < 2*minOut {
		detailH = max(1, height/2)
		return detailH, max(1, height-detailH)
	}
	it := m.current()
	_, wide := m.detailWidth()
	if wide && m.focus == focusQueue && it != nil && isFile(it.req) {
		return height - minOut, minOut
	}
	frame := m.st.Pane.Border.GetVerticalFrameSize() + 1 // borders, title
	w, _ := m.detailWidth()
	need := len(m.detailLines(w, 0)) + frame
	if m.focus == focusQueue && it == nil && m.shownRun() == nil {
		// Nothing to show below: the help on where requests come from
		// gets the height.
		return min(max(need, 6), height-minOut), height - min(max(need, 6), height-minOut)
	}
	if m.focus == focusQueue && it != nil {
		if !wide && need > height-minOut && m.Running() == 0 {
			// Narrow, and the request does not fit beside the output
			// of what ran before: the request gets the height.
			return height, 0
		}
		detailH = min(max(need, 6), height-minOut)
	} else {
		detailH = min(max(need, 6), max(height/2, 6), height-minOut)
	}
	return detailH, height - detailH
}

// detailWidth is the detail pane's inner width.
func (m *Model) detailWidth() (int, bool) {
	w := max(m.width, 20)
	wide := w >= wideAt
	if wide {
		w -= leftWidth(w)
	}
	return max(1, w-m.st.Pane.Border.GetHorizontalFrameSize()), wide
}

// outputInner is the output pane's inner size as laid out now.
func (m *Model) outputInner() (cols, rows int) {
	l := m.layout()
	fw := m.st.Pane.Border.GetHorizontalFrameSize()
	fh := m.st.Pane.Border.GetVerticalFrameSize()
	return max(10, l.rightW-fw), max(2, l.outH-fh-1)
}

// render draws the whole screen.
func (m *Model) render() string {
	if m.width == 0 {
		return "sluice: starting…"
	}
	l := m.layout()
	var body string
	queue := m.pane(m.queueTitle(), m.queueLines, l.leftW, l.queueH, m.focus == focusQueue)
	hist := m.pane(m.historyTitle(), m.historyLines, l.leftW, l.histH, m.focus == focusHistory)
	detail := m.pane(m.detailTitle(), m.detailWindow, l.rightW, l.detailH, false)
	out := ""
	if l.outH > 0 {
		out = m.pane(m.outputTitle(), m.outputLines, l.rightW, l.outH, m.focus == focusOutput)
	}
	if l.wide {
		right := detail
		if out != "" {
			right = lipgloss.JoinVertical(lipgloss.Left, detail, out)
		}
		body = lipgloss.JoinHorizontal(lipgloss.Top,
			lipgloss.JoinVertical(lipgloss.Left, queue, hist), right)
	} else {
		top := queue
		if m.focus != focusQueue {
			// The Request and Output panes show History's selection
			// then: the list above is History too.
			top = hist
		}
		parts := []string{top, detail}
		if out != "" {
			parts = append(parts, out)
		}
		body = lipgloss.JoinVertical(lipgloss.Left, parts...)
	}
	screen := lipgloss.JoinVertical(lipgloss.Left, m.header(), body, m.statusLine(), m.helpLine())
	if d := m.dialogBox(); d != "" {
		screen = m.overlay(screen, d)
	}
	return clip(screen, m.width, m.height)
}

// pane draws a bordered box of exactly w x h cells with a title line.
func (m *Model) pane(title string, lines func(w, h int) []string, w, h int, focused bool) string {
	st := m.st.Pane.Border
	ts := m.st.Pane.Title
	if focused {
		st, ts = m.st.Pane.BorderFocused, m.st.Pane.TitleFocused
	}
	iw := max(1, w-st.GetHorizontalFrameSize())
	ih := max(1, h-st.GetVerticalFrameSize())
	body := lines(iw, ih-1)
	if len(body) > ih-1 {
		body = body[:ih-1]
	}
	out := make([]string, 0, ih)
	if focused {
		// Not by colour alone: a monochrome terminal shows it too.
		title = "▸ " + title
	}
	out = append(out, fit(ts.Render(title), iw))
	for _, b := range body {
		out = append(out, fit(b, iw))
	}
	for len(out) < ih {
		out = append(out, strings.Repeat(" ", iw))
	}
	return st.Render(strings.Join(out, "\n"))
}

func (m *Model) header() string {
	running := m.Running()
	s := m.st.App.Title.Render("sluice")
	if m.d.opt.Demo {
		s += " " + m.st.App.Flag.Render("DEMO")
	}
	s += m.st.App.Subtle.Render(fmt.Sprintf("  %d pending · %d running", len(m.pending), running))
	// What is wrong comes first, what merely informs last: a header too
	// long for the terminal loses its decorations, not its warnings (?
	// shows them whole).
	for _, p := range m.problems() {
		s += "  " + m.st.App.Error.Render(plainText(p))
	}
	if ts := m.trusts; len(ts) > 0 {
		t := "  · trusted: " + plainText(ts[0])
		if len(ts) > 1 {
			t += fmt.Sprintf(" (+%d more: sluice trust ls)", len(ts)-1)
		}
		s += m.st.App.Flag.Render(t)
	}
	if m.filter != "" {
		s += m.st.App.Subtle.Render("  filter: ") + plainText(m.filter)
	}
	if m.d.opt.Demo {
		s += m.st.App.Subtle.Render("  built-in agent, temporary files")
	}
	if m.d.opt.Spool != "" {
		// Which spool: what an agent must write to for this console to
		// see it.
		s += m.st.App.Subtle.Render("  · spool " + plainText(m.d.opt.Spool))
		if m.d.opt.Shared {
			s += m.st.App.Subtle.Render(" (shared with another engine)")
		}
	}
	if f := m.d.opt.Fleet; f != nil {
		if text, ok := f.Link(); ok {
			s += m.st.App.Subtle.Render("  · hub " + plainText(text))
		}
	}
	if !m.d.opt.SandboxOff && m.d.opt.Sandbox != "" {
		s += m.st.App.Subtle.Render("  · confined by " + plainText(m.d.opt.Sandbox))
	}
	return fit(s, m.width)
}

// problems are what is wrong now, most pressing first, as the header
// and the help screen say them.
func (m *Model) problems() []string {
	var out []string
	if m.spoolProblem != "" {
		// First: nothing can be approved until it is fixed.
		out = append(out, "SPOOL "+m.spoolProblem)
	}
	if f := m.d.opt.Fleet; f != nil {
		if text, ok := f.Link(); !ok {
			out = append(out, "HUB UNREACHABLE: "+text)
		}
	}
	if r := m.d.opt.Rules; r != nil {
		if p := r.PolicyProblem(); p != "" {
			word := "POLICY NOT RELOADED: "
			if !strings.Contains(p, "last good policy") {
				word = "POLICY DOES NOT LOAD: "
			}
			out = append(out, word+p)
		}
	}
	if m.configProblem != "" {
		out = append(out, "CONFIG NOT RELOADED: "+m.configProblem)
	}
	if m.d.opt.SandboxOff {
		out = append(out, "UNCONFINED: "+m.d.opt.Sandbox)
	}
	return out
}

func (m *Model) statusLine() string {
	if m.status == "" {
		if m.d.opt.Demo && m.mode == modeNormal && m.dlg == nil {
			return fit(m.st.App.Subtle.Render(m.demoHint()), m.width)
		}
		return fit("", m.width)
	}
	st := m.st.App.Status
	if m.statusErr {
		st = m.st.App.Error
	}
	return fit(st.Render(plainText(m.status)), m.width)
}

// helpLine is the key bar. When it does not fit, keys go from the middle:
// "? help" and "q quit" always show.
// demoHint says, in the demo, what the keys do with what is on screen.
func (m *Model) demoHint() string {
	if r := m.shownRun(); r != nil && r.running() {
		return "demo: x stops the running command (it asks first); tab moves between the panes"
	}
	it := m.current()
	switch {
	case it == nil && len(m.history) == 0:
		return "demo: a built-in agent is about to ask for things; watch the queue"
	case it == nil:
		return "demo: nothing waits; tab shows History (j/k to pick one), q quits"
	case it.verdict.Action == queue.ActionDeny:
		return "demo: the policy denies this one; no key can approve it, d answers the agent now"
	case isFile(it.req):
		return "demo: a applies this change (its diff is above), d denies it, ] and [ jump between hunks"
	}
	return "demo: a approves and runs it, d denies it, e edits it first, j/k moves, ? lists every key"
}

func (m *Model) helpLine() string {
	m.help.SetWidth(0)
	keys := m.helpKeys.ShortHelp()
	for {
		s := m.help.ShortHelpView(keys)
		if ansi.StringWidth(s) <= m.width || len(keys) <= 2 {
			return fit(s, m.width)
		}
		keys = append(keys[:len(keys)-3], keys[len(keys)-2:]...)
	}
}

// clip makes sure nothing is wider or taller than the terminal.
func clip(s string, w, h int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > h {
		lines = lines[:h]
	}
	for i, l := range lines {
		lines[i] = fit(l, w)
	}
	return strings.Join(lines, "\n")
}

// age formats how long ago t was, in a few characters.
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
