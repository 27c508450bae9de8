package tui

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/sluice-dev/sluice/exec"
	"github.com/sluice-dev/sluice/queue"
	"github.com/sluice-dev/sluice/themes"
)

// pendingBurst is n pending events as the feed hands them over.
func pendingBurst(n int, at time.Time) []any {
	evs := make([]any, n)
	for i := range evs {
		evs[i] = requestPending{req: &queue.Request{ID: fmt.Sprintf("01JD%022d", i), Kind: queue.KindExec,
			Command: fmt.Sprintf("go test ./pkg/%d -run TestX", i), Cwd: "/home/alice/src/app", Agent: "claude-code"},
			verdict: queue.Verdict{Action: "ask", Category: "mutating", Risk: "medium",
				Parts: []queue.Part{{Command: "go test", Category: "mutating", Action: "ask", Rule: "default"}}}, at: at}
	}
	return evs
}

// BenchmarkFirstFrame10k: 10,000 requests arrive in one batch; the time
// until the frame that shows them, and the heap they take.
func BenchmarkFirstFrame10k(b *testing.B) {
	at := time.Now()
	evs := pendingBurst(10000, at)
	var heap uint64
	for b.Loop() {
		m := New(Options{Styles: themes.Default(true), Now: func() time.Time { return at }})
		m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		m.Update(engineMsg{events: evs})
		_ = m.render()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		heap = after.HeapAlloc - before.HeapAlloc
	}
	b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
}

// BenchmarkKeyToFrame10k: with 10,000 pending, one key press (move down)
// through Update and View; median and p99 per press.
func BenchmarkKeyToFrame10k(b *testing.B) {
	at := time.Now()
	m := New(Options{Styles: themes.Default(true), Now: func() time.Time { return at }})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	m.Update(engineMsg{events: pendingBurst(10000, at)})
	down := keyMsg("j")
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		m.Update(down)
		_ = m.View()
		lat = append(lat, time.Since(t0))
		if m.selected >= 9990 {
			m.selected = 0
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkRunUnderPane: a command printing ~270 MB of base64 (200 MB of
// random bytes) under the runner, with the console's pane fed from it vs
// with no pane (as under sluice serve), alternating in one run. The pane
// must never slow the command: wall/serve should stay near 1.
func BenchmarkRunUnderPane(b *testing.B) {
	if _, err := os.Stat("/usr/bin/base64"); err != nil {
		b.Skip("no base64")
	}
	size := os.Getenv("SLUICE_PANE_BYTES")
	if size == "" {
		size = "200000000"
	}
	dir := b.TempDir()
	r := &exec.Runner{BaseEnv: os.Environ(), Rows: 30, Cols: 100}
	run := func(i int, pane bool) time.Duration {
		req := &queue.Request{ID: fmt.Sprintf("pane%d%v", i, pane), Kind: queue.KindExec, Cwd: dir,
			Command: "head -c " + size + " /dev/urandom | base64"}
		opt := exec.Options{LogPath: filepath.Join(dir, req.ID+".log")}
		d := &deps{}
		var pc *pacer
		if pane {
			s := newLogScreen(nil, d)
			defer s.Close()
			pc = newPacer(s)
			opt.Output = pc.write
			if os.Getenv("SLUICE_PANE_NOOP") != "" {
				opt.Output = func([]byte) {} // the fan-out alone
			}
		}
		t0 := time.Now()
		res, _ := r.Run(context.Background(), req, opt)
		if pc != nil {
			pc.close()
		}
		if res.Status != queue.StatusDone {
			b.Fatalf("run: %s %s", res.Status, res.Reason)
		}
		os.Remove(opt.LogPath)
		return time.Since(t0)
	}
	var withPane, without time.Duration
	for i := 0; b.Loop(); i++ {
		without += run(i, false)
		withPane += run(i, true)
	}
	b.ReportMetric(withPane.Seconds()/float64(b.N), "pane-s")
	b.ReportMetric(without.Seconds()/float64(b.N), "serve-s")
	b.ReportMetric(withPane.Seconds()/without.Seconds(), "pane/serve")
}
