package tui

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
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

// layout is where each pane goes, from the terminal size.
type layout struct {
	wide                         bool
	leftW, rightW                int
	queueH, histH, detailH, outH int
}

func (m *Model) layout() layout {
	w, h := max(m.width, 20), max(m.height, 8)
	body := h - 3 // header, status, help
	if w >= wideAt {
		l := layout{wide: true, leftW: w * 2 / 5}
		l.rightW = w - l.leftW
		l.queueH = body * 3 / 5
		l.histH = body - l.queueH
		l.detailH = body / 2
		l.outH = body - l.detailH
		return l
	}
	l := layout{leftW: w, rightW: w}
	rows := len(m.visible())
	if m.focus == focusHistory {
		rows = len(m.history)
	}
	l.queueH = min(max(rows, 1)+3, max(6, body/3))
	l.histH = l.queueH
	l.outH = max(4, body/4)
	l.detailH = max(4, body-l.queueH-l.outH)
	l.outH = max(1, body-l.queueH-l.detailH)
	return l
}

// outputInner is the output pane's inner size (the pty size of new runs).
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
	out := m.pane(m.outputTitle(), m.outputLines, l.rightW, l.outH, m.focus == focusOutput)
	if l.wide {
		body = lipgloss.JoinHorizontal(lipgloss.Top,
			lipgloss.JoinVertical(lipgloss.Left, queue, hist),
			lipgloss.JoinVertical(lipgloss.Left, detail, out))
	} else {
		top := queue
		if m.focus == focusHistory {
			top = hist
		}
		body = lipgloss.JoinVertical(lipgloss.Left, top, detail, out)
	}
	screen := lipgloss.JoinVertical(lipgloss.Left, m.header(), body, m.statusLine(), m.helpLine())
	if d := m.dialog(); d != "" {
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
	s := m.st.App.Title.Render("sluice") + m.st.App.Subtle.Render(fmt.Sprintf("  %d pending · %d running", len(m.pending), running))
	if m.d.opt.Spool != "" {
		// Which spool: what an agent must write to for this console to
		// see it.
		s += m.st.App.Subtle.Render("  · spool " + plainText(m.d.opt.Spool))
	}
	if f := m.d.opt.PolicyProblem; f != nil {
		if p := f(); p != "" {
			s += "  " + m.st.App.Error.Render("POLICY NOT RELOADED: "+plainText(p))
		}
	}
	switch {
	case m.d.opt.SandboxOff:
		s += "  " + m.st.App.Error.Render("UNCONFINED: "+plainText(m.d.opt.Sandbox))
	case m.d.opt.Sandbox != "":
		s += m.st.App.Subtle.Render("  · confined by " + plainText(m.d.opt.Sandbox))
	}
	if m.filter != "" {
		s += m.st.App.Subtle.Render("  filter: ") + plainText(m.filter)
	}
	return fit(s, m.width)
}

func (m *Model) statusLine() string {
	if m.status == "" {
		return fit("", m.width)
	}
	st := m.st.App.Status
	if m.statusErr {
		st = m.st.App.Error
	}
	return fit(st.Render(plainText(m.status)), m.width)
}

func (m *Model) helpLine() string {
	m.help.SetWidth(m.width)
	return fit(m.help.ShortHelpView(m.keys.ShortHelp()), m.width)
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
