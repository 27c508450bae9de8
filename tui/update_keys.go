package tui

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sluice-dev/sluice/queue"
)

// handleKey hands a key to the open dialog, else routes it by mode, then
// by focus.
func (m *Model) handleKey(msg tea.KeyPressMsg) tea.Cmd {
	k := m.keys
	if m.dlg != nil {
		var cmd tea.Cmd
		m.dlg, cmd = m.dlg.HandleKey(m, msg)
		return cmd
	}
	switch m.mode {
	case modeHelp:
		m.mode = modeNormal // any key closes the help
		return nil
	case modeFilter:
		return m.filterKey(msg)
	case modeNormal:
	}

	if cmd, ok := m.connectKey(msg); ok {
		return cmd
	}
	switch {
	case msg.String() == "esc" && m.markedCount() > 0:
		for _, it := range m.pending {
			it.marked = false
		}
		m.setStatus("marks cleared")
	case msg.String() == "esc" && m.filter != "":
		// Esc clears a filter set with Enter, as it clears one typed.
		m.filter = ""
		m.clampSelection()
		m.startGrace()
		m.setStatus("filter cleared")
	case key.Matches(msg, k.Quit):
		// Quitting kills what this console runs; a fleet's runs go on on
		// their boxes.
		if n := m.Running(); n > 0 && m.d.opt.Fleet == nil {
			m.open(quitDialog{})
			return nil
		}
		m.quitting = true
		return tea.Quit
	case key.Matches(msg, k.Help):
		m.mode = modeHelp
	case key.Matches(msg, k.Tab):
		m.focus = (m.focus + 1) % 3
	case key.Matches(msg, k.Up):
		m.move(-1)
		return m.loadShownLog()
	case key.Matches(msg, k.Down):
		m.move(1)
		return m.loadShownLog()
	case key.Matches(msg, k.ScrollUp):
		m.scroll(-1)
	case key.Matches(msg, k.ScrollDown):
		m.scroll(1)
	case key.Matches(msg, k.Top):
		m.scrollEnd(-1)
	case key.Matches(msg, k.Bottom):
		m.scrollEnd(1)
	case key.Matches(msg, k.Follow):
		if r := m.shownRun(); r != nil && r.screen != nil {
			r.screen.Follow()
		}
	case key.Matches(msg, k.NextHunk):
		m.hunk(1)
	case key.Matches(msg, k.PrevHunk):
		m.hunk(-1)
	case key.Matches(msg, k.Filter):
		m.openFilter()
	case key.Matches(msg, k.WebDevices):
		if m.d.opt.Devices == nil {
			m.setErr(fmt.Errorf("no web approver here: 'sluice web devices' lists them where it runs"))
			return nil
		}
		m.setStatus("reading the web devices…")
		return m.listWebDevicesCmd()
	case key.Matches(msg, k.Undo):
		r := m.selectedRun()
		switch {
		case m.focus == focusQueue || r == nil:
			m.setErr(fmt.Errorf("select a run in History (tab) to undo what it changed"))
		case m.d.opt.Undo == nil:
			m.setErr(fmt.Errorf("undo is not available here"))
		case r.running():
			m.setErr(fmt.Errorf("%s is still running", shortID(r.req.ID)))
		case r.res == nil || r.res.Checkpoint == nil || len(r.res.Checkpoint.Roots) == 0:
			m.setErr(fmt.Errorf("%s was not checkpointed: nothing to undo", shortID(r.req.ID)))
		default:
			m.setStatus("working out the undo…")
			return m.planUndoCmd(r.req.ID)
		}
	case key.Matches(msg, k.Kill):
		if r := m.shownRun(); r != nil && r.running() && m.d.opt.Fleet != nil {
			m.setErr(fmt.Errorf("%s runs on %s: stop it there", shortID(r.req.ID), HostOf(r.req.ID)))
			return nil
		}
		if r := m.shownRun(); r != nil && r.running() {
			m.open(&killDialog{id: r.req.ID})
			return nil
		}
		m.setErr(fmt.Errorf("nothing running is selected"))
	case key.Matches(msg, k.GoAhead):
		r := m.shownRun()
		if r == nil || !r.running() || r.waitsFor == "" {
			m.setErr(fmt.Errorf("no run that waits for its turn is selected"))
			return nil
		}
		m.setStatus(fmt.Sprintf("%s goes ahead while %s runs: each one's changed files may include the other's, and undo asks before restoring those",
			shortID(r.req.ID), shortID(r.waitsFor)))
		return m.goAheadCmd(r.req.ID)
	case key.Matches(msg, k.Approve), key.Matches(msg, k.Deny), key.Matches(msg, k.Edit), key.Matches(msg, k.ApproveRule),
		key.Matches(msg, k.ApproveUnconfined), key.Matches(msg, k.Trust), key.Matches(msg, k.Mark):
		return m.decisionKey(msg)
	}
	return nil
}

// decisionKey handles approve, deny, edit and approve+rule on the
// selected request.
func (m *Model) decisionKey(msg tea.KeyPressMsg) tea.Cmd {
	k := m.keys
	it := m.current()
	if it == nil && m.focus == focusQueue && m.lastGone != "" && m.d.now().Sub(m.lastGoneAt) < 3*time.Second {
		// The key was meant for what just left.
		m.setErr(errors.New(m.goneText(m.lastGone)))
		return nil
	}
	if it == nil || m.focus != focusQueue {
		m.setErr(fmt.Errorf("no pending request selected"))
		return nil
	}
	if it.busy {
		return nil
	}
	if key.Matches(msg, k.Deny) {
		// Denying is always allowed: no grace needed to say no.
		d := &denyDialog{id: it.req.ID}
		m.openInput(&d.input, "", "reason (optional): ")
		m.open(d)
		return nil
	}
	if m.d.opt.Fleet != nil && (key.Matches(msg, k.Edit) || key.Matches(msg, k.ApproveRule) || key.Matches(msg, k.Trust) || key.Matches(msg, k.ApproveUnconfined)) {
		m.setErr(fmt.Errorf("over the hub a request is approved as it is (a) or denied (d); edits, rules, trusts and unconfined runs are made on %s itself", HostOf(it.req.ID)))
		return nil
	}
	if key.Matches(msg, k.Mark) {
		// Marking approves nothing (a shows the marked and asks), so
		// it does not wait out the grace: a quick second space counts.
		return m.markKey(it)
	}
	if left := m.graceLeft(); left > 0 {
		m.setStatus(fmt.Sprintf("approve keys wait %.1fs: look at what changed", left.Seconds()))
		return nil
	}
	if key.Matches(msg, k.Approve) && m.markedCount() > 0 {
		// The marked requests, each checked when it was marked: the
		// selected one need not be among them.
		m.open(batchDialog{})
		return nil
	}
	if it.clipped && m.d.opt.Fleet != nil {
		host, id, _ := strings.Cut(it.req.ID, "/")
		m.setErr(fmt.Errorf("%s is too long to review here: deny it, or read it whole on %s with 'sluice show %s' and decide there", shortID(it.req.ID), host, id))
		return nil
	}
	if it.clipped && !key.Matches(msg, k.Edit) {
		m.setErr(fmt.Errorf("%s is too long to review here: deny it, or read it whole with 'sluice show %s' and decide with sluice approve or deny", shortID(it.req.ID), it.req.ID))
		return nil
	}
	if m.noteSeen(); !it.seenEnd {
		// A command longer than the pane could hide its payload below
		// what the person read (80 newlines, then curl … | sh).
		m.setErr(fmt.Errorf("%s (pgdn or end): it has more than the pane shows", scrollFirst))
		return nil
	}
	if it.verdict.Action == queue.ActionDeny {
		m.setErr(fmt.Errorf("the policy denies this request; it cannot be approved"))
		return nil
	}
	switch {
	case key.Matches(msg, k.Approve):
		return m.approveSelected(it, "", ScopeEverywhere)
	case key.Matches(msg, k.Edit):
		if it.req.Kind != queue.KindExec {
			m.setErr(fmt.Errorf("only commands can be edited"))
			return nil
		}
		d := &editDialog{id: it.req.ID}
		m.openInput(&d.input, it.req.Command, "edit: ")
		m.open(d)
	case key.Matches(msg, k.ApproveUnconfined):
		if it.req.Kind != queue.KindExec {
			m.setErr(fmt.Errorf("only commands run confined; approve file changes with a"))
			return nil
		}
		m.open(&unconfinedDialog{id: it.req.ID})
	case key.Matches(msg, k.ApproveRule):
		if it.req.Kind != queue.KindExec || m.d.opt.Rules == nil {
			m.setErr(fmt.Errorf("rules can be proposed only for commands"))
			return nil
		}
		it.busy = true
		return m.proposeCmd(it.req.ID, it.req.Command, false)
	case key.Matches(msg, k.Trust):
		switch {
		case it.req.Kind != queue.KindExec || m.d.opt.Trusts == nil || m.d.opt.Rules == nil:
			m.setErr(fmt.Errorf("only commands can be trusted"))
			return nil
		case it.req.Session == "":
			m.setErr(fmt.Errorf("the request names no agent session to trust it for; approve it with a, or A for a rule"))
			return nil
		}
		it.busy = true
		return m.proposeCmd(it.req.ID, it.req.Command, true)
	}
	return nil
}

// markKey marks or unmarks it for a batch: only what could be approved
// alone (read to its end, not denied, not clipped).
func (m *Model) markKey(it *item) tea.Cmd {
	m.noteSeen()
	switch {
	case it.clipped:
		m.setErr(fmt.Errorf("%s is too long to review here: it cannot be marked", shortID(it.req.ID)))
	case !it.seenEnd:
		m.setErr(fmt.Errorf("%s (pgdn or end): it has more than the pane shows", scrollFirst))
	case it.verdict.Action == queue.ActionDeny:
		m.setErr(fmt.Errorf("the policy denies this request; it cannot be approved"))
	default:
		it.marked = !it.marked
		m.setStatus(fmt.Sprintf("%d marked: a approves them together after a check; space unmarks, Esc clears", m.markedCount()))
	}
	return nil
}

// approveSelected approves it, keeping rule for scope when rule is not
// empty; a file request's diff is computed again first and compared with
// what was shown.
func (m *Model) approveSelected(it *item, rule string, scope RuleScope) tea.Cmd {
	if isFile(it.req) && m.d.opt.Preview != nil {
		it.busy = true
		return m.recheckCmd(it.req, rule, scope)
	}
	if rule != "" {
		it.busy = true
		return m.addRuleCmd(it.req, rule, scope)
	}
	return m.approveCmd(it.req.ID, "")
}

// afterRecheck approves a file request only if its diff is still the one
// the person saw; otherwise it shows the new diff and asks again.
func (m *Model) afterRecheck(msg recheckedMsg) tea.Cmd {
	it := m.find(msg.id)
	if it == nil {
		return nil
	}
	it.busy = false
	if msg.err != nil || msg.diff != it.diff || !it.diffOK {
		it.diff, it.diffErr, it.diffOK = msg.diff, msg.err, true
		m.startGrace()
		m.setErr(fmt.Errorf("the file changed since you saw the diff: review it again"))
		return m.tick()
	}
	if msg.rule != "" {
		it.busy = true
		return m.addRuleCmd(it.req, msg.rule, msg.scope)
	}
	return m.approveCmd(it.req.ID, "")
}

// proposalStands ends the wait on a proposed rule for request id and
// says whether its dialog may open: the proposal did not fail (else the
// error is shown) and the request is still the one selected.
func (m *Model) proposalStands(id string, err error) bool {
	m.idle(id)
	if err != nil {
		m.setErr(err)
		return false
	}
	c := m.current()
	return c != nil && c.req.ID == id // else the selection moved meanwhile
}

// afterPropose opens the rule dialog.
func (m *Model) afterPropose(msg ruleProposedMsg) tea.Cmd {
	if !m.proposalStands(msg.id, msg.err) {
		return nil
	}
	// Narrow first: the pattern closest to the command, in this
	// project; wider is a choice (→, s).
	m.open(&ruleDialog{rule: msg, scope: ScopeProject, trust: msg.trust})
	return nil
}

// openFilter opens the filter's input on the filter in force.
func (m *Model) openFilter() {
	m.mode, m.judging = modeFilter, ""
	m.openInput(&m.input, m.filter, "filter: ")
}

// openInput readies a one-line input for a dialog.
func (m *Model) openInput(in *lineInput, value, prompt string) {
	in.Reset()
	in.Prompt = prompt
	in.SetValue(value)
	in.CursorEnd()
	in.SetWidth(max(10, m.width-len(prompt)-8))
	in.Focus()
}

// filterKey drives the filter's input: the queue narrows as it is typed,
// Enter keeps it, Esc clears it.
func (m *Model) filterKey(msg tea.KeyPressMsg) tea.Cmd {
	switch {
	case msg.String() == "esc":
		m.filter = ""
		m.clampSelection()
		m.mode = modeNormal
		m.input.Blur()
		return nil
	case key.Matches(msg, m.keys.Submit):
		m.mode = modeNormal
		m.input.Blur()
		m.filter = strings.TrimSpace(m.input.Value())
		m.selected = 0
		m.clampSelection()
		m.startGrace()
		return nil
	}
	m.input.Update(msg)
	m.filter = strings.TrimSpace(m.input.Value())
	m.clampSelection()
	return nil
}

// move changes the selection in the focused list.
func (m *Model) move(d int) {
	switch m.focus {
	case focusQueue:
		before := m.current()
		m.selected += d
		m.clampSelection()
		if m.current() != before {
			m.startGrace()
		}
	case focusHistory:
		m.histSel += d // the list shows the newest first, at the top
		m.histSel = min(max(m.histSel, 0), max(len(m.history)-1, 0))
	case focusOutput:
		m.scroll(d)
	}
}

// scroll moves the output pane's view, or the detail when the queue has
// the focus.
func (m *Model) scroll(d int) {
	if m.focus != focusOutput {
		// The queue and History scroll the detail of what they select.
		w, h := m.detailSize()
		total := len(m.detailLines(w, h))
		top, _ := detailView(m.detailTop, total, h)
		m.detailTop = top + d*max(1, h/2)
		m.detailTop, _ = detailView(m.detailTop, total, h)
		m.noteSeen()
		return
	}
	r := m.shownRun()
	if r == nil || r.screen == nil {
		return
	}
	_, rows := m.outputInner()
	if d < 0 {
		r.screen.ScrollUp(max(1, rows/2))
	} else {
		r.screen.ScrollDown(max(1, rows/2))
	}
}

// scrollEnd goes to the top (d < 0) or the end of the detail, or of the
// output in the output pane (where the end follows new output).
func (m *Model) scrollEnd(d int) {
	if m.focus != focusOutput {
		m.detailTop = 0
		if d > 0 {
			w, h := m.detailSize()
			m.detailTop, _ = detailView(1<<30, len(m.detailLines(w, h)), h)
			// A command not yet read to its end: End stops there first
			// (its end is what approving waits for), then the bottom.
			if it := m.current(); it != nil && m.focus == focusQueue && !it.seenEnd {
				if top, ok := m.commandEndTop(); ok {
					m.detailTop = top
				}
			}
		}
		m.noteSeen()
		return
	}
	r := m.shownRun()
	if r == nil || r.screen == nil {
		return
	}
	if d > 0 {
		r.screen.Follow()
	} else {
		r.screen.ScrollUp(1 << 30)
	}
}

// markedCount is how many pending requests are marked for a batch.
func (m *Model) markedCount() int {
	n := 0
	for _, it := range m.pending {
		if it.marked {
			n++
		}
	}
	return n
}

// approveBatch approves every marked request still pending, each as the
// person saw it, as a batch: no rule is kept, each is audited as its own
// approval.
func (m *Model) approveBatch() tea.Cmd {
	var cmds []tea.Cmd
	n := 0
	for _, it := range slices.Clone(m.pending) {
		if !it.marked || it.busy || it.verdict.Action == queue.ActionDeny {
			continue
		}
		it.marked = false
		if c := m.approveAs(it.req.ID, queue.Approval{}, "approved (batch)"); c != nil {
			cmds = append(cmds, c)
			n++
		}
	}
	m.setStatus(fmt.Sprintf("approving %d request(s) as a batch", n))
	return tea.Batch(cmds...)
}

// scrollFirst starts the status line that says why approve did nothing.
const scrollFirst = "scroll to the end of the command first"

// noteSeen records that the selected request's command has been shown to
// its end, which approving it waits for.
func (m *Model) noteSeen() {
	if it := m.current(); it != nil && m.focus == focusQueue && !it.seenEnd && m.commandSeen() {
		it.seenEnd = true
		if m.statusErr && strings.HasPrefix(m.status, scrollFirst) {
			m.status = "" // what it asked for is done
		}
	}
}

// hunk scrolls the detail to the next or previous hunk of the diff.
func (m *Model) hunk(d int) {
	it := m.current()
	if it == nil || !it.diffOK {
		return
	}
	cols, _ := m.detailSize()
	var hunks []int
	for i, l := range m.detailLines(cols, 0) {
		if strings.HasPrefix(ansi.Strip(l), "@@") {
			hunks = append(hunks, i)
		}
	}
	if d > 0 {
		for _, h := range hunks {
			if h > m.detailTop {
				m.detailTop = h
				return
			}
		}
		return
	}
	for i := len(hunks) - 1; i >= 0; i-- {
		if hunks[i] < m.detailTop {
			m.detailTop = hunks[i]
			return
		}
	}
	m.detailTop = 0
}

func isFile(r *queue.Request) bool {
	return r.Kind == queue.KindWrite || r.Kind == queue.KindEdit || r.Kind == queue.KindPatch
}

// loadShownLog reads back the log of a finished run whose screen was let
// go, when the history selects it.
func (m *Model) loadShownLog() tea.Cmd {
	if m.focus == focusQueue {
		return nil
	}
	r := m.selectedRun()
	if r == nil || r.screen != nil || r.res == nil || !r.res.Ran() {
		return nil
	}
	return m.loadLogCmd(r)
}
