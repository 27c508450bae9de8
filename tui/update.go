package tui

import (
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"

	"github.com/sluice-dev/sluice/queue"
	"github.com/sluice-dev/sluice/themes"
)

// frame is how often the console redraws while something changes.
const frame = 50 * time.Millisecond

// Update implements tea.Model. Whatever changed the layout, the runs'
// terminals then get the output pane's size.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := m.step(msg)
	if resize := m.resized(); resize != nil {
		cmd = tea.Batch(cmd, resize)
	}
	return m, cmd
}

func (m *Model) step(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		return m, nil
	case tea.BackgroundColorMsg:
		if m.d.opt.AutoTheme {
			m.st = themes.Default(msg.IsDark())
		}
		return m, nil
	case tea.KeyPressMsg:
		return m, m.handleKey(msg)
	case engineMsg:
		cmd := m.handleEngine(msg.events)
		return m, tea.Batch(cmd, m.feed.next, m.tick())
	case tickMsg:
		m.ticking = false
		return m, m.tick()
	case previewedMsg:
		if it := m.find(msg.id); it != nil {
			it.diff, it.diffErr, it.diffOK = msg.diff, msg.err, true
		}
		return m, nil
	case undoPlannedMsg:
		switch {
		case msg.err != nil:
			m.setErr(msg.err)
		case len(msg.plan.Files) == 0:
			m.setStatus(shortID(msg.plan.ID) + " changed no files: nothing to undo")
		case m.mode == modeNormal && m.dlg == nil:
			m.open(&undoDialog{plan: msg.plan})
		}
		return m, nil
	case undoneMsg:
		if msg.err != nil {
			m.setErr(msg.err)
		} else {
			m.setStatus(msg.text)
		}
		return m, nil
	case webDevicesMsg:
		m.webDevicesRead(msg)
		return m, nil
	case webDeviceRevokedMsg:
		if msg.err != nil {
			m.setErr(fmt.Errorf("revoke %s: %w", plainText(msg.name), msg.err))
		} else {
			m.setStatus("revoked " + plainText(msg.name) + ": its open pages lose access within a second")
		}
		return m, nil
	case editJudgedMsg:
		// The person may have moved on while it was judged: the dialog
		// opens only on the request and the text it was judged for.
		if it := m.current(); it != nil && it.req.ID == msg.id && m.mode == modeNormal && m.dlg == nil && m.judging == msg.command {
			m.open(&confirmEditDialog{id: msg.id, command: msg.command, verdict: msg.verdict})
			m.status = ""
		}
		return m, nil
	case recheckedMsg:
		return m, m.afterRecheck(msg)
	case actedMsg:
		return m, m.afterAct(msg)
	case ruleProposedMsg:
		return m, m.afterPropose(msg)
	case hostProposedMsg:
		return m, m.afterHostPropose(msg)
	case hostRuleAddedMsg:
		return m, m.afterHostRule(msg)
	case trustsReadMsg:
		m.trusts = msg.trusts
		if msg.again {
			return m, m.readTrusts(trustsEvery, true)
		}
		return m, nil
	case trustedMsg:
		if msg.err != nil {
			m.idle(msg.id)
			m.setErr(fmt.Errorf("not trusted: %w", msg.err))
			return m, nil
		}
		// The header shows the new trust now, not at the next read.
		return m, tea.Batch(m.approveAs(msg.id, queue.Approval{}, "approved, "+msg.text+","), m.readTrusts(0, false))
	case ruleAddedMsg:
		if msg.err != nil {
			m.idle(msg.id)
			m.setErr(fmt.Errorf("rule not added: %w", msg.err))
			return m, nil
		}
		verb, rule := "approved, rule added", ""
		if msg.where != "" {
			verb = "approved, rule added to " + plainText(msg.where) + ","
		}
		if msg.where != "" && msg.scope != ScopeSession {
			// A session's trust has its own audit line (trusted).
			rule = fmt.Sprintf("rule allow %q (%s) added to %s", msg.pattern, msg.scope, msg.where)
		}
		return m, m.approveAs(msg.id, queue.Approval{Rule: rule}, verb)
	case logLoadedMsg:
		if r := m.byID[msg.id]; r != nil && msg.err == nil {
			r.screen = newLogScreen(msg.data, m.d)
		}
		return m, nil
	case errMsg:
		m.setErr(msg.err)
		return m, nil
	}
	if paste, ok := msg.(tea.PasteMsg); ok {
		switch d := m.dlg.(type) {
		case interface{ paste(tea.PasteMsg) }:
			d.paste(paste)
		case nil:
			if m.mode == modeFilter {
				m.input.Update(paste)
			}
		}
	}
	return m, nil
}

// tick keeps frames coming while a grace period counts down or a run is
// printing; it stops when nothing moves.
func (m *Model) tick() tea.Cmd {
	every := m.animating()
	if m.ticking || every == 0 {
		return nil
	}
	m.ticking = true
	return tea.Tick(every, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// animating is how often the screen must be redrawn with nothing else
// happening: a frame while a grace period counts down or a command runs,
// once a second for the ages and countdowns of pending requests, else
// never (0).
func (m *Model) animating() time.Duration {
	if m.d.now().Before(m.graceUntil) {
		return frame
	}
	if m.Running() > 0 {
		return frame
	}
	if len(m.pending) > 0 {
		return time.Second
	}
	return 0
}

// resized tells running ptys and screens the output pane's size when it
// changed: a terminal resize, or a layout that moved with the selection,
// a request's arrival or a run's start. While the pane is hidden (a
// narrow terminal gives a request all the height) they keep the last.
func (m *Model) resized() tea.Cmd {
	if m.width == 0 || m.layout().outH < minOut {
		return nil
	}
	cols, rows := m.outputInner()
	if uint32(rows) == m.d.rows.Load() && uint32(cols) == m.d.cols.Load() {
		return nil
	}
	m.d.rows.Store(uint32(rows))
	m.d.cols.Store(uint32(cols))
	var ids []string
	for _, r := range m.history {
		if r.screen != nil {
			r.screen.Resize(cols, rows)
		}
		if r.running() {
			ids = append(ids, r.req.ID)
		}
	}
	if len(ids) == 0 || m.d.opt.Terminal == nil {
		return nil
	}
	term := m.d.opt.Terminal
	return func() tea.Msg {
		for _, id := range ids {
			term.Resize(id, uint16(rows), uint16(cols))
		}
		return nil
	}
}

// handleEngine applies a batch of engine events.
func (m *Model) handleEngine(events []any) tea.Cmd {
	var cmds []tea.Cmd
	needsPerson := 0
	var last *queue.Request
	for _, ev := range events {
		switch ev := ev.(type) {
		case requestPending:
			if m.find(ev.req.ID) != nil {
				continue
			}
			it := &item{req: ev.req, verdict: ev.verdict, arrived: ev.at, hidden: hasHidden(ev.req), tricks: layoutTricks(ev.req.Command), checkpt: ev.checkpt,
				clipped: utf8.RuneCountInString(ev.req.Command) > maxShown || utf8.RuneCount(ev.req.Input) > maxShown}
			m.insert(it)
			m.queued[it.req.ID] = it
			needsPerson++
			last = ev.req
			if ev.req.Kind == queue.KindWrite || ev.req.Kind == queue.KindEdit || ev.req.Kind == queue.KindPatch {
				cmds = append(cmds, m.previewCmd(ev.req))
			}
		case requestGone:
			m.remove(ev.id)
		case runStarted:
			m.remove(ev.run.req.ID)
			if old := m.byID[ev.run.req.ID]; old != nil && old.fromLog {
				m.dropRun(old) // its log line came first; the live run replaces it
			}
			m.addRun(ev.run)
		case runWaits:
			if r := m.byID[ev.id]; r != nil && r.running() {
				r.waitsFor = ev.holder
				if ev.holder != "" {
					m.setStatus(fmt.Sprintf("%s waits for %s, which changes files in the same project · %s lets it go ahead",
						shortID(ev.id), shortID(ev.holder), m.keys.GoAhead.Help().Key))
				}
			}
		case resultWaits:
			if r := m.byID[ev.id]; r != nil && r.running() {
				r.unwritten = ev.why
				m.setErr(fmt.Errorf("%s ended; its result cannot be written yet (the header says why), and its agent keeps waiting", shortID(ev.id)))
			}
		case linkChanged:
			// The header reads the link as it redraws.
		case spoolProblem:
			m.spoolProblem = ev.problem
		case reconfigured:
			m.configProblem = ev.problem
			if s := ev.settings; s != nil {
				m.d.opt.Bell, m.d.opt.Notify = s.Bell, s.Notify
				if s.Grace > 0 {
					m.d.opt.Grace = s.Grace
				}
				m.d.opt.Sandbox, m.d.opt.SandboxOff = s.Sandbox, s.SandboxOff
			}
			if ev.text != "" {
				m.setStatus(ev.text)
			}
		case loggedEvents:
			for i := range ev.events {
				m.applyLogged(&ev.events[i])
			}
		case runFinished:
			m.remove(ev.id)
			r := m.byID[ev.id]
			if r == nil {
				r = &run{started: ev.at, req: ev.req, by: ev.res.DecidedBy}
				if ev.res.Verdict != nil {
					r.verdict = *ev.res.Verdict
				}
				m.addRun(r)
			}
			res := ev.res
			r.res, r.ended = &res, ev.at
			if r.verdict.Action == queue.ActionAllowWithCheckpoint && res.DecidedBy == queue.ByPolicy {
				// Allowed with a checkpoint: said quietly (no bell), with
				// what it changed and how to take it back.
				s := "ran without asking (the policy allows it when its changes can be undone): " + plainText(r.req.Summary())
				if n := len(res.ChangedFiles); n > 0 {
					s += fmt.Sprintf(" · changed %d file(s) · u in History puts them back", n)
				}
				m.setStatus(s)
			}
		}
	}
	if needsPerson > 0 {
		// Something new arrived: approve keys pause so a keystroke meant
		// for what was there cannot approve what was just drawn.
		m.arrivalGrace()
		cmds = append(cmds, m.notify(needsPerson, last))
	}
	m.clampSelection()
	return tea.Batch(cmds...)
}

// addRun puts r in the history, letting go of old screens and entries.
func (m *Model) addRun(r *run) {
	m.history = append(m.history, r)
	m.byID[r.req.ID] = r
	if m.focus == focusHistory || m.histSel > 0 {
		// histSel counts from the newest: the entry a person selected
		// (the run just undone, say) stays selected.
		m.histSel++
	}
	if len(m.history) > maxHistory {
		old := m.history[0]
		if old.running() {
			return
		}
		if old.screen != nil {
			old.screen.Close()
		}
		delete(m.byID, old.req.ID)
		m.history = m.history[1:]
	}
	kept := 0
	for i := len(m.history) - 1; i >= 0; i-- {
		h := m.history[i]
		if h.screen == nil {
			continue
		}
		if kept++; kept > maxScreens && !h.running() {
			h.screen.Close()
			h.screen = nil
		}
	}
}

// applyLogged takes one audit event into History. Runs this console
// watched are already there; the log adds what other processes did.
func (m *Model) applyLogged(ev *queue.Event) {
	if ev.ID == "" || ev.Event == queue.EventQueued {
		return
	}
	r := m.byID[ev.ID]
	if r != nil && !r.fromLog {
		// A run this console watched: the log says who decided it.
		if r.actor == "" && ev.Actor != "" && (ev.Event == queue.EventApproved || ev.Event == queue.EventDenied) {
			r.actor = ev.Actor
		}
		return
	}
	if r == nil {
		req := &queue.Request{ID: ev.ID, Kind: ev.Kind, Command: ev.Command, Path: ev.Path, Tool: ev.Tool,
			Cwd: ev.Cwd, Agent: ev.Agent}
		if ev.Event == queue.EventUndone {
			// An undo: not a request, but in History like one (and
			// undoable like one).
			req.Kind, req.Command = queue.KindExec, ev.Reason
		}
		r = &run{req: req, started: ev.TS, fromLog: true}
		m.addRun(r)
		m.placeByTime(r)
	}
	r.last = ev.Event
	if ev.Verdict != nil {
		r.verdict = *ev.Verdict
	}
	if ev.Actor != "" && ev.Event != queue.EventStarted && ev.Event != queue.EventFinished {
		r.actor = ev.Actor
		r.by = queue.ByHuman
		if ev.Actor == string(queue.ByPolicy) {
			r.by = queue.ByPolicy
		}
	}
	if ev.Status != "" {
		res := &queue.Result{ID: ev.ID, Status: ev.Status, ExitCode: ev.ExitCode, DurationMS: ev.DurationMS,
			Reason: ev.Reason, Sandbox: ev.Sandbox, DecidedBy: r.by, ChangedFiles: ev.ChangedFiles, Checkpoint: ev.Checkpoint, Network: ev.Network}
		if ev.EditedFrom != "" {
			res.Command = ev.Command
		}
		r.res, r.ended = res, ev.TS
	}
}

// placeByTime moves r, just added last, back to its place by start time:
// the log's past entries can arrive after runs this console saw start.
// The selection stays on its entry.
func (m *Model) placeByTime(r *run) {
	n := len(m.history)
	i := n - 1
	for i > 0 && m.history[i-1].started.After(r.started) {
		i--
	}
	if i == n-1 {
		return
	}
	copy(m.history[i+1:], m.history[i:n-1])
	m.history[i] = r
	// histSel counts from the newest: entries older than r moved one
	// further from it.
	if sel := n - 1 - m.histSel; sel < n-1 && sel >= i {
		m.histSel++
	}
}

// dropRun takes r out of History.
func (m *Model) dropRun(r *run) {
	for i, h := range m.history {
		if h == r {
			m.history = append(m.history[:i], m.history[i+1:]...)
			break
		}
	}
	delete(m.byID, r.req.ID)
	if r.screen != nil {
		r.screen.Close()
	}
	m.histSel = min(m.histSel, max(len(m.history)-1, 0))
}

// insert puts a pending item in the queue, oldest first by when it was
// written (its id is a ULID: time first), whatever order the engine's
// concurrent verdicts came in; the selected request stays selected.
func (m *Model) insert(it *item) {
	i := len(m.pending)
	for i > 0 && older(it.req, m.pending[i-1].req) {
		i--
	}
	if i == len(m.pending) {
		m.pending = append(m.pending, it) // the usual case: it is the newest
		return
	}
	sel := m.current()
	m.pending = slices.Insert(m.pending, i, it)
	switch {
	case sel == nil:
	case m.filter == "":
		if i <= m.selected {
			m.selected++
		}
	default:
		for j, v := range m.visible() {
			if v == sel {
				m.selected = j
				break
			}
		}
	}
}

// older reports whether a was written before b.
func older(a, b *queue.Request) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) && !a.CreatedAt.IsZero() && !b.CreatedAt.IsZero() {
		return a.CreatedAt.Before(b.CreatedAt)
	}
	return a.ID < b.ID
}

// find returns the pending item with id.
func (m *Model) find(id string) *item { return m.queued[id] }

// remove drops a request from the queue; if it was the selected one, the
// selection moves and the grace period starts again.
func (m *Model) remove(id string) {
	if m.queued[id] == nil {
		return
	}
	delete(m.queued, id)
	m.lastGone, m.lastGoneAt = id, m.d.now()
	sel := m.current()
	for i, it := range m.pending {
		if it.req.ID == id {
			m.pending = append(m.pending[:i], m.pending[i+1:]...)
			break
		}
	}
	switch {
	case sel == nil:
	case sel.req.ID == id:
		m.clampSelection()
		m.startGrace()
	default:
		// Another request left: the selection stays on the request it
		// was on, wherever that now is in the list.
		for j, v := range m.visible() {
			if v == sel {
				m.selected = j
				break
			}
		}
	}
}

// startGrace makes approve keys inert until the screen has been quiet for
// Grace, but never longer than GraceMax after the first change: a flood
// of arrivals cannot hold approval off, since the period restarts only
// after a quiet spell of Grace. A new selection always restarts it.
func (m *Model) startGrace() { m.grace(true) }

// arrivalGrace is startGrace for a request that arrived behind the
// selection.
func (m *Model) arrivalGrace() { m.grace(false) }

func (m *Model) grace(selectionChanged bool) {
	now := m.d.now()
	quiet := !now.Before(m.lastChange.Add(m.d.opt.Grace))
	m.lastChange = now
	if selectionChanged || quiet {
		m.graceFrom = now
	}
	m.graceUntil = now.Add(m.d.opt.Grace)
	if limit := m.graceFrom.Add(m.d.opt.GraceMax); m.graceUntil.After(limit) {
		m.graceUntil = limit
	}
	m.detailTop = 0
}

// graceLeft is how long approve keys stay inert.
func (m *Model) graceLeft() time.Duration {
	return max(0, m.graceUntil.Sub(m.d.now()))
}

func (m *Model) setStatus(s string) { m.status, m.statusErr = s, false }
func (m *Model) setErr(err error)   { m.status, m.statusErr = err.Error(), true }

// idle marks request id's row as no longer waiting on an action.
func (m *Model) idle(id string) {
	if it := m.find(id); it != nil {
		it.busy = false
	}
}

// goneText says what became of request id, which another process (a
// second console, sluice approve or deny, serve) took first: who decided
// it, when the audit log has said so already.
func (m *Model) goneText(id string) string {
	if r := m.byID[id]; r != nil && r.actor != "" && (r.last == queue.EventApproved || r.last == queue.EventDenied ||
		r.last == queue.EventStarted || r.last == queue.EventFinished) {
		verb := "approved"
		if r.last == queue.EventDenied {
			verb = "denied"
		}
		return fmt.Sprintf("%s was %s by %s first; History shows it", shortID(id), verb, plainText(r.actor))
	}
	return fmt.Sprintf("%s was taken first by another process (another console, sluice approve or deny, serve); History shows what became of it", shortID(id))
}

// afterAct shows how a person's action ended.
func (m *Model) afterAct(msg actedMsg) tea.Cmd {
	it := m.find(msg.id)
	if it != nil {
		it.busy = false
	}
	if msg.fleet {
		host := HostOf(msg.id)
		if msg.err != nil {
			m.setErr(fmt.Errorf("%s %s: %w", host, shortID(msg.id), msg.err))
			return nil
		}
		if it != nil {
			// The hub holds the decision: the row waits for its box to
			// act, and a second key press has nothing to do.
			it.busy, it.sent = true, msg.verb
		}
		m.setStatus(fmt.Sprintf("%s %s %s at the hub: %s carries it out", msg.verb, host, shortID(msg.id), host))
		if msg.note != "" {
			m.setStatus(m.status + "; " + msg.note)
		}
		return nil
	}
	switch {
	case errors.Is(msg.err, queue.ErrClaimed), errors.Is(msg.err, queue.ErrResulted), errors.Is(msg.err, queue.ErrNotFound):
		m.setErr(errors.New(m.goneText(msg.id)))
	case errors.Is(msg.err, queue.ErrPolicyDenies):
		m.setErr(fmt.Errorf("%s refused: the policy denies it", msg.id))
	case errors.Is(msg.err, queue.ErrChangedSinceShown):
		m.setErr(fmt.Errorf("%s changed after you saw it; it was refused", msg.id))
	case errors.Is(msg.err, queue.ErrWriterGone):
		m.setErr(fmt.Errorf("%s not run: its agent stopped waiting (exited or was killed)", shortID(msg.id)))
	case errors.Is(msg.err, queue.ErrExpired):
		m.setErr(fmt.Errorf("%s not run: it had expired", shortID(msg.id)))
	case msg.err != nil:
		m.setErr(fmt.Errorf("%s %s: %w", msg.verb, msg.id, msg.err))
	default:
		kind := queue.KindExec
		if r := m.byID[msg.id]; r != nil {
			kind = r.req.Kind
		}
		m.setStatus(outcomeText(msg.verb, shortID(msg.id), kind, msg.res))
	}
	return nil
}

// outcomeText says what a person's decision came to, without repeating
// it ("denied X: denied").
func outcomeText(verb, id string, kind queue.Kind, res queue.Result) string {
	file := kind == queue.KindWrite || kind == queue.KindEdit || kind == queue.KindPatch
	switch {
	case res.Status == queue.StatusDecided && res.Decision == queue.Allow && kind == queue.KindConnect:
		return verb + " " + id + ": the run's connection goes ahead"
	case res.Status == queue.StatusDecided && res.Decision == queue.Allow && file:
		return verb + " " + id + ": the agent makes the change"
	case res.Status == queue.StatusDecided && res.Decision == queue.Allow:
		return verb + " " + id + ": the agent runs it"
	case res.Status == queue.StatusDecided, res.Status == queue.StatusDenied:
		return verb + " " + id
	case res.Status == queue.StatusDone && file:
		return verb + " " + id + ": the change is made"
	case res.Status == queue.StatusDone && res.ExitCode != nil:
		return fmt.Sprintf("%s %s: ran, exit %d", verb, id, *res.ExitCode)
	}
	return fmt.Sprintf("%s %s: %s", verb, id, res.Status)
}

func shortID(id string) string {
	if len(id) > 10 {
		return id[len(id)-8:]
	}
	return id
}
