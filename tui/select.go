package tui

import (
	"strings"

	"github.com/sluice-dev/sluice/queue"
)

// visible is the queue as filtered.
func (m *Model) visible() []*item {
	if m.filter == "" {
		return m.pending
	}
	host, f := hostFilter(strings.ToLower(m.filter))
	var out []*item
	for _, it := range m.pending {
		if host != "" && HostOf(it.req.ID) != host {
			continue
		}
		if f == "" || strings.Contains(strings.ToLower(it.req.Summary()), f) || strings.Contains(strings.ToLower(it.req.Agent), f) ||
			strings.Contains(HostOf(it.req.ID), f) {
			out = append(out, it)
		}
	}
	return out
}

// hostFilter splits a filter into the box it names with @BOX (its first
// word), if any, and the rest.
func hostFilter(f string) (host, rest string) {
	if !strings.HasPrefix(f, "@") {
		return "", f
	}
	host, rest, _ = strings.Cut(f[1:], " ")
	return host, strings.TrimSpace(rest)
}

// current is the selected pending request, or nil.
func (m *Model) current() *item {
	v := m.visible()
	if m.selected < 0 || m.selected >= len(v) {
		return nil
	}
	return v[m.selected]
}

func (m *Model) clampSelection() {
	n := len(m.visible())
	m.selected = min(max(m.selected, 0), max(n-1, 0))
	m.histSel = min(max(m.histSel, 0), max(len(m.history)-1, 0))
}

// selectedRun is the run selected in the history, or nil.
func (m *Model) selectedRun() *run {
	if len(m.history) == 0 {
		return nil
	}
	return m.history[len(m.history)-1-m.histSel]
}

// shownRun is the run whose output the output pane shows: the history's
// selection when the history or output has focus, else the newest run
// (running ones first). A run's question about a host (a connect
// request) has no output of its own: the pane stays on the run that asked,
// or the newest one that has output.
func (m *Model) shownRun() *run {
	if m.focus != focusQueue {
		return m.selectedRun()
	}
	for i := len(m.history) - 1; i >= 0; i-- {
		if m.history[i].running() {
			return m.history[i]
		}
	}
	for i := len(m.history) - 1; i >= 0; i-- {
		if m.history[i].req.Kind != queue.KindConnect {
			return m.history[i]
		}
	}
	if len(m.history) > 0 {
		return m.history[len(m.history)-1]
	}
	return nil
}
