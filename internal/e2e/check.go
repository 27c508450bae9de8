package e2e

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/queue"
)

// The checkers: functions over what a run left behind (a spool, a
// marker file, an audit log, what each writer was told, the hub's
// decisions), each returning what it found wrong. The crash, load and
// fleet harnesses call them after their load; check_test.go hands each
// a spool with a request run twice, a lost request and a broken chain.

// Failures is what a check found wrong, a line each; none is a pass.
type Failures []string

// Addf adds a failure.
func (f *Failures) Addf(format string, args ...any) { *f = append(*f, fmt.Sprintf(format, args...)) }

// Print writes the first most failures to out, each on a line of its own
// behind bullet, then how many more there are.
func (f Failures) Print(out io.Writer, most int, bullet string) {
	for i, v := range f {
		if i == most {
			fmt.Fprintf(out, "  ... and %d more\n", len(f)-most)
			break
		}
		fmt.Fprintln(out, bullet+v)
	}
}

// Spool is a spool as the checks read it, once its writers and engines
// are done.
type Spool struct {
	Dir     string
	Results map[string]*queue.Result // out/<id>.json, decoded
	New     []string                 // ids still pending in new/
	Cur     []string                 // ids in cur/ (claimed; answered or not)
	Bad     []string                 // files quarantined in bad/
	Litter  int                      // temporary files a killed process left in tmp/ or out/
	Odd     []string                 // what has no business there: a wake FIFO left, an unknown name, a result that does not decode
}

// ReadSpool reads the spool at dir.
func ReadSpool(dir string) (*Spool, error) {
	sp := &Spool{Dir: dir, Results: map[string]*queue.Result{}}
	for _, d := range []string{"new", "cur", "bad", "out", "tmp"} {
		entries, err := os.ReadDir(filepath.Join(dir, d))
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			name := e.Name()
			id, isJSON := strings.CutSuffix(name, ".json")
			switch {
			case d == "tmp" || strings.HasSuffix(name, ".tmp"):
				sp.Litter++
			case d == "bad":
				sp.Bad = append(sp.Bad, name)
			case d == "out" && strings.HasSuffix(name, ".log"):
			case d == "out" && strings.HasSuffix(name, ".wake"):
				sp.Odd = append(sp.Odd, "out/"+name+": a wake FIFO left behind after its writer finished")
			case !isJSON || !queue.ValidID(id):
				sp.Odd = append(sp.Odd, d+"/"+name+": an unexpected file in the spool")
			case d == "new":
				sp.New = append(sp.New, id)
			case d == "cur":
				sp.Cur = append(sp.Cur, id)
			case d == "out":
				data, err := os.ReadFile(filepath.Join(dir, d, name))
				if err != nil {
					return nil, err
				}
				res, err := queue.DecodeResult(data)
				if err != nil {
					sp.Odd = append(sp.Odd, fmt.Sprintf("out/%s: %v", name, err))
					continue
				}
				sp.Results[id] = res
			}
		}
	}
	return sp, nil
}

// ReadMarks reads a marker file: a line per run, the request id its last
// word (a run appends "$SLUICE_REQUEST_ID" as its first step). It
// returns how many lines name each id; a file not there names none.
func ReadMarks(path string) (map[string]int, error) {
	marks := map[string]int{}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return marks, nil
	}
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		marks[f[len(f)-1]]++
	}
	return marks, sc.Err()
}

// CheckOnce is "nothing lost, nothing run twice" over a spool, its
// marker file and its audit log. Every id any of them names has exactly
// one result and is not still pending; no id is marked or started twice,
// and none marked without a started line; each result tells what the
// log and the marker say happened: done ran once (and finished), denied
// never ran, interrupted ("not run") never started, stopped started.
// Nothing is left claimed without a result, quarantined, or odd.
func CheckOnce(sp *Spool, marks map[string]int, events []Event) Failures {
	var f Failures
	started, named := map[string]int{}, map[string][]string{}
	for _, ev := range events {
		if !queue.ValidID(ev.ID) {
			continue
		}
		named[ev.ID] = append(named[ev.ID], ev.Event)
		if ev.Event == string(queue.EventStarted) {
			started[ev.ID]++
		}
	}
	ids := map[string]bool{}
	for id := range sp.Results {
		ids[id] = true
	}
	for _, id := range append(slices.Clone(sp.New), sp.Cur...) {
		ids[id] = true
	}
	for id := range marks {
		ids[id] = true
	}
	for id := range named {
		ids[id] = true
	}
	for _, id := range sorted(ids) {
		n, s, evs := marks[id], started[id], named[id]
		if n > 1 || s > 1 {
			f.Addf("%s ran more than once: %d marker lines, %d started events; audit %v", id, n, s, evs)
		}
		if n > 0 && s == 0 {
			f.Addf("%s: its command ran (marker) but the audit log has no started event: %v", id, evs)
		}
		res := sp.Results[id]
		if res == nil {
			f.Addf("%s lost: no result (pending %v, claimed %v); marker %d; audit %v", id, slices.Contains(sp.New, id), slices.Contains(sp.Cur, id), n, evs)
			continue
		}
		if slices.Contains(sp.New, id) {
			f.Addf("%s: answered %s but still pending in new/", id, res.Status)
		}
		has := func(e queue.EventName) bool { return slices.Contains(evs, string(e)) }
		switch res.Status {
		case queue.StatusDone:
			if n != 1 {
				f.Addf("%s: done, but its id is in the marker %d times", id, n)
			}
			if !has(queue.EventFinished) {
				f.Addf("%s: done, but the audit log has no finished event: %v", id, evs)
			}
		case queue.StatusDenied:
			if n != 0 || s != 0 {
				f.Addf("%s: denied, but its command ran (%d marker lines, %d started events)", id, n, s)
			}
			if !has(queue.EventAutoDenied) && !has(queue.EventDenied) {
				f.Addf("%s: denied, but the audit log has no denial: %v", id, evs)
			}
		case queue.StatusInterrupted:
			if n != 0 || s != 0 {
				f.Addf("%s: told interrupted (not run), but it started (%d marker lines, %d started events)", id, n, s)
			}
			if !has(queue.EventInterrupted) {
				f.Addf("%s: interrupted, but the audit log has no interrupted event: %v", id, evs)
			}
		case queue.StatusStopped:
			if s == 0 {
				f.Addf("%s: told stopped (started), but the audit log has no started event: %v", id, evs)
			}
		}
	}
	for _, name := range sp.Bad {
		f.Addf("bad/%s: a request was quarantined", name)
	}
	for _, o := range sp.Odd {
		f.Addf("%s", o)
	}
	return f
}

// CheckChain is "the audit chain verifies": every line's hash, prev and
// seq, torn tails repaired by a later line allowed (audit.Verify, what
// 'sluice audit verify' runs).
func CheckChain(path string) (*audit.Report, Failures) {
	var f Failures
	rep, err := audit.VerifyFile(path)
	if err != nil {
		f.Addf("the audit chain of %s: %v", path, err)
	}
	return rep, f
}

// Told is what one writer ('sluice run --json') was told: the result it
// printed (nil for none), its exit code and its stderr.
type Told struct {
	Name   string // what it asked, for messages
	Result *queue.Result
	Exit   int
	Stderr string
}

// CheckTold is "every writer was told the truth, once": each writer
// printed a result, the spool's own for its id, and exited as that
// result says (ExitFor); no id was given to two writers; every result in
// the spool had a writer. told may hold writers that never ran (Exit -1
// and no result).
func CheckTold(sp *Spool, told []Told) Failures {
	var f Failures
	seen := map[string]bool{}
	for _, w := range told {
		if w.Result == nil {
			f.Addf("%s: sluice run exited %d without a result: %s", w.Name, w.Exit, strings.TrimSpace(w.Stderr))
			continue
		}
		id := w.Result.ID
		if seen[id] {
			f.Addf("%s: id %s was given to two writers", w.Name, id)
		}
		seen[id] = true
		res := sp.Results[id]
		if res == nil {
			f.Addf("%s: told %s for %s, which has no result in the spool", w.Name, w.Result.Status, id)
			continue
		}
		if w.Result.Status != res.Status {
			f.Addf("%s: %s: told %s, the spool says %s", w.Name, id, w.Result.Status, res.Status)
		}
		if want := ExitFor(res); w.Exit != want {
			f.Addf("%s: %s: sluice run exited %d for status %s, want %d; stderr %q", w.Name, id, w.Exit, res.Status, want, w.Stderr)
		}
		switch {
		case res.Status == queue.StatusInterrupted && !strings.Contains(w.Stderr, "not run: interrupted"):
			f.Addf("%s: %s: interrupted, but sluice run's stderr does not say so: %q", w.Name, id, w.Stderr)
		case res.Status == queue.StatusStopped && !strings.Contains(w.Stderr, "stopped"):
			f.Addf("%s: %s: stopped, but sluice run's stderr does not say so: %q", w.Name, id, w.Stderr)
		}
	}
	for _, id := range sorted(sp.Results) {
		if !seen[id] {
			f.Addf("%s: a result (%s) no writer received", id, sp.Results[id].Status)
		}
	}
	return f
}

// ExitFor is the exit status 'sluice run' gives for res.
func ExitFor(res *queue.Result) int {
	switch res.Status {
	case queue.StatusDone:
		if res.ExitCode != nil {
			return *res.ExitCode
		}
	case queue.StatusDenied:
		return 126
	case queue.StatusTimeout:
		return 124
	case queue.StatusStopped:
		return 123
	}
	return 125
}

// CheckHub is "every decision as the hub holds it", for one box: a
// request done was approved on the hub (or allowed by the box's policy:
// byPolicy), one the hub denied never ran, and every request the hub
// decided has its result on the box (a decision applied to nothing is a
// request lost). decisions maps a request id to the hub's decision
// ("approve", "deny"); marks is the box's marker.
func CheckHub(box string, sp *Spool, marks map[string]int, decisions map[string]string, byPolicy func(*queue.Result) bool) Failures {
	var f Failures
	for _, id := range sorted(sp.Results) {
		res, d := sp.Results[id], decisions[id]
		if res.Status == queue.StatusDone && d != "approve" && (byPolicy == nil || !byPolicy(res)) {
			f.Addf("%s/%s done without an approval on the hub (%q)", box, id, d)
		}
		if d == "deny" && (res.Status == queue.StatusDone || marks[id] > 0) {
			f.Addf("%s/%s denied on the hub, yet it ran (%s, marker %d)", box, id, res.Status, marks[id])
		}
		if d == "approve" && marks[id] > 1 {
			f.Addf("%s/%s approved once on the hub, run %d times", box, id, marks[id])
		}
	}
	for _, id := range sorted(decisions) {
		if sp.Results[id] == nil {
			f.Addf("%s/%s decided on the hub (%s), and lost on the box: no result", box, id, decisions[id])
		}
	}
	return f
}

func sorted[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
