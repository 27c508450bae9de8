package tui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// dialog is a box over the panes that takes every key while it is open.
// The root holds at most one (Model.dlg), draws it over the panes and
// hands it every key; the help and the filter are modes of the root.
type dialog interface {
	// Render is the box's title and body, inner columns wide; m is the
	// console it is drawn over (its styles, the queue as it is now).
	Render(m *Model, inner int) (title string, body []string)
	// HandleKey acts on a key: it returns the dialog open after it (the
	// same, or nil when the key closed it) and what to run.
	HandleKey(m *Model, msg tea.KeyPressMsg) (dialog, tea.Cmd)
}

// open makes d the open dialog, in place of the help or the filter.
func (m *Model) open(d dialog) {
	m.dlg, m.mode, m.judging = d, modeNormal, ""
}

// dialogBox is the open dialog's box (the help's, the filter's), or "".
func (m *Model) dialogBox() string {
	ds := m.st.Dialog
	w := min(max(m.width-4, 20), 90)
	inner := w - ds.Box.GetHorizontalFrameSize()
	var title string
	var body []string
	switch {
	case m.dlg != nil:
		title, body = m.dlg.Render(m, inner)
	case m.mode == modeFilter:
		title = "Filter the queue"
		body = []string{m.input.View()}
	case m.mode == modeHelp:
		title, body = m.helpBox(inner)
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

// helpBox is the help's title and body: every key, and what the header
// and the status line had to cut, whole.
func (m *Model) helpBox(inner int) (string, []string) {
	ds := m.st.Dialog
	var body []string
	rows := max(1, m.height-ds.Box.GetVerticalFrameSize()-1)
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
	return "Keys", body
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

// summaryOf names request id for a dialog's title (the selected one if
// id left the queue).
func (m *Model) summaryOf(id string) string {
	it := m.find(id)
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
