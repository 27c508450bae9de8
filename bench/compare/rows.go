//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// target is issue 31's bound on a row's p50 ratio: at most limit, or at
// least it.
type target struct {
	limit   float64
	atLeast bool
}

func (t *target) String() string {
	if t.atLeast {
		return fmt.Sprintf("≥%.1fx", t.limit)
	}
	return fmt.Sprintf("≤%.1fx", t.limit)
}

func (t *target) met(ratio float64) bool {
	if t.atLeast {
		return ratio >= t.limit
	}
	return ratio <= t.limit
}

// results are the rows with a target, over every filesystem.
type results struct {
	met, missed []string
}

func (r *results) add(row string, ok bool) {
	if ok {
		r.met = append(r.met, row)
	} else {
		r.missed = append(r.missed, row)
	}
}

func (r *results) summary(w io.Writer) {
	fmt.Fprintf(w, "\n# targets: %d of %d met", len(r.met), len(r.met)+len(r.missed))
	if len(r.missed) > 0 {
		fmt.Fprintf(w, "; MISSED: %s", strings.Join(r.missed, ", "))
	}
	fmt.Fprintln(w)
}

// figures are one variant's samples: latencies, or rates (requests per
// second) for throughput.
type figures struct {
	name  string
	lat   []time.Duration
	rates []float64
}

func (f *figures) p(q int) float64 {
	if f.rates != nil {
		return median(f.rates) // a few rounds: the median only
	}
	return ms(pct(f.lat, q))
}

func (f *figures) cell(q int) string {
	if f.rates != nil {
		if q != 50 {
			return "" // a few rounds: the median only
		}
		return fmt.Sprintf("%.0f/s", f.p(q))
	}
	return fmt.Sprintf("%.2f", f.p(q))
}

const rowFormat = "%-22s %8s %8s | %-14s %8s %8s %6s %6s %-13s | %-11s %8s %8s %6s %6s\n"

func printHeader() {
	fmt.Printf(rowFormat, "", "sluice", "", "floor", "", "", "ratio", "", "target", "bare floor", "", "", "ratio", "")
	fmt.Printf(rowFormat, "(ms, or requests/s)", "p50", "p90", "", "p50", "p90", "p50", "p90", "", "", "p50", "p90", "p50", "p90")
}

// row prints sluice's figures against the floor's, with the target on
// the p50 ratio, and against the bare floor where there is one.
func (b *bench) row(fs, name string, s, floor *figures, t *target, bare *figures) {
	ratio := func(q int, f *figures) float64 { return s.p(q) / f.p(q) }
	cell := func(q int, f *figures) string {
		if f.rates != nil && q != 50 {
			return ""
		}
		return fmt.Sprintf("%.2fx", ratio(q, f))
	}
	verdict := ""
	if t != nil {
		ok := t.met(ratio(50, floor))
		b.results.add(fs+" "+name, ok)
		verdict = t.String()
		if !ok {
			verdict += " MISSED"
		}
	}
	cols := []any{name, s.cell(50), s.cell(90), floor.name, floor.cell(50), floor.cell(90), cell(50, floor), cell(90, floor), verdict}
	if bare != nil {
		cols = append(cols, bare.name, bare.cell(50), bare.cell(90), cell(50, bare), cell(90, bare))
	} else {
		cols = append(cols, "", "", "", "", "")
	}
	fmt.Printf(rowFormat, cols...)
}

// rows measures and prints every row on this filesystem.
func (b *bench) rows(fs string) error {
	o := b.o
	printHeader()
	// The run rows: the bare floor (sh), the confined floor (bash,
	// confined) and sluice run, each with the same line.
	for _, r := range []struct {
		name, line string
		n          int
		pause      time.Duration
		t          *target
	}{
		{"run -- true", "true", o.n, 0, &target{limit: 1.2}},
		// A program: sluice starts it itself, as bash would exec it
		// (true is bash's builtin); the floors' shells exec it.
		{"run -- ls", "ls", o.n, 0, nil},
		// A line only a shell can run.
		{"run -- 'true; true'", "true; true", o.n, 0, nil},
		// As a person's agent asks: each command after a pause, when
		// the kernel's caches and the engines' threads have gone cold.
		{fmt.Sprintf("run, %v apart", o.pause), "true", o.paused, o.pause, nil},
	} {
		if r.n == 0 {
			continue
		}
		bare := b.client(b.floor, nil, "client", "-spool", b.floorRun, "-cmd", r.line)
		conf := b.client(b.floor, nil, "client", "-spool", b.floorConf, "-cmd", r.line)
		sl := b.client(b.sluice, nil, "run", "--", r.line)
		f, err := b.sample(r.n, r.pause, bare, conf, sl)
		if err != nil {
			return err
		}
		b.row(fs, r.name, &figures{lat: f[2]}, &figures{name: "confined", lat: f[1]}, r.t, &figures{name: "sh", lat: f[0]})
	}
	if err := b.churnRow(fs); err != nil {
		return err
	}

	// The hook: what Claude Code runs before each Bash command; allowed,
	// sluice answers with the command wrapped in sluice sandbox.
	hookF := b.client(b.floor, []string{`"permissionDecision":"allow"`}, "client", "-spool", b.floorDec, "-hook")
	hookS := b.client(b.sluice, []string{`"permissionDecision":"allow"`, "sandbox"}, "hook", "claude")
	hookF.stdin, hookS.stdin = b.hookInput, b.hookInput
	f, err := b.sample(o.n, 0, hookF, hookS)
	if err != nil {
		return err
	}
	b.row(fs, "hook claude", &figures{lat: f[1]}, &figures{name: "decide-only", lat: f[0]}, &target{limit: 1.3}, nil)

	// The wrapper the hook's answer runs each command in.
	shell := b.client("sh", nil, "-c", "true")
	wrapF := b.client(b.floor, nil, "wrap", "-root", b.project, "--", "sh", "-c", "true")
	wrapS := b.client(b.sluice, nil, "sandbox", "--profile", "read_only", "--", "sh", "-c", "true")
	if f, err = b.sample(o.n, 0, shell, wrapF, wrapS); err != nil {
		return err
	}
	b.row(fs, "sandbox -- sh -c true", &figures{lat: f[2]}, &figures{name: "wrapper", lat: f[1]}, &target{limit: 1.3},
		&figures{name: "sh -c true", lat: f[0]})

	// A verdict without a run, against the least a sluice process does.
	version := b.client(b.sluice, []string{"sluice"}, "version")
	check := b.client(b.sluice, []string{"ALLOW"}, "check", "--", "git", "status")
	if f, err = b.sample(o.n, 0, version, check); err != nil {
		return err
	}
	b.row(fs, "check -- git status", &figures{lat: f[1]}, &figures{name: "version", lat: f[0]}, &target{limit: 2}, nil)

	if err := b.throughput(fs); err != nil {
		return err
	}
	// sluice's own check that every decision it made is in its log.
	if out, err := b.command(b.sluice, "audit", "verify").CombinedOutput(); err != nil {
		return fmt.Errorf("sluice audit verify: %v\n%s", err, out)
	}
	return nil
}

// sample times n samples of each client, one process at a time,
// interleaved (the first client, the second, ..., the first, ...), each
// after pause, after -warmup untimed rounds.
func (b *bench) sample(n int, pause time.Duration, cs ...*client) ([][]time.Duration, error) {
	out := make([][]time.Duration, len(cs))
	for i := -b.o.warmup; i < n; i++ {
		for j, c := range cs {
			time.Sleep(pause)
			d, err := c.once()
			if err != nil {
				return nil, err
			}
			if i >= 0 {
				out[j] = append(out[j], d)
			}
		}
	}
	return out, nil
}

// churnRow times `sluice run -- true` while a churn process creates and
// removes a file in the spool's grandparent every 10 ms, against the same
// with the process stopped: pairs of a quiet sample (after an untimed run
// that finds the quiet state) and a churning one, each 12 ms after the
// state began (so the churn has touched the directory since the last
// run).
func (b *bench) churnRow(fs string) error {
	dir := filepath.Dir(b.dir) // the spool is b.dir/spool
	file := filepath.Join(dir, fmt.Sprintf(".sluice-compare-churn-%d", os.Getpid()))
	c := b.command(b.floor, "churn", "-file", file, "-every", "10ms")
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { c.Wait(); close(done) }()
	defer func() {
		_ = c.Process.Kill()
		<-done
		os.Remove(file)
	}()
	signal := func(s syscall.Signal) error {
		if err := c.Process.Signal(s); err != nil {
			return fmt.Errorf("churn: %v: %v\n%s", s, err, stderr.Bytes())
		}
		if s != syscall.SIGSTOP {
			return nil
		}
		// Stopped once /proc says so (the signal is sent, not yet
		// taken).
		for range 1000 {
			if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.Process.Pid)); err == nil {
				if i := bytes.LastIndexByte(data, ')'); i > 0 && i+2 < len(data) && data[i+2] == 'T' {
					return nil
				}
			}
			time.Sleep(100 * time.Microsecond)
		}
		return fmt.Errorf("churn: does not stop")
	}
	sl := b.client(b.sluice, nil, "run", "--", "true")
	var quiet, churn []time.Duration
	for i := -b.o.warmup; i < b.o.n; i++ {
		if err := signal(syscall.SIGSTOP); err != nil {
			return err
		}
		if _, err := sl.once(); err != nil {
			return err
		}
		time.Sleep(12 * time.Millisecond)
		dq, err := sl.once()
		if err != nil {
			return err
		}
		if err := signal(syscall.SIGCONT); err != nil {
			return err
		}
		time.Sleep(12 * time.Millisecond)
		dc, err := sl.once()
		if err != nil {
			return err
		}
		if i >= 0 {
			quiet, churn = append(quiet, dq), append(churn, dc)
		}
	}
	b.row(fs, "run -- true, churn", &figures{lat: churn}, &figures{name: "quiet", lat: quiet}, &target{limit: 1.1}, nil)
	return nil
}

// throughput runs rounds of -clients concurrent loops of -per requests,
// alternating the bare floor, the confined floor and sluice, and prints
// requests per second.
func (b *bench) throughput(fs string) error {
	bare := b.client(b.floor, nil, "client", "-spool", b.floorRun)
	conf := b.client(b.floor, nil, "client", "-spool", b.floorConf)
	sl := b.client(b.sluice, nil, "run", "--", "true")
	rates := make([][]float64, 3)
	for range b.o.rounds {
		for i, c := range []*client{bare, conf, sl} {
			r, err := b.burst(c)
			if err != nil {
				return err
			}
			rates[i] = append(rates[i], r)
		}
	}
	b.row(fs, fmt.Sprintf("throughput, %d clients", b.o.clients), &figures{rates: rates[2]},
		&figures{name: "confined", rates: rates[1]}, &target{limit: 0.8, atLeast: true}, &figures{name: "sh", rates: rates[0]})
	each := make([]string, b.o.rounds)
	for i := range each {
		each[i] = fmt.Sprintf("%.2f", rates[2][i]/rates[1][i])
	}
	fmt.Printf("%-22s medians of %d rounds of %d clients x %d requests; each round's sluice/confined: %s\n",
		"", b.o.rounds, b.o.clients, b.o.per, strings.Join(each, ", "))
	return nil
}

func (b *bench) burst(c *client) (float64, error) {
	var wg sync.WaitGroup
	errs := make(chan error, b.o.clients)
	start := time.Now()
	for range b.o.clients {
		wg.Go(func() {
			for range b.o.per {
				if _, err := c.once(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return float64(b.o.clients*b.o.per) / d.Seconds(), nil
}
