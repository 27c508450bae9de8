//go:build unix

package e2e

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// check runs the checkers over what the load left, then the load's own
// rules.
func (r *loadRun) check(serveLog string) {
	sp, err := ReadSpool(r.spool)
	if err != nil {
		r.fail("read the spool: %v", err)
		return
	}
	marks := map[string]int{}
	for _, m := range []string{allowMarker, askMarker} {
		mm, err := ReadMarks(filepath.Join(r.project, m))
		if err != nil {
			r.fail("read %s: %v", m, err)
		}
		for id, n := range mm {
			marks[id] += n
		}
	}
	events, err := ReadAudit(r.audit)
	if err != nil {
		r.fail("read the audit log: %v", err)
	}
	r.auditLines = len(events)
	var told []Told
	r.byID = map[string]*loadSample{}
	for i := range r.samples {
		s := &r.samples[i]
		if s.took == 0 {
			continue // never run: the timeout is reported already
		}
		told = append(told, s.Told)
		if s.Result != nil && r.byID[s.Result.ID] == nil {
			r.byID[s.Result.ID] = s
		}
	}
	_, _, personFailed := r.person.Decisions()
	rep, chain := CheckChain(r.audit)
	if rep != nil {
		r.verify = fmt.Sprintf("%d events verify, head %.12s", rep.Events, rep.Head)
	}
	for _, f := range [][]string{CheckOnce(sp, marks, events), CheckTold(sp, told), chain, personFailed} {
		r.violations = append(r.violations, f...)
	}
	if n := len(sp.Results); n != len(r.samples) {
		r.fail("out/ holds %d results for %d requests", n, len(r.samples))
	}
	r.checkKinds()
	r.checkApprovals()
	r.checkMarkers()
	r.checkServeLog(serveLog)
	r.checkSteps(events)
}

// checkKinds: each request ended as its kind says, decided by whom it
// says.
func (r *loadRun) checkKinds() {
	for _, s := range r.byID {
		w := loadWant[s.kind]
		if s.Result.Status != w.status || s.Result.DecidedBy != w.by {
			r.fail("%s: result status %q decided by %q, want %q by %q", s, s.Result.Status, s.Result.DecidedBy, w.status, w.by)
		}
		if w.status == queue.StatusDone && (s.Result.ExitCode == nil || *s.Result.ExitCode != 0) {
			r.fail("%s: result has exit code %v, want 0", s, s.Result.ExitCode)
		}
	}
}

// checkApprovals: each ask request was approved by exactly one 'sluice
// approve'; the loser of a race for one id exited 1, nothing else failed.
func (r *loadRun) checkApprovals() {
	decisions, _, _ := r.person.Decisions()
	tries, wins := map[string]int{}, map[string]int{}
	for _, d := range decisions {
		tries[d.ID]++
	}
	for _, d := range decisions {
		s := r.byID[d.ID]
		switch {
		case s == nil:
			r.fail("sluice approve %s: an id no run got (exit %d): %s", d.ID, d.Exit, d.Output)
			continue
		case s.kind != loadAsk:
			r.fail("sluice approve %s: approved a %s request (exit %d)", d.ID, s.kind, d.Exit)
		}
		switch {
		case d.Exit == 0:
			wins[d.ID]++
		case tries[d.ID] < 2 || d.Exit != 1:
			r.fail("sluice approve %s exited %d (raced: %v): %s", d.ID, d.Exit, tries[d.ID] > 1, d.Output)
		}
	}
	for id, s := range r.byID {
		if s.kind == loadAsk && wins[id] != 1 {
			r.fail("%s: approved %d times, want once", s, wins[id])
		}
	}
}

// checkMarkers: each marker line is the command of the request whose id
// it holds (CheckOnce counts them).
func (r *loadRun) checkMarkers() {
	for _, m := range []struct {
		file string
		k    loadKind
	}{{allowMarker, loadAllow}, {askMarker, loadAsk}} {
		data, err := os.ReadFile(filepath.Join(r.project, m.file))
		if err != nil {
			r.fail("%s: %v", m.file, err)
			continue
		}
		for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			tag, id, ok := strings.Cut(line, " ")
			s := r.byID[id]
			switch {
			case !ok:
				r.fail("%s:%d: %q is not TAG ID", m.file, i+1, line)
			case s == nil:
				r.fail("%s:%d: id %s that no run got", m.file, i+1, id)
			case s.kind != m.k || s.tag != tag:
				r.fail("%s:%d: %s ran under id %s, which is %s", m.file, i+1, tag, id, s)
			}
		}
	}
}

// checkServeLog: the engine logged only what the load asks of it, one
// line for each request it acted on.
func (r *loadRun) checkServeLog(log string) {
	var ran, denied, odd int
	for l := range strings.SplitSeq(strings.TrimSpace(log), "\n") {
		_, msg, _ := strings.Cut(l, "sluice serve: ")
		switch {
		case strings.HasPrefix(msg, "watching "), msg == "stopped", strings.HasPrefix(msg, "ask "),
			strings.HasPrefix(msg, "commands run confined by "):
		case strings.HasPrefix(msg, "ran ") && strings.HasSuffix(msg, "-> done"):
			ran++
		case strings.HasPrefix(msg, "denied ") && strings.Contains(msg, " by policy: "):
			denied++
		default:
			if odd++; odd <= 5 {
				r.fail("sluice serve logged: %s", l)
			}
		}
	}
	if odd > 5 {
		r.fail("sluice serve logged %d more unexpected lines", odd-5)
	}
	n := r.count()
	if ran != n[loadAllow] || denied != n[loadDeny] {
		r.fail("sluice serve ran %d and denied %d requests, want %d and %d", ran, denied, n[loadAllow], n[loadDeny])
	}
}

func (r *loadRun) count() (n [numLoadKinds]int) {
	for _, s := range r.byID {
		n[s.kind]++
	}
	return n
}

// checkSteps: the audit log holds exactly the expected steps for each
// request, naming the command that was submitted.
func (r *loadRun) checkSteps(events []Event) {
	steps := map[string]map[string]int{}
	for i, ev := range events {
		s := r.byID[ev.ID]
		if s == nil {
			r.fail("audit event %d: %s for id %q that no run got", i+1, ev.Event, ev.ID)
			continue
		}
		if ev.Command != s.cmd {
			r.fail("audit event %d: %s %s names %q, the run submitted %q", i+1, ev.Event, ev.ID, ev.Command, s.cmd)
		}
		if steps[ev.ID] == nil {
			steps[ev.ID] = map[string]int{}
		}
		steps[ev.ID][ev.Event]++
	}
	bad := 0
	for id, s := range r.byID {
		got, exp := steps[id], loadSteps[s.kind]
		var wrong []string
		for name, mm := range exp {
			if c := got[name]; c < mm[0] || c > mm[1] {
				wrong = append(wrong, fmt.Sprintf("%s x%d", name, c))
			}
		}
		for name, c := range got {
			if _, ok := exp[name]; !ok {
				wrong = append(wrong, fmt.Sprintf("%s x%d", name, c))
			}
		}
		if len(wrong) > 0 {
			if bad++; bad <= 10 {
				slices.Sort(wrong)
				r.fail("audit: %s: unexpected steps %s", s, strings.Join(wrong, ", "))
			}
		}
	}
	if bad > 10 {
		r.fail("audit: %d more requests with unexpected steps", bad-10)
	}
}

func (r *loadRun) print() {
	out := r.o.Out
	answered := 0
	for _, s := range r.samples {
		if s.took > 0 {
			answered++
		}
	}
	if r.elapsed > 0 {
		fmt.Fprintf(out, "\n%d requests answered in %s: %.0f requests/s\n", answered, r.elapsed.Round(time.Millisecond),
			float64(answered)/r.elapsed.Seconds())
	}
	fmt.Fprintf(out, "%-15s %6s %9s %9s %9s %9s\n", "end to end", "n", "p50", "p90", "p99", "max")
	for k := range numLoadKinds {
		var ds []time.Duration
		for _, s := range r.samples {
			if s.kind == k && s.took > 0 {
				ds = append(ds, s.took)
			}
		}
		latencyRow(out, k.String(), ds)
	}
	decisions, polls, _ := r.person.Decisions()
	var aps []time.Duration
	tries := map[string]int{}
	for _, d := range decisions {
		if d.Exit == 0 {
			aps = append(aps, d.Took)
		}
		tries[d.ID]++
	}
	latencyRow(out, "sluice approve", aps)
	raced := 0
	for _, n := range tries {
		if n > 1 {
			raced += n
		}
	}
	fmt.Fprintf(out, "approvals: %d sluice approve runs (%d of them racing in pairs for one id), %d sluice ls polls\n",
		len(decisions), raced, polls)
	if r.rssNote != "" {
		fmt.Fprintf(out, "engine peak RSS: %s\n", r.rssNote)
	} else {
		fmt.Fprintf(out, "engine peak RSS (VmHWM): %.1f MiB\n", float64(r.engineRSS)/1024)
	}
	if r.engineCPU > 0 && len(r.samples) > 0 {
		fmt.Fprintf(out, "engine CPU: %s (%.2f ms per request)\n", r.engineCPU.Round(time.Millisecond),
			float64(r.engineCPU)/float64(time.Millisecond)/float64(len(r.samples)))
	}
	fmt.Fprintf(out, "audit log: %d events; %s\n", r.auditLines, r.verify)
	if len(r.violations) == 0 {
		n := r.count()
		fmt.Fprintf(out, "checked: %d results (%d allow, %d deny, %d ask), each once in out/ and the markers, none lost or duplicated\n",
			len(r.byID), n[loadAllow], n[loadDeny], n[loadAsk])
		return
	}
	fmt.Fprintf(out, "\nVIOLATIONS (%d):\n", len(r.violations))
	r.violations.Print(out, 30, "  ")
}

// latencyRow prints the percentiles of ds (nearest rank).
func latencyRow(out io.Writer, name string, ds []time.Duration) {
	if len(ds) == 0 {
		fmt.Fprintf(out, "%-15s %6d\n", name, 0)
		return
	}
	slices.Sort(ds)
	pct := func(p int) string {
		d := ds[max((len(ds)*p+99)/100, 1)-1]
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	}
	fmt.Fprintf(out, "%-15s %6d %9s %9s %9s %9s\n", name, len(ds), pct(50), pct(90), pct(99), pct(100))
}

// peakRSS is VmHWM of process pid in KiB, from /proc (Linux only).
func peakRSS(pid int) (int64, string) {
	if runtime.GOOS != "linux" {
		return 0, "skipped: no /proc/PID/status on " + runtime.GOOS
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, "unreadable: " + err.Error()
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb); err == nil {
				return kb, ""
			}
		}
	}
	return 0, "no VmHWM line in /proc/PID/status"
}
