package tui

import (
	"fmt"
	"io"
	"os"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/sluice-dev/sluice/queue"
)

// The commands the console runs off its UI goroutine. None of them
// touches the model: each returns a message.

func (m *Model) previewCmd(req *queue.Request) tea.Cmd {
	preview := m.d.opt.Preview
	if preview == nil {
		return nil
	}
	return func() tea.Msg {
		diff, err := preview.Preview(req)
		return previewedMsg{id: req.ID, diff: diff, err: err}
	}
}

// recheckCmd recomputes a file request's diff right before approving.
func (m *Model) recheckCmd(req *queue.Request, rule string, scope RuleScope) tea.Cmd {
	preview := m.d.opt.Preview
	return func() tea.Msg {
		diff, err := preview.Preview(req)
		return recheckedMsg{id: req.ID, diff: diff, err: err, rule: rule, scope: scope}
	}
}

// approveCmd claims and runs request id for the person; command, when
// not empty, is their edit.
func (m *Model) approveCmd(id, command string) tea.Cmd {
	verb := "approved"
	if command != "" {
		verb = "approved (edited)"
	}
	return m.approveAs(id, queue.Approval{Command: command}, verb)
}

// planUndoCmd works out, off the UI goroutine, what undoing run id does.
func (m *Model) planUndoCmd(id string) tea.Cmd {
	undo := m.d.opt.Undo
	return func() tea.Msg {
		p, err := undo.PlanUndo(id)
		return undoPlannedMsg{plan: p, err: err}
	}
}

// applyUndoCmd carries an undo out.
func (m *Model) applyUndoCmd(p *UndoPlan, force bool) tea.Cmd {
	undo := m.d.opt.Undo
	m.d.wg.Add(1)
	return func() tea.Msg {
		defer m.d.wg.Done()
		text, err := undo.ApplyUndo(p, force)
		return undoneMsg{text: text, err: err}
	}
}

// judgeEditCmd judges the command a person edited request req into, off
// the UI goroutine (a verdict reads policy files and walks the project).
// Without an engine's judge the edit asks, like any unknown line.
func (m *Model) judgeEditCmd(req *queue.Request, command string) tea.Cmd {
	edited := *req
	edited.Command = command
	var j queue.Judge
	if e := m.d.opt.Engine; e != nil {
		j = e.Judge
	}
	return func() tea.Msg {
		v := queue.Verdict{Action: queue.ActionAsk, Category: "unknown", Risk: "medium"}
		if j != nil {
			v = j.Judge(&edited)
		}
		return editJudgedMsg{id: req.ID, command: command, verdict: v}
	}
}

// approveUnconfinedCmd claims and runs request id for the person without
// the confinement its verdict would give it.
func (m *Model) approveUnconfinedCmd(id string) tea.Cmd {
	return m.approveAs(id, queue.Approval{Unconfined: true}, "approved UNCONFINED")
}

// approveAs claims and runs request id as a says, for the person who saw
// it as shown; verb names the act in the status line.
func (m *Model) approveAs(id string, a queue.Approval, verb string) tea.Cmd {
	it := m.find(id)
	if f := m.d.opt.Fleet; f != nil && it != nil {
		it.busy = true
		shown, ctx, scope := it.req, m.d.opt.Ctx, a.Scope
		return func() tea.Msg {
			return actedMsg{id: id, verb: verb, err: f.Approve(ctx, shown, scope), fleet: true}
		}
	}
	if it == nil || m.d.opt.Engine == nil {
		return nil
	}
	it.busy = true
	eng, ctx := m.d.opt.Engine, m.d.opt.Ctx
	a.Actor, a.Shown = m.d.opt.Actor, it.req
	m.d.wg.Add(1)
	return func() tea.Msg {
		defer m.d.wg.Done()
		res, err := eng.ApproveAs(ctx, id, a)
		return actedMsg{id: id, verb: verb, res: res, err: err}
	}
}

func (m *Model) denyCmd(id, reason string) tea.Cmd {
	it := m.find(id)
	if f := m.d.opt.Fleet; f != nil && it != nil {
		it.busy = true
		shown, ctx := it.req, m.d.opt.Ctx
		return func() tea.Msg {
			return actedMsg{id: id, verb: "denied", err: f.Deny(ctx, shown, reason), fleet: true}
		}
	}
	if it == nil || m.d.opt.Engine == nil {
		return nil
	}
	it.busy = true
	eng, actor := m.d.opt.Engine, m.d.opt.Actor
	if reason == "" {
		reason = "denied by " + actor + " in the console"
	}
	m.d.wg.Add(1)
	return func() tea.Msg {
		defer m.d.wg.Done()
		res, err := eng.Deny(id, actor, reason)
		return actedMsg{id: id, verb: "denied", res: res, err: err}
	}
}

func (m *Model) killCmd(id string) tea.Cmd {
	eng := m.d.opt.Engine
	if eng == nil {
		return nil
	}
	actor := m.d.opt.Actor
	return func() tea.Msg {
		if !eng.KillAs(id, actor) {
			return errMsg{fmt.Errorf("%s is not running here", shortID(id))}
		}
		return nil
	}
}

func (m *Model) goAheadCmd(id string) tea.Cmd {
	eng := m.d.opt.Engine
	if eng == nil {
		return nil
	}
	return func() tea.Msg {
		if !eng.GoAhead(id) {
			return errMsg{fmt.Errorf("%s is not running here", shortID(id))}
		}
		return nil
	}
}

// proposeCmd works out the patterns a rule (or, with trust, a trust) for
// command could have; the dialog opens on the narrowest.
func (m *Model) proposeCmd(id, command string, trust bool) tea.Cmd {
	rules := m.d.opt.Rules
	return func() tea.Msg {
		patterns, _ := rules.ProposeRule(command)
		if len(patterns) == 0 {
			what := "rule to propose"
			if trust {
				what = "rule to trust"
			}
			return ruleProposedMsg{id: id, trust: trust, err: fmt.Errorf("no safe %s for this command; approve it with a", what)}
		}
		msg := ruleProposedMsg{id: id, patterns: patterns, matches: make([]int, len(patterns)), trust: trust}
		for i, p := range patterns {
			if msg.matches[i], msg.err = rules.CountMatches(p); msg.err != nil {
				break
			}
		}
		return msg
	}
}

func (m *Model) addRuleCmd(req *queue.Request, pattern string, scope RuleScope) tea.Cmd {
	rules := m.d.opt.Rules
	return func() tea.Msg {
		where, err := rules.AddRule(req, pattern, scope)
		return ruleAddedMsg{id: req.ID, where: where, pattern: pattern, scope: scope, err: err}
	}
}

// trustCmd trusts the rule proposed first for req's agent session (T),
// then the approval follows.
// trustCmd trusts pattern for req's agent session, then approves req.
func (m *Model) trustCmd(req *queue.Request, pattern string) tea.Cmd {
	trusts := m.d.opt.Trusts
	return func() tea.Msg {
		text, err := trusts.TrustRule(req, pattern)
		return trustedMsg{id: req.ID, text: text, err: err}
	}
}

// trustsEvery is how often the header's trusts are read again: they count
// down in seconds, and another process (sluice trust) may add or end one.
const trustsEvery = time.Second

// readTrusts reads the trusts in force after a while (none: now), off the
// UI goroutine: they live in a file, and View reads only the model. With
// again, it reads them again every trustsEvery.
func (m *Model) readTrusts(after time.Duration, again bool) tea.Cmd {
	trusts := m.d.opt.Trusts
	if trusts == nil {
		return nil
	}
	read := func() tea.Msg { return trustsReadMsg{trusts: trusts.Trusts(), again: again} }
	if after <= 0 {
		return read
	}
	return tea.Tick(after, func(time.Time) tea.Msg { return read() })
}

// logTail is how much of a finished run's log is read back for its pane.
const logTail = 256 << 10

func (m *Model) loadLogCmd(r *run) tea.Cmd {
	if r.req == nil || m.d.opt.Engine == nil {
		return nil
	}
	path, id := m.d.opt.Engine.Spool.LogPath(r.req.ID), r.req.ID
	return func() tea.Msg {
		f, err := os.Open(path)
		if err != nil {
			return logLoadedMsg{id: id, err: err}
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.Size() > logTail {
			_, _ = f.Seek(fi.Size()-logTail, io.SeekStart)
		}
		data, err := io.ReadAll(io.LimitReader(f, logTail))
		return logLoadedMsg{id: id, data: data, err: err}
	}
}
