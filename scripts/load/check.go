package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// report gathers what the load did and what broke.
type report struct {
	o         opts
	e         *env
	elapsed   time.Duration
	samples   []sample
	approvals []approval
	polls     int

	byID       map[string]*sample // each result's id, once
	engineRSS  int64              // KiB
	rssNote    string
	engineCPU  time.Duration
	auditLines int
	verifyOut  string
	violations []string
}

func (r *report) fail(format string, args ...any) {
	r.violations = append(r.violations, fmt.Sprintf(format, args...))
}

// want is how a request of each kind must end.
var want = [numKinds]struct{ status, decidedBy string }{
	kindAllow: {"done", "policy"},
	kindDeny:  {"denied", "policy"},
	kindAsk:   {"done", "human"},
}

func (s *sample) String() string {
	id := "(no result)"
	if s.res != nil {
		id = s.res.ID
	}
	return fmt.Sprintf("agent %d request %d (%s, %s, %q)", s.agent, s.n, s.kind, id, s.cmd)
}

// checkRuns: every run exited as its kind says, with a result naming an
// id no other run got.
func (r *report) checkRuns() {
	r.byID = map[string]*sample{}
	for i := range r.samples {
		s := &r.samples[i]
		if s.took == 0 {
			continue // never run: the timeout is reported already
		}
		if s.exit != wantExit[s.kind] {
			r.fail("%s: sluice run exited %d, want %d: %s", s, s.exit, wantExit[s.kind], s.stderr)
		}
		if s.res == nil {
			r.fail("%s: sluice run --json printed no result", s)
			continue
		}
		w := want[s.kind]
		if s.res.Status != w.status || s.res.DecidedBy != w.decidedBy {
			r.fail("%s: result status %q decided by %q, want %q by %q", s, s.res.Status, s.res.DecidedBy, w.status, w.decidedBy)
		}
		if w.status == "done" && (s.res.ExitCode == nil || *s.res.ExitCode != 0) {
			r.fail("%s: result has exit code %v, want 0", s, s.res.ExitCode)
		}
		if prev, dup := r.byID[s.res.ID]; dup {
			r.fail("duplicate id %s: %s and %s", s.res.ID, prev, s)
			continue
		}
		r.byID[s.res.ID] = s
	}
}

// checkApprovals: each ask request was approved by exactly one 'sluice
// approve'; the loser of a race for one id exited 1, nothing else failed.
func (r *report) checkApprovals() {
	wins := map[string]int{}
	for _, ap := range r.approvals {
		s := r.byID[ap.id]
		switch {
		case s == nil:
			r.fail("sluice approve %s: an id no run got (exit %d): %s", ap.id, ap.exit, ap.output)
			continue
		case s.kind != kindAsk:
			r.fail("sluice approve %s: approved a %s request (exit %d)", ap.id, s.kind, ap.exit)
		}
		switch {
		case ap.exit == 0:
			wins[ap.id]++
		case !ap.dup || ap.exit != 1:
			r.fail("sluice approve %s exited %d (raced: %v): %s", ap.id, ap.exit, ap.dup, ap.output)
		}
	}
	for id, s := range r.byID {
		if s.kind == kindAsk && wins[id] != 1 {
			r.fail("%s: approved %d times, want once", s, wins[id])
		}
	}
}

// checkSpool: nothing pending or running, exactly one result per request
// in out/, agreeing with what the run printed, and nothing quarantined.
func (r *report) checkSpool(ctx context.Context) {
	if ctx.Err() != nil {
		ctx = context.Background()
	}
	out, err := r.e.command(ctx, "ls", "--json").Output()
	var list []lsEntry
	if err == nil {
		err = json.Unmarshal(out, &list)
	}
	switch {
	case err != nil:
		r.fail("sluice ls --json at the end: %v", err)
	case len(list) > 0:
		r.fail("%d requests still pending or running at the end (first %s, %s)", len(list), list[0].ID, list[0].State)
	}
	results := 0
	ents, err := os.ReadDir(filepath.Join(r.e.spool, "out"))
	if err != nil {
		r.fail("spool out/: %v", err)
	}
	for _, de := range ents {
		id, ok := strings.CutSuffix(de.Name(), ".json")
		if !ok {
			continue
		}
		results++
		s := r.byID[id]
		if s == nil {
			r.fail("out/%s: a result for an id no run got", de.Name())
			continue
		}
		b, err := os.ReadFile(filepath.Join(r.e.spool, "out", de.Name()))
		var res result
		if err == nil {
			err = json.Unmarshal(b, &res)
		}
		if err != nil {
			r.fail("out/%s: %v", de.Name(), err)
			continue
		}
		if res.ID != id || res.Status != s.res.Status || res.DecidedBy != s.res.DecidedBy {
			r.fail("out/%s says %s %s by %s; the run printed %s %s by %s", de.Name(), res.ID, res.Status, res.DecidedBy,
				s.res.ID, s.res.Status, s.res.DecidedBy)
		}
	}
	if results != len(r.byID) || results != len(r.samples) {
		r.fail("out/ holds %d results for %d requests (%d runs printed a result)", results, len(r.samples), len(r.byID))
	}
	for _, d := range []string{"new", "bad"} {
		if ents, err := os.ReadDir(filepath.Join(r.e.spool, d)); err == nil && len(ents) > 0 {
			r.fail("spool %s/ holds %d files at the end (first %s)", d, len(ents), ents[0].Name())
		}
	}
}

// checkMarkers: each command that ran left its id exactly once, under the
// tag of the request that carried it; commands that must not run left none.
func (r *report) checkMarkers() {
	for _, m := range []struct {
		file string
		k    kind
	}{{allowMarker, kindAllow}, {askMarker, kindAsk}} {
		seen := map[string]int{}
		f, err := os.Open(filepath.Join(r.e.project, m.file))
		if err != nil {
			r.fail("%s: %v", m.file, err)
			continue
		}
		sc := bufio.NewScanner(f)
		line := 0
		for sc.Scan() {
			line++
			tag, id, ok := strings.Cut(sc.Text(), " ")
			s := r.byID[id]
			switch {
			case !ok:
				r.fail("%s:%d: %q is not TAG ID", m.file, line, sc.Text())
			case s == nil:
				r.fail("%s:%d: id %s that no run got", m.file, line, id)
			case s.kind != m.k || s.tag != tag:
				r.fail("%s:%d: %s ran under id %s, which is %s", m.file, line, tag, id, s)
			default:
				seen[id]++
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			r.fail("%s: %v", m.file, err)
		}
		for id, s := range r.byID {
			if s.kind == m.k && seen[id] != 1 {
				r.fail("%s: ran %d times, want once", s, seen[id])
			}
		}
	}
}

// checkServeLog: the engine logged only what the load asks of it, one
// line for each request it acted on.
func (r *report) checkServeLog(lines []string) {
	var ran, denied int
	odd := 0
	for _, l := range lines {
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
	if ran != n[kindAllow] || denied != n[kindDeny] {
		r.fail("sluice serve ran %d and denied %d requests, want %d and %d", ran, denied, n[kindAllow], n[kindDeny])
	}
}

func (r *report) count() (n [numKinds]int) {
	for _, s := range r.byID {
		n[s.kind]++
	}
	return n
}

// auditEvent is the part of an audit line the checks read.
type auditEvent struct {
	ID       string `json:"id"`
	Event    string `json:"event"`
	Command  string `json:"command"`
	Status   string `json:"status"`
	ExitCode *int   `json:"exit_code"`
}

// expected audit steps per kind: how many of each event an id must have
// (queued for an ask request may be missing: the approver can claim it
// before the engine has seen it).
var steps = [numKinds]map[string][2]int{ // event -> {min, max}
	kindAllow: {"queued": {1, 1}, "auto_allowed": {1, 1}, "started": {1, 1}, "finished": {1, 1}},
	kindDeny:  {"queued": {1, 1}, "auto_denied": {1, 1}},
	kindAsk:   {"queued": {0, 1}, "approved": {1, 1}, "started": {1, 1}, "finished": {1, 1}},
}

// checkAudit: the log verifies, and holds exactly the expected steps for
// each request, naming the command that was submitted.
func (r *report) checkAudit() {
	out, err := r.e.command(context.Background(), "audit", "verify").CombinedOutput()
	r.verifyOut = strings.TrimSpace(string(out))
	if err != nil {
		r.fail("sluice audit verify: %v: %s", err, r.verifyOut)
	}
	b, err := os.ReadFile(r.e.audit)
	if err != nil {
		r.fail("audit log: %v", err)
		return
	}
	events := map[string]map[string]int{}
	for i, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		r.auditLines++
		var ev auditEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			r.fail("audit line %d: %v", i+1, err)
			continue
		}
		s := r.byID[ev.ID]
		if s == nil {
			r.fail("audit line %d: %s for id %q that no run got", i+1, ev.Event, ev.ID)
			continue
		}
		if ev.Command != s.cmd {
			r.fail("audit line %d: %s %s names %q, the run submitted %q", i+1, ev.Event, ev.ID, ev.Command, s.cmd)
		}
		if ev.Event == "finished" && (ev.Status != "done" || ev.ExitCode == nil || *ev.ExitCode != 0) {
			r.fail("audit line %d: %s finished %s exit %v", i+1, ev.ID, ev.Status, ev.ExitCode)
		}
		if events[ev.ID] == nil {
			events[ev.ID] = map[string]int{}
		}
		events[ev.ID][ev.Event]++
	}
	bad := 0
	for id, s := range r.byID {
		got, exp := events[id], steps[s.kind]
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

func (r *report) print() {
	total := len(r.samples)
	answered := 0
	for _, s := range r.samples {
		if s.took > 0 {
			answered++
		}
	}
	fmt.Printf("\n%d requests answered in %s: %.0f requests/s\n", answered, r.elapsed.Round(time.Millisecond),
		float64(answered)/r.elapsed.Seconds())
	fmt.Printf("%-15s %6s %9s %9s %9s %9s\n", "end to end", "n", "p50", "p90", "p99", "max")
	for k := range numKinds {
		var ds []time.Duration
		for _, s := range r.samples {
			if s.kind == k && s.took > 0 {
				ds = append(ds, s.took)
			}
		}
		r.row(k.String(), ds)
	}
	var aps []time.Duration
	dups := 0
	for _, ap := range r.approvals {
		if ap.exit == 0 {
			aps = append(aps, ap.took)
		}
		if ap.dup {
			dups++
		}
	}
	r.row("sluice approve", aps)
	fmt.Printf("approvals: %d sluice approve runs (%d of them racing in pairs for one id), %d sluice ls polls\n",
		len(r.approvals), dups, r.polls)
	if r.rssNote != "" {
		fmt.Printf("engine peak RSS: %s\n", r.rssNote)
	} else {
		fmt.Printf("engine peak RSS (VmHWM): %.1f MiB\n", float64(r.engineRSS)/1024)
	}
	if r.engineCPU > 0 && total > 0 {
		fmt.Printf("engine CPU: %s (%.2f ms per request)\n", r.engineCPU.Round(time.Millisecond),
			float64(r.engineCPU)/float64(time.Millisecond)/float64(total))
	}
	fmt.Printf("audit log: %d lines; %s\n", r.auditLines, r.verifyOut)
	if len(r.violations) == 0 {
		n := r.count()
		fmt.Printf("checked: %d results (%d allow, %d deny, %d ask), each once in out/ and the markers, none lost or duplicated\n",
			len(r.byID), n[kindAllow], n[kindDeny], n[kindAsk])
		return
	}
	fmt.Printf("\nVIOLATIONS (%d):\n", len(r.violations))
	for i, v := range r.violations {
		if i == 30 {
			fmt.Printf("  ... and %d more\n", len(r.violations)-30)
			break
		}
		fmt.Printf("  %s\n", v)
	}
}

func (r *report) row(name string, ds []time.Duration) {
	if len(ds) == 0 {
		fmt.Printf("%-15s %6d\n", name, 0)
		return
	}
	slices.Sort(ds)
	fmt.Printf("%-15s %6d %9s %9s %9s %9s\n", name, len(ds), msStr(pct(ds, 50)), msStr(pct(ds, 90)), msStr(pct(ds, 99)),
		msStr(ds[len(ds)-1]))
}

// pct is the p-th percentile of sorted ds (nearest rank).
func pct(ds []time.Duration, p int) time.Duration {
	i := (len(ds)*p + 99) / 100
	return ds[max(i, 1)-1]
}

func msStr(d time.Duration) string {
	return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
}
