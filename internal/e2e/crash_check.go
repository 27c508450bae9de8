//go:build unix

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// crashStats are the figures the checks find.
type crashStats struct {
	requests     int
	byKind       map[string]int
	byKindStatus map[string]map[string]int
	byStatus     map[string]int
	duplicates   int // ids in the marker more than once, or started twice
	lost         int // requests without a result
	writersLost  int // 'sluice run's that ended without printing a result
	interrupted  int
	stopped      int // started, its engine killed part way
	markerLines  int
	repaired     int // torn tails repaired
	auditLines   int
	verify       string
	approved     int
	refused      int
	litter       int // temporary files left in tmp/ and out/ by killed engines
}

// check runs the checkers over what the run left, then the kinds' own
// rules: how each kind may end, and by whom.
func (h *crashRun) check() {
	st := &h.stats
	st.byKind, st.byStatus, st.byKindStatus = map[string]int{}, map[string]int{}, map[string]map[string]int{}
	sp, err := ReadSpool(h.spool)
	if err != nil {
		h.fail("read the spool: %v", err)
		return
	}
	marks, err := ReadMarks(h.mark)
	if err != nil {
		h.fail("read the marker: %v", err)
	}
	events, err := ReadAudit(h.auditPath)
	if err != nil {
		h.fail("read the audit log: %v", err)
	}
	told := make([]Told, len(h.runs))
	kindOf := map[string]string{}
	for i, w := range h.runs {
		told[i] = w.Told
		if w.Result != nil {
			kindOf[w.Result.ID] = w.kind
		} else {
			st.writersLost++
		}
	}
	decisions, _, personFailed := h.person.Decisions()
	rep, chain := CheckChain(h.auditPath)
	for _, f := range [][]string{CheckOnce(sp, marks, events), CheckTold(sp, told), chain, personFailed} {
		h.violations = append(h.violations, f...)
	}
	if rep != nil {
		st.verify = fmt.Sprintf("%d events, head %.12s", rep.Events, rep.Head)
		st.repaired = len(rep.Repaired)
	}
	st.litter = sp.Litter
	st.auditLines = len(events)
	for _, n := range marks {
		st.markerLines += n
	}
	for _, d := range decisions {
		if d.Refused() {
			st.refused++
		} else {
			st.approved++
		}
		if d.Exit != 0 {
			h.fail("%s: sluice %s exited %d: %q", d.ID, d.Args[0], d.Exit, d.Output)
		}
	}
	ids := map[string]bool{}
	for id := range sp.Results {
		ids[id] = true
	}
	for id := range marks {
		ids[id] = true
	}
	for _, ev := range events {
		if queue.ValidID(ev.ID) {
			ids[ev.ID] = true
		}
	}
	started := map[string]int{}
	for _, ev := range events {
		if ev.Event == string(queue.EventStarted) {
			started[ev.ID]++
		}
	}
	st.requests = len(ids)
	for _, id := range sorted(ids) {
		if marks[id] > 1 || started[id] > 1 {
			st.duplicates++
		}
		res := sp.Results[id]
		if res == nil {
			st.lost++
			continue
		}
		h.checkKind(id, kindOf[id], res)
	}
}

// checkKind checks how a request of kind ended: the statuses each kind
// may end with, and who decided a run.
func (h *crashRun) checkKind(id, kind string, res *queue.Result) {
	st := &h.stats
	if kind == "" {
		kind = "?"
	}
	status := string(res.Status)
	st.byStatus[status]++
	st.byKind[kind]++
	if st.byKindStatus[kind] == nil {
		st.byKindStatus[kind] = map[string]int{}
	}
	st.byKindStatus[kind][status]++
	switch res.Status {
	case queue.StatusInterrupted:
		st.interrupted++
	case queue.StatusStopped:
		st.stopped++
	}
	var allowed []queue.Status
	switch kind {
	case kindAuto, kindAutoLong:
		allowed = []queue.Status{queue.StatusDone, queue.StatusInterrupted, queue.StatusStopped}
	case kindDeny:
		allowed = []queue.Status{queue.StatusDenied, queue.StatusInterrupted}
	case kindAsk, kindAskLong:
		allowed = []queue.Status{queue.StatusDone}
	case kindAskDeny:
		allowed = []queue.Status{queue.StatusDenied}
	}
	if !slices.Contains(allowed, res.Status) {
		h.fail("%s (%s): status %s, want one of %v; reason %q", id, kind, status, allowed, res.Reason)
	}
	if res.Status == queue.StatusDone {
		if res.ExitCode == nil || *res.ExitCode != 0 {
			h.fail("%s (%s): done with exit code %v, want 0; output %q", id, kind, res.ExitCode, res.OutputTail)
		}
		wantBy := queue.ByPolicy
		if kind == kindAsk || kind == kindAskLong {
			wantBy = queue.ByHuman
		}
		if res.DecidedBy != wantBy {
			h.fail("%s (%s): decided by %q, want %q", id, kind, res.DecidedBy, wantBy)
		}
	}
}

// counts is "a 1, b 2" for m, sorted by key.
func counts(m map[string]int) string {
	parts := make([]string, 0, len(m))
	for _, k := range sorted(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// durations summarises ds: max, p50, p90 and how many.
func durations(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none measured"
	}
	rs := slices.Clone(ds)
	slices.Sort(rs)
	pct := func(p int) time.Duration { return rs[max((len(rs)*p+99)/100, 1)-1].Round(time.Millisecond) }
	return fmt.Sprintf("max %s, p50 %s, p90 %s (%d measured)", pct(100), pct(50), pct(90), len(rs))
}

func (h *crashRun) report(total time.Duration) {
	st, out := &h.stats, h.o.Out
	fmt.Fprintln(out)
	fmt.Fprintln(out, "crash recovery: sluice serve killed with SIGKILL under load")
	row := func(k string, v any) { fmt.Fprintf(out, "  %-34s %v\n", k, v) }
	row("requests", st.requests)
	kinds := []string{}
	for _, w := range crashWeights {
		kinds = append(kinds, w.kind)
	}
	for _, k := range append(kinds, "?") {
		if st.byKind[k] == 0 {
			continue
		}
		row("  "+k, fmt.Sprintf("%d: %s", st.byKind[k], counts(st.byKindStatus[k])))
	}
	row("kills (SIGKILL)", fmt.Sprintf("%d (%d in an engine's first %s, %d after %s-%s, the rest after %s-%s)",
		h.kills, h.earlyKills, h.o.EarlyWindow, h.longKills, h.o.MaxGap, h.o.LongGap, h.o.MinGap, h.o.MaxGap))
	row("results by status", counts(st.byStatus))
	row("approved / refused by a person", fmt.Sprintf("%d / %d", st.approved, st.refused))
	row("duplicates (ran twice)", st.duplicates)
	row("lost (no result)", st.lost)
	row("sluice runs without a result", st.writersLost)
	row("interrupted", fmt.Sprintf("%d (never started); stopped %d (started)", st.interrupted, st.stopped))
	row("marker lines", st.markerLines)
	row("recovery: kill to next served", durations(h.recoveries))
	row("  with a policy request waiting", durations(h.recoveriesWaiting))
	row("first engine: start to served", h.firstServed.Round(time.Millisecond))
	row("audit lines", fmt.Sprintf("%d (%d torn tails repaired)", st.auditLines, st.repaired))
	row("audit verify", st.verify)
	row("temporary files left by kills", st.litter)
	row("load time / run time", fmt.Sprintf("%s / %s", h.loadTime.Round(time.Second), total.Round(time.Second)))
	if len(h.violations) == 0 {
		fmt.Fprintln(out, "OK: every request has exactly one result, nothing ran twice, the audit log verifies")
		return
	}
	fmt.Fprintf(out, "FAILED: %d violations\n", len(h.violations))
	h.violations.Print(out, 50, "  - ")
}
