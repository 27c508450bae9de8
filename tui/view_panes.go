package tui

import (
	"fmt"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sluice-dev/sluice/queue"
)

func (m *Model) queueTitle() string {
	v := m.visible()
	if m.filter != "" {
		return fmt.Sprintf("Queue (%d of %d)", len(v), len(m.pending))
	}
	return fmt.Sprintf("Queue (%d)", len(v))
}

// queueLines: one row per pending request, oldest first, scrolled so the
// selection shows.
func (m *Model) queueLines(w, h int) []string {
	v := m.visible()
	if len(v) == 0 {
		if m.filter != "" && len(m.pending) > 0 {
			return []string{m.st.Queue.Empty.Render(fmt.Sprintf("nothing matches the filter (%d pending; Esc clears it)", len(m.pending)))}
		}
		out := []string{m.st.Queue.Empty.Render("nothing waits for you")}
		if m.d.opt.Spool != "" {
			for _, l := range []string{"", "watching " + plainText(m.d.opt.Spool), "agents reach it with", "  sluice run -- CMD", "  sluice install claude|codex|gemini"} {
				out = append(out, m.st.Queue.Empty.Render(l))
			}
		}
		return out
	}
	first := 0
	if m.selected >= h {
		first = m.selected - h + 1
	}
	now := m.d.now()
	var out []string
	for i := first; i < len(v) && len(out) < h; i++ {
		it := v[i]
		badge := m.st.BadgeFor(string(it.verdict.Action)).Render(strings.ToUpper(string(it.verdict.Action)))
		left := badge + " " + m.st.Queue.Age.Render(fmt.Sprintf("%4s", age(now.Sub(it.arrived))))
		if !it.req.ExpiresAt.IsZero() {
			if rem := it.req.ExpiresAt.Sub(now); rem < 2*60e9 {
				left += " " + m.st.Queue.Countdown.Render("⏳"+age(max(rem, 0)))
			}
		}
		if it.hidden {
			left += " " + m.st.App.Flag.Render("!")
		}
		left += " " + m.st.Queue.Agent.Render(plainText(it.req.Agent))
		row := left + " " + plainText(shortSummary(it.req))
		row = fit(row, max(1, w-m.st.Queue.Item.GetHorizontalFrameSize()))
		if i == m.selected {
			row = m.st.Queue.Selected.Render(ansi.Strip(row))
		} else {
			row = m.st.Queue.Item.Render(row)
		}
		out = append(out, row)
	}
	return out
}

func (m *Model) historyTitle() string { return fmt.Sprintf("History (%d)", len(m.history)) }

// historyLines: newest first: status, exit code, duration, command.
func (m *Model) historyLines(w, h int) []string {
	if len(m.history) == 0 {
		return []string{m.st.Queue.Empty.Render("nothing has run yet")}
	}
	first := 0
	if m.histSel >= h {
		first = m.histSel - h + 1
	}
	var out []string
	for i := first; i < len(m.history) && len(out) < h; i++ {
		r := m.history[len(m.history)-1-i]
		status, code, dur := r.state(), "", ""
		if r.res != nil {
			if r.res.ExitCode != nil {
				code = fmt.Sprintf(" exit %d", *r.res.ExitCode)
			}
			if r.res.DurationMS > 0 || r.res.Ran() {
				dur = fmt.Sprintf(" %.1fs", float64(r.res.DurationMS)/1000)
			}
		}
		row := m.st.BadgeFor(status).Render(status) + m.st.Queue.Age.Render(code+dur) + " " + plainText(r.req.Summary())
		row = fit(row, max(1, w-m.st.Queue.Item.GetHorizontalFrameSize()))
		if m.focus != focusQueue && i == m.histSel {
			row = m.st.Queue.Selected.Render(ansi.Strip(row))
		}
		out = append(out, row)
	}
	return out
}

// runHeading names what happened to a History entry, for its detail.
func runHeading(r *run) string {
	if r.res == nil {
		if r.running() || r.last == queue.EventStarted {
			return "Running"
		}
		return "Approved"
	}
	switch r.res.Status {
	case queue.StatusDenied:
		return "Denied"
	case queue.StatusExpired:
		return "Expired"
	case queue.StatusInvalid:
		return "Refused"
	case queue.StatusDecided:
		if r.res.Decision == queue.Deny {
			return "Denied"
		}
		return "Allowed"
	case queue.StatusFailed:
		return "Failed to start"
	}
	return "Ran"
}

func (m *Model) detailTitle() string {
	if m.focus == focusQueue {
		if it := m.current(); it != nil {
			return "Request " + it.req.ID
		}
		return "Request"
	}
	if r := m.selectedRun(); r != nil {
		return runHeading(r) + " " + r.req.ID
	}
	return "Request"
}

// detailLines: the selected request in full: command (escaped, wrapped),
// cwd, agent, note, verdict with each part, and the diff for file kinds.
func (m *Model) detailLines(w, h int) []string {
	var req *queue.Request
	var it *item
	var r *run
	if m.focus == focusQueue {
		if it = m.current(); it != nil {
			req = it.req
		}
	} else if r = m.selectedRun(); r != nil {
		req = r.req
	}
	if req == nil {
		return []string{m.st.Queue.Empty.Render("select a request")}
	}
	d := m.st.Detail
	var out []string
	label := func(name string) string { return d.Label.Render(fmt.Sprintf("%-8s", name)) }
	field := func(name, value string) {
		if value == "" {
			return
		}
		lines, _ := styledText(value, d.Value, d.Escaped)
		first := true
		for _, l := range wrap(lines, max(1, w-9)) {
			if first {
				out = append(out, label(name)+" "+l)
				first = false
			} else {
				out = append(out, strings.Repeat(" ", 9)+l)
			}
		}
	}
	hidden := false
	if it != nil {
		hidden = it.hidden
	} else {
		hidden = hasHidden(req)
	}
	if hidden {
		out = append(out, m.st.App.Flag.Render("⚠ hidden characters: escaped below, read with care"))
	}
	if it != nil {
		if left := m.graceLeft(); left > 0 {
			out = append(out, m.st.App.Subtle.Render(fmt.Sprintf("approve keys wait %.1fs", left.Seconds())))
		}
	}
	switch req.Kind {
	case queue.KindExec:
		out = append(out, label("command"))
		out = append(out, m.commandLines(it, req, w)...)
	case queue.KindTool:
		field("tool", req.Tool)
		field("input", string(req.Input))
	default:
		field("path", req.Path)
	}
	v := queue.Verdict{}
	if it != nil {
		v = it.verdict
	} else if r != nil {
		v = r.verdict
	}
	if v.Action != "" {
		out = append(out, label("verdict")+" "+m.st.BadgeFor(string(v.Action)).Render(strings.ToUpper(string(v.Action)))+" "+
			d.Category.Render(v.Category)+" "+d.Label.Render("risk ")+d.Value.Render(v.Risk))
		for _, p := range v.Parts {
			row := "  " + m.st.BadgeFor(string(p.Action)).Render(string(p.Action)) + " " + d.Category.Render(p.Category) + " " + plainText(p.Command)
			out = append(out, wrap([]string{row}, max(1, w))...)
			if p.Rule != "" {
				out = append(out, wrap([]string{"    " + d.Rule.Render(plainText(p.Rule))}, max(1, w))...)
			}
		}
		for _, reason := range v.Reasons {
			out = append(out, wrap([]string{"  " + d.Reason.Render("· "+plainText(reason))}, max(1, w))...)
		}
	}
	if req.Kind == queue.KindExec {
		if s := m.sandboxText(v, r); s != "" {
			out = append(out, wrap([]string{label("sandbox") + " " + s}, max(1, w))...)
		}
	}
	field("cwd", req.Cwd)
	field("agent", strings.TrimSpace(req.Agent+" "+req.Session))
	field("note", req.Note)
	if r != nil && r.res != nil {
		res := r.res
		s := m.st.BadgeFor(string(res.Status)).Render(string(res.Status))
		if res.ExitCode != nil {
			s += fmt.Sprintf(" exit %d", *res.ExitCode)
		}
		switch {
		case r.actor != "" && r.actor != string(queue.ByPolicy):
			s += " · by " + plainText(r.actor)
		case res.DecidedBy != "":
			s += " · by " + string(res.DecidedBy)
		}
		out = append(out, label("result")+" "+s)
		field("reason", res.Reason)
		field("ran", res.Command)
	}
	if it != nil && isFile(req) {
		out = append(out, m.diffLines(it, w)...)
	}
	return out
}

// detailWindow is the detail from where the person scrolled to, with a
// marker when more follows.
func (m *Model) detailWindow(w, h int) []string {
	lines := m.detailLines(w, h)
	top := min(m.detailTop, max(len(lines)-1, 0))
	lines = lines[top:]
	if len(lines) > h && h > 0 {
		more := len(lines) - h + 1
		lines = append(lines[:h-1], m.st.App.Subtle.Render(fmt.Sprintf("↓ %d more lines (pgdn)", more)))
	}
	return lines
}

// diffLines is the coloured diff preview, from the hunk the person
// scrolled to.
func (m *Model) diffLines(it *item, w int) []string {
	switch {
	case !it.diffOK:
		return []string{m.st.App.Subtle.Render("computing the diff…")}
	case it.diffErr != nil:
		return []string{m.st.App.Error.Render(plainText("cannot apply: " + it.diffErr.Error()))}
	}
	ds := m.st.Diff
	lines := strings.Split(strings.TrimRight(it.diff, "\n"), "\n")
	out := []string{m.st.Detail.Label.Render(fmt.Sprintf("diff (%d lines; [ ] hunks, pgup/pgdn scroll)", len(lines)))}
	for _, l := range lines {
		st := ds.Context
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
			st = ds.File
		case strings.HasPrefix(l, "@@"):
			st = ds.Hunk
		case strings.HasPrefix(l, "+"):
			st = ds.Add
		case strings.HasPrefix(l, "-"):
			st = ds.Del
		}
		// Tabs in file content are layout, not hidden text.
		styled, _ := styledText(strings.ReplaceAll(l, "\t", "    "), st, m.st.Detail.Escaped)
		out = append(out, wrap(styled[:1], max(1, w))...)
	}
	return out
}

// sandboxText says how a request runs, or ran: "confined: read-only, no
// network", or why not, marked.
func (m *Model) sandboxText(v queue.Verdict, r *run) string {
	d := m.st.Detail
	if r != nil && r.res != nil && r.res.Sandbox != "" {
		return describeSandbox(r.res.Sandbox, d.Value, m.st.App.Error)
	}
	if m.d.opt.SandboxOff {
		return m.st.App.Error.Render(plainText("none: " + m.d.opt.Sandbox))
	}
	if m.d.opt.Sandbox == "" || v.Profile == "" {
		return ""
	}
	s := describeSandbox(v.Profile, d.Value, m.st.App.Error)
	if r == nil {
		s += m.st.App.Subtle.Render(" · U runs it unconfined")
	}
	return s
}

// describeSandbox turns a result's or verdict's sandbox value into words:
// a profile reads "confined: …", anything else is marked.
func describeSandbox(s string, ok, bad lipgloss.Style) string {
	switch s {
	case "read_only":
		return ok.Render("confined: read-only, no network")
	case "mutating":
		return ok.Render("confined: writes in the project, no network")
	case "networked":
		return ok.Render("confined: writes in the project, network")
	case queue.Unconfined:
		return bad.Render("UNCONFINED (a person chose it)")
	}
	return bad.Render(plainText(s))
}

func (m *Model) outputTitle() string {
	r := m.shownRun()
	if r == nil {
		return "Output"
	}
	t := "Output · " + r.state() + " · " + plainText(r.req.Summary())
	switch sb := r.sandbox(); {
	case sb == queue.Unconfined:
		t += " · UNCONFINED"
	case strings.HasPrefix(sb, "none"):
		t += " · not confined"
	case sb != "":
		t += " · confined " + sb
	}
	if r.screen != nil && !r.screen.Following() {
		t += " · scrolled (f follows)"
	}
	return t
}

// outputLines is the emulated screen of the shown run.
func (m *Model) outputLines(w, h int) []string {
	r := m.shownRun()
	if r == nil {
		return []string{m.st.Queue.Empty.Render("output of approved commands shows here")}
	}
	if r.screen == nil {
		if r.res != nil && r.res.OutputTail != "" {
			lines, _ := styledText(r.res.OutputTail, lipgloss.NewStyle(), m.st.Detail.Escaped)
			if len(lines) > h {
				lines = lines[len(lines)-h:]
			}
			return lines
		}
		if r.res != nil && !r.res.Ran() {
			return []string{m.st.Queue.Empty.Render("it did not run (" + string(r.res.Status) + ")")}
		}
		if r.fromLog {
			return []string{m.st.Queue.Empty.Render("it ran in another process: sluice show " + r.req.ID + " shows how it ended")}
		}
		return []string{m.st.Queue.Empty.Render("no output")}
	}
	var lines []string
	if r.screen.Following() {
		// The newest lines that hold something: a pane shorter than the
		// pty still shows the last output, not the empty row under it.
		_, rows := m.outputInner()
		lines = strings.Split(r.screen.Render(max(rows, h)), "\n")
		for len(lines) > 0 && strings.TrimSpace(ansi.Strip(lines[len(lines)-1])) == "" {
			lines = lines[:len(lines)-1]
		}
		if len(lines) > h {
			lines = lines[len(lines)-h:]
		}
	} else {
		lines = strings.Split(r.screen.Render(h), "\n")
	}
	for i, l := range lines {
		if ansi.StringWidth(l) > w {
			lines[i] = ansi.Truncate(l, w, "")
		}
	}
	return lines
}

// shortSummary is the request's summary with a file path shown relative
// to the request's cwd when it lies inside it.
func shortSummary(r *queue.Request) string {
	if r.Path != "" && r.Cwd != "" && (r.Kind == queue.KindWrite || r.Kind == queue.KindEdit) {
		if rel, ok := strings.CutPrefix(r.Path, strings.TrimSuffix(r.Cwd, "/")+"/"); ok && rel != "" {
			return string(r.Kind) + " " + rel
		}
	}
	return r.Summary()
}

// commandLines is the command, escaped and wrapped to the pane; for a
// pending request it is laid out once per width, not on every frame.
func (m *Model) commandLines(it *item, req *queue.Request, w int) []string {
	if it != nil && it.cmdWidth == w && it.cmdStyles == m.st && it.cmdLines != nil {
		return it.cmdLines
	}
	d := m.st.Detail
	styled, _ := styledText(req.Command, d.Command, d.Escaped)
	var out []string
	for _, l := range wrap(styled, max(1, w-2)) {
		out = append(out, "  "+l)
	}
	if it != nil {
		it.cmdLines, it.cmdWidth, it.cmdStyles = out, w, m.st
	}
	return out
}
