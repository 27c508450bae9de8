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
	t := fmt.Sprintf("Queue (%d)", len(v))
	if m.filter != "" {
		t = fmt.Sprintf("Queue (%d of %d)", len(v), len(m.pending))
	}
	// A pane too short for "more" marker lines says it in its title.
	if rows := m.layout().queueH - m.st.Pane.Border.GetVerticalFrameSize() - 1; rows < 3 && len(v) > rows {
		first, n, _, _ := listWindow(m.selected, len(v), rows)
		if first > 0 {
			t += fmt.Sprintf(" · ↑%d", first)
		}
		if below := len(v) - first - n; below > 0 {
			t += fmt.Sprintf(" · ↓%d more", below)
		}
	}
	return t
}

// emptyHelp is what the Request pane says while nothing waits: where
// requests come from.
func (m *Model) emptyHelp(w int) []string {
	var lines []string
	if m.d.opt.Fleet != nil {
		text, _ := m.d.opt.Fleet.Link()
		lines = append(lines, "Requests from any box of the hub show here:", "  "+plainText(text), "boxes join with", "  sluice serve --hub URL", "")
	}
	if m.d.opt.Spool != "" {
		lines = append(lines, "Watching "+plainText(m.d.opt.Spool)+"; agents reach it with", "  sluice run -- CMD", "  sluice install claude|codex|gemini (then sluice doctor)", "")
	}
	lines = append(lines, "? shows every key.")
	var out []string
	for _, l := range lines {
		for _, wl := range strings.Split(ansi.Wrap(l, max(1, w), ""), "\n") {
			out = append(out, m.st.Queue.Empty.Render(wl))
		}
	}
	return out
}

// queueLines: one row per pending request, oldest first, scrolled so the
// selection shows.
func (m *Model) queueLines(w, h int) []string {
	v := m.visible()
	if len(v) == 0 {
		if m.filter != "" && len(m.pending) > 0 {
			return []string{m.st.Queue.Empty.Render(fmt.Sprintf("nothing matches the filter (%d pending; Esc clears it)", len(m.pending)))}
		}
		// Where requests come from is said in the Request pane, which
		// has the room at every size.
		return []string{m.st.Queue.Empty.Render("nothing waits for you")}
	}
	first, n, above, below := listWindow(m.selected, len(v), h)
	now := m.d.now()
	var out []string
	if above {
		out = append(out, m.st.App.Flag.Render(fmt.Sprintf("↑ %d more", first)))
	}
	for i := first; i < first+n; i++ {
		it := v[i]
		badge := m.st.BadgeFor(string(it.verdict.Action)).Render(strings.ToUpper(plainText(string(it.verdict.Action))))
		left := badge + " " + m.st.Queue.Age.Render(fmt.Sprintf("%4s", age(now.Sub(it.arrived))))
		if !it.req.ExpiresAt.IsZero() {
			if rem := it.req.ExpiresAt.Sub(now); rem < 2*60e9 {
				left += " " + m.st.Queue.Countdown.Render("⏳"+age(max(rem, 0)))
			}
		}
		if it.hidden || it.tricks != "" {
			left += " " + m.st.App.Flag.Render("!")
		}
		if it.marked {
			left += " " + m.st.App.Flag.Render("●")
		}
		if it.sent != "" {
			left += " " + m.st.App.Flag.Render(it.sent+", waiting for its box:")
		}
		if m.d.opt.Fleet != nil {
			left += " " + m.st.Queue.Host.Render(HostOf(it.req.ID))
		}
		left += " " + m.st.Queue.Agent.Render(plainText(it.req.Agent))
		row := left + " " + plainText(shortSummary(it.req))
		row = fit(row, max(1, w-m.st.Queue.Item.GetHorizontalFrameSize()))
		if it.req.Kind == queue.KindConnect {
			// The answers stay in sight: the command gives way.
			room := max(1, w-m.st.Queue.Item.GetHorizontalFrameSize())
			wants := " wants " + plainText(it.req.Target()) + connectHint
			if it.req.Command == "" {
				wants = " connect " + plainText(it.req.Target()) + connectHint
			}
			row = strings.TrimRight(fit(left+" "+plainText(it.req.Command), max(1, room-ansi.StringWidth(wants))), " ") + wants
			row = fit(row, room)
		}
		if i == m.selected {
			row = m.st.Queue.Selected.Render(ansi.Strip(row))
		} else {
			row = m.st.Queue.Item.Render(row)
		}
		out = append(out, row)
	}
	if below {
		out = append(out, m.st.App.Flag.Render(fmt.Sprintf("↓ %d more", len(v)-first-n)))
	}
	return out
}

// listWindow is the rows of a list of total rows shown in h lines with
// sel visible: the first, how many, and whether a "more" marker line goes
// above or below them.
func listWindow(sel, total, h int) (first, n int, above, below bool) {
	switch {
	case total <= h:
		return 0, total, false, false
	case h < 3: // no room for markers
		return min(max(sel-h+1, 0), total-h), h, false, false
	case sel < h-1:
		return 0, h - 1, false, true
	case sel >= total-(h-1):
		return total - (h - 1), h - 1, true, false
	}
	return sel - (h - 2) + 1, h - 2, true, true
}

func (m *Model) historyTitle() string { return fmt.Sprintf("History (%d)", len(m.history)) }

// historyLines: newest first: status, exit code, duration, command.
func (m *Model) historyLines(w, h int) []string {
	if len(m.history) == 0 {
		return []string{m.st.Queue.Empty.Render("nothing has run yet")}
	}
	first, n, above, below := listWindow(m.histSel, len(m.history), h)
	var out []string
	if above {
		out = append(out, m.st.App.Flag.Render(fmt.Sprintf("↑ %d newer", first)))
	}
	// Columns: the status, then how it ended, each as wide as the widest
	// shown, so that the commands line up.
	type cols struct{ status, ended string }
	rows := make([]cols, 0, n)
	sw, ew := 0, 0
	for i := first; i < first+n; i++ {
		r := m.history[len(m.history)-1-i]
		status, code, dur := plainText(r.state()), "", ""
		if r.res != nil {
			if r.res.ExitCode != nil {
				code = fmt.Sprintf(" exit %d", *r.res.ExitCode)
			}
			if r.res.DurationMS > 0 || r.res.Ran() {
				dur = fmt.Sprintf(" %.1fs", float64(r.res.DurationMS)/1000)
			}
			if n := len(r.res.ChangedFiles); n > 0 {
				dur += fmt.Sprintf(" %d file(s)", n)
			}
		} else if r.running() && r.waitsFor != "" {
			dur = " for " + shortID(r.waitsFor)
		}
		rows = append(rows, cols{status, code + dur})
		sw, ew = max(sw, ansi.StringWidth(status)), max(ew, ansi.StringWidth(code+dur))
	}
	for i := first; i < first+n; i++ {
		r := m.history[len(m.history)-1-i]
		c := rows[i-first]
		row := m.st.BadgeFor(c.status).Render(fmt.Sprintf("%-*s", sw, c.status)) + m.st.Queue.Age.Render(fmt.Sprintf("%-*s", ew, c.ended)) + " "
		if m.d.opt.Fleet != nil {
			row += m.st.Queue.Host.Render(HostOf(r.req.ID)) + " "
		}
		row += plainText(r.req.Summary())
		row = fit(row, max(1, w-m.st.Queue.Item.GetHorizontalFrameSize()))
		if m.focus != focusQueue && i == m.histSel {
			row = m.st.Queue.Selected.Render(ansi.Strip(row))
		} else {
			row = m.st.Queue.Item.Render(row) // aligned with the selected row
		}
		out = append(out, row)
	}
	if below {
		out = append(out, m.st.App.Flag.Render(fmt.Sprintf("↓ %d older", len(m.history)-first-n)))
	}
	return out
}

// runHeading names what happened to a History entry, for its detail.
func runHeading(r *run) string {
	if r.last == queue.EventUndone {
		return "Undo"
	}
	if r.res == nil {
		if r.running() && r.waitsFor != "" {
			return "Waiting"
		}
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
	case queue.StatusKilled:
		return "Killed"
	case queue.StatusTimeout:
		return "Timed out"
	}
	return "Ran"
}

func (m *Model) detailTitle() string {
	if m.focus == focusQueue {
		if it := m.current(); it != nil {
			t := "Request " + it.req.ID
			if left := m.graceLeft(); left > 0 {
				// In the title, not the body: the layout does not jump
				// when the wait ends.
				t += fmt.Sprintf(" · approve keys wait %.1fs", left.Seconds())
			}
			return t
		}
		return "Request"
	}
	if r := m.selectedRun(); r != nil {
		return runHeading(r) + " " + r.req.ID
	}
	return "Request"
}

// detailLines: the selected request in full. What decides the request
// comes first, before any text an agent could pad: flags, the verdict
// with each part and its reasons, the sandbox; then the command (escaped,
// wrapped, blank runs folded), or the path and the diff; then cwd, agent,
// note and, for History, the result.
func (m *Model) detailLines(w, h int) []string {
	lines, _ := m.detail(w)
	return lines
}

// detail lays out the detail and says at which line the command ends (-1
// when there is none): approve keys wait until that line has been shown.
func (m *Model) detail(w int) (out []string, cmdEnd int) {
	cmdEnd = -1
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
		if m.focus == focusQueue && len(m.visible()) == 0 {
			return m.emptyHelp(w), -1
		}
		return []string{m.st.Queue.Empty.Render("select a request")}, -1
	}
	d := m.st.Detail
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
	prose := func(style lipgloss.Style, indent, text string) {
		for _, l := range strings.Split(ansi.Wrap(plainText(text), max(1, w-len(indent)), ""), "\n") {
			out = append(out, indent+style.Render(l))
		}
	}
	hidden, tricks := false, ""
	if it != nil {
		hidden, tricks = it.hidden, it.tricks
	} else {
		hidden, tricks = hasHidden(req), layoutTricks(req.Command)
	}
	if hidden {
		prose(m.st.App.Flag, "", "⚠ hidden characters: escaped below, read with care")
	}
	if tricks != "" {
		prose(m.st.App.Flag, "", "⚠ "+tricks+": folded below, marked ⟨…⟩")
	}
	if m.d.opt.Fleet != nil {
		// Which machine it would run on decides as much as what runs.
		out = append(out, label("box")+" "+m.st.Queue.Host.Render(HostOf(req.ID)))
	}
	v := queue.Verdict{}
	if it != nil {
		v = it.verdict
	} else if r != nil {
		v = r.verdict
	}
	vline := len(out)
	if v.Action != "" {
		out = append(out, wordWrap(label("verdict")+" "+m.st.BadgeFor(string(v.Action)).Render(strings.ToUpper(plainText(string(v.Action))))+" "+
			d.Category.Render(plainText(v.Category))+" "+d.Label.Render("risk ")+d.Value.Render(plainText(v.Risk)), w)...)
	}
	// What runs comes right after the verdict's word: on a short
	// terminal the approve keys wait for the command's last line, not for
	// the verdict's breakdown.
	switch req.Kind {
	case queue.KindExec:
		cl := m.commandLines(it, req, w)
		if n := strings.Count(req.Command, "\n") + 1; n > 1 || len(cl) > 1 || ansi.StringWidth(cl[0]) > w-7 {
			title := "command"
			if n > 1 {
				title = fmt.Sprintf("command (%d lines)", n)
			}
			out = append(out, d.Label.Render(title))
			out = append(out, cl...)
		} else {
			// One short line: beside its label, like the other fields.
			out = append(out, label("command")+cl[0][1:])
		}
		cmdEnd = len(out) - 1
	case queue.KindTool:
		field("tool", req.Tool)
		field("input", string(req.Input))
		cmdEnd = len(out) - 1 // read to its end before approving, like a command
	}
	if v.Action != "" {
		for _, reason := range v.Reasons {
			prose(d.Reason, "  ", "· "+reason)
		}
		parts := v.Parts
		if len(parts) == 1 && (req.Kind != queue.KindExec || parts[0].Command == strings.Join(strings.Fields(req.Command), " ")) {
			// One path, or a command of one part: its rule beside the
			// verdict, not a list of one.
			if rule := parts[0].Rule; rule != "" {
				line := out[vline] + d.Rule.Render(" · "+plainText(rule))
				if ansi.StringWidth(line) <= w {
					out[vline] = line
				} else {
					prose(d.Rule, "  ", rule)
				}
			}
			parts = nil
		}
		for _, p := range parts {
			row := "  " + m.st.BadgeFor(string(p.Action)).Render(plainText(string(p.Action))) + " " + d.Category.Render(plainText(p.Category)) + " " + plainText(p.Command)
			out = append(out, wrap([]string{row}, max(1, w))...)
			if p.Rule != "" {
				prose(d.Rule, "    ", p.Rule)
			}
		}
	}
	if req.Kind == queue.KindExec {
		if s := m.sandboxText(v, r); s != "" {
			out = append(out, wordWrap(label("sandbox")+" "+s, w)...)
		}
	}
	switch req.Kind {
	case queue.KindExec, queue.KindTool:
		// Shown above, before the verdict's breakdown.
	case queue.KindConnect:
		field("wants", req.Target()+" · y once · r for the rest of the run · A that and a rule for every run (network_allow) · n refuses; its connection waits")
		field("run", strings.TrimSpace(req.RunID+" "+req.Command))
	default:
		pathAt := len(out)
		field("path", shortPath(req))
		if it != nil && isFile(req) {
			// The diff comes right after the path: it is what a file
			// request asks to change.
			diff, n := m.diffLines(it, w)
			if it.diffOK && it.diffErr == nil {
				// The diff's size on the path's line, when it fits there.
				note := d.Label.Render(fmt.Sprintf(" · %d-line diff · [ ] hunks", n))
				if last := len(out) - 1; last == pathAt && ansi.StringWidth(out[last]+note) <= w {
					out[last] += note
				}
			}
			out = append(out, diff...)
		}
	}
	field("cwd", req.Cwd)
	if it != nil {
		field("checkpt", it.checkpt)
	}
	field("agent", strings.TrimSpace(req.Agent+" "+req.Session))
	field("note", req.Note)
	if r != nil && r.running() && r.waitsFor != "" {
		field("waits", "for "+r.waitsFor+", which changes files in the same project, to end · "+m.keys.GoAhead.Help().Key+" lets this one go ahead")
	}
	if r != nil && r.res != nil {
		res := r.res
		s := m.st.BadgeFor(string(res.Status)).Render(plainText(string(res.Status)))
		if res.ExitCode != nil {
			s += fmt.Sprintf(" exit %d", *res.ExitCode)
		}
		switch {
		case r.actor != "" && r.actor != string(queue.ByPolicy):
			s += " · by " + plainText(r.actor)
		case res.DecidedBy != "":
			s += " · by " + plainText(string(res.DecidedBy))
		}
		out = append(out, label("result")+" "+s)
		field("reason", res.Reason)
		field("ran", res.Command)
		if n := len(res.ChangedFiles); n > 0 {
			out = append(out, label("changed")+" "+d.Value.Render(fmt.Sprintf("%d file(s) · u undoes it", n)))
			for _, c := range res.ChangedFiles {
				p := c.Path
				if rel, ok := strings.CutPrefix(p, strings.TrimSuffix(req.Cwd, "/")+"/"); ok && req.Cwd != "" {
					p = rel
				}
				out = append(out, wrap([]string{"  " + d.Category.Render(fmt.Sprintf("%-7s", c.Change)) + " " + plainText(p)}, max(1, w))...)
			}
		} else if res.Checkpoint != nil && res.Checkpoint.Error != "" {
			field("checkpt", "none: "+res.Checkpoint.Error)
		}
		if len(res.Network) > 0 {
			out = append(out, label("network")+" "+d.Value.Render(fmt.Sprintf("%d host(s) through the run's proxy", len(res.Network))))
			for _, l := range netDetail(res.Network) {
				out = append(out, wrap([]string{"  " + l}, max(1, w))...)
			}
		}
		if res.Checkpoint != nil && len(res.Checkpoint.Overlapped) > 0 {
			field("overlap", "ran at the same time as "+strings.Join(res.Checkpoint.Overlapped, ", ")+
				" in the same project: its changes may be listed here; undo asks before restoring those")
		}
	}
	return out, cmdEnd
}

// shortPath is a file request's path, relative to its cwd when inside it.
func shortPath(r *queue.Request) string {
	if r.Cwd != "" {
		if rel, ok := strings.CutPrefix(r.Path, strings.TrimSuffix(r.Cwd, "/")+"/"); ok && rel != "" {
			return rel
		}
	}
	return r.Path
}

// detailWindow is the detail from where the person scrolled to, with a
// marker line at either end when more lies beyond it.
func (m *Model) detailWindow(w, h int) []string {
	lines := m.detailLines(w, h)
	top, n := detailView(m.detailTop, len(lines), h)
	out := make([]string, 0, h)
	marks := h >= 3
	if top > 0 && marks {
		out = append(out, m.st.App.Flag.Render(fmt.Sprintf("↑ %d more lines above (pgup, home)", top)))
	}
	out = append(out, lines[top:top+n]...)
	if below := len(lines) - top - n; below > 0 && marks {
		out = append(out, m.st.App.Flag.Render(fmt.Sprintf("↓ %d more lines (pgdn, end)", below)))
	}
	return out
}

// detailView is the first line and the count of lines shown of a detail
// of total lines in h rows, scrolled to top: a row is kept for each
// "more" marker needed, and the last page is a full one.
func detailView(top, total, h int) (first, n int) {
	switch {
	case h < 1 || total == 0:
		return 0, 0
	case total <= h:
		return 0, total
	case h < 3: // no room for markers
		return min(max(top, 0), total-h), h
	}
	maxTop := total - (h - 1)
	top = min(max(top, 0), maxTop)
	if top == 0 || top == maxTop {
		return top, h - 1
	}
	return top, h - 2
}

// detailSize is the detail pane's inner width and the rows its lines get.
func (m *Model) detailSize() (w, h int) {
	l := m.layout()
	fw := m.st.Pane.Border.GetHorizontalFrameSize()
	fh := m.st.Pane.Border.GetVerticalFrameSize()
	// As pane draws it: the inner height less the title (0 rows when
	// the pane is too short to show any).
	return max(1, l.rightW-fw), max(1, l.detailH-fh) - 1
}

// commandSeen reports whether the selected request's command has been
// shown to its end in the detail as it is laid out now.
func (m *Model) commandSeen() bool {
	w, h := m.detailSize()
	lines, end := m.detail(w)
	if end < 0 {
		return true
	}
	if h < 1 {
		return false // nothing of it is on screen
	}
	top, n := detailView(m.detailTop, len(lines), h)
	return top <= end && end < top+n
}

// commandEndTop is the scroll position that shows the selected request's
// command (or tool input) to its last line, and whether there is one.
func (m *Model) commandEndTop() (int, bool) {
	w, h := m.detailSize()
	lines, end := m.detail(w)
	if end < 0 || h < 1 {
		return 0, false
	}
	for t := max(0, end-h+1); t <= end; t++ {
		if top, n := detailView(t, len(lines), h); top <= end && end < top+n {
			return top, true
		}
	}
	return 0, false
}

// diffLines is the coloured diff preview, from the hunk the person
// scrolled to.
func (m *Model) diffLines(it *item, w int) (out []string, n int) {
	switch {
	case !it.diffOK:
		return []string{m.st.App.Subtle.Render("computing the diff…")}, 0
	case it.diffErr != nil:
		return []string{m.st.App.Error.Render(plainText("cannot apply: " + it.diffErr.Error()))}, 0
	}
	lines := strings.Split(strings.TrimRight(it.diff, "\n"), "\n")
	if it.req.Kind != queue.KindPatch {
		// One file, named on the path line: its diff --git and ---/+++
		// header says nothing more, and the changed lines need the rows.
		var body []string
		for i, l := range lines {
			if strings.HasPrefix(l, "@@") {
				body = append(body, lines[i:]...)
				break
			}
			if !strings.HasPrefix(l, "diff --git ") && !strings.HasPrefix(l, "--- ") && !strings.HasPrefix(l, "+++ ") {
				body = append(body, l) // "new file mode": worth its row
			}
		}
		if len(body) > 0 {
			lines = body
		}
	}
	for _, l := range lines {
		out = append(out, wrap([]string{m.diffLine(l)}, max(1, w))...)
	}
	return out, len(lines)
}

// diffLine is one line of a unified diff, styled by what it is, agent
// text escaped (tabs in file content are layout, not hidden text).
func (m *Model) diffLine(l string) string {
	ds := m.st.Diff
	st := ds.Context
	switch {
	case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"), strings.HasPrefix(l, "diff "):
		st = ds.File
	case strings.HasPrefix(l, "@@"):
		st = ds.Hunk
	case strings.HasPrefix(l, "+"):
		st = ds.Add
	case strings.HasPrefix(l, "-"):
		st = ds.Del
	}
	styled, _ := styledText(strings.ReplaceAll(l, "\t", "    "), st, m.st.Detail.Escaped)
	return styled[0]
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
	if rest, found := strings.CutPrefix(s, "networked; network: "); found {
		// A networked run's sandbox line says how it reaches the network.
		return ok.Render("confined: writes in the project, network through its proxy (" + plainText(rest) + ")")
	}
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
	t := "Output · " + plainText(r.state()) + " · " + plainText(r.req.Summary())
	if r.running() && r.unwritten != "" {
		t = "Output · ended, its result not yet written · " + plainText(r.req.Summary())
	}
	switch sb := r.sandbox(); {
	case sb == queue.Unconfined:
		t += " · UNCONFINED"
	case strings.HasPrefix(sb, "none"):
		t += " · not confined"
	case sb != "":
		t += " · confined " + sb
	}
	if r.res != nil {
		if n := netSummary(r.res.Network); n != "" {
			t += " · " + n
		}
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
			if r.res.Reason != "" && m.d.opt.Fleet != nil {
				return []string{m.st.Queue.Empty.Render("it did not run: " + plainText(r.res.Reason))}
			}
			return []string{m.st.Queue.Empty.Render("it did not run (" + plainText(string(r.res.Status)) + ")")}
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
		rows, _ := m.d.paneSize()
		lines = strings.Split(r.screen.Render(max(int(rows), h)), "\n")
		for len(lines) > 0 && strings.TrimSpace(ansi.Strip(lines[len(lines)-1])) == "" {
			lines = lines[:len(lines)-1]
		}
		if len(lines) == 0 && r.running() {
			// A command that prints only at its end (go test, a build):
			// say it runs, not an empty pane.
			return []string{m.st.Queue.Empty.Render(fmt.Sprintf("no output yet · running for %s", age(m.d.now().Sub(r.started))))}
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

// commandLines is the command, escaped and wrapped to the pane, with
// runs of blank lines and of spaces folded into a marked ⟨…⟩ line or
// span, so padding cannot push the rest of a command out of sight; for a
// pending request it is laid out once per width, not on every frame.
func (m *Model) commandLines(it *item, req *queue.Request, w int) []string {
	if it != nil && it.cmdWidth == w && it.cmdStyles == m.st && it.cmdLines != nil {
		return it.cmdLines
	}
	d := m.st.Detail
	var out []string
	for _, l := range wrap(foldedText(req.Command, d.Command, d.Escaped), max(1, w-2)) {
		out = append(out, "  "+l)
	}
	if it != nil {
		it.cmdLines, it.cmdWidth, it.cmdStyles = out, w, m.st
	}
	return out
}
