// Command benchtable runs the benchmarks of issues 2-7 and 12 (and the
// end-to-end ones) and writes their figures as a table into BENCHMARKS.md,
// between the "make bench" markers: figure, target, median and p99 where the
// benchmark measures them, the ratio its target is about (to the floor or
// to the direct run measured in the same run), and a machine line. Run it
// from the repository root: go run ./scripts/benchtable [-count N] [-quick].
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// row is one benchmark run and how to show it.
type row struct {
	pkg, bench, benchtime string
	figure, target        string
	median, p99, ratio    string // metric names ("" when the benchmark has none)
	extra                 []string
	heavy                 bool // skipped by -quick
}

var rows = []row{
	{pkg: "./queue", bench: "RoundTrip$/tmpfs", benchtime: "2000x", figure: "spool round trip in process on tmpfs (submit → claim → result → wake)", target: "≤ 2x the 0.15 ms floor", median: "p50-ms", p99: "p99-ms"},
	{pkg: "./queue", bench: "IngestBurst/tmpfs", benchtime: "1x", figure: "10,000 requests arriving at once on tmpfs: all seen by the watcher", target: "peak RSS bounded", median: "ms/10k", extra: []string{"peakRSS-MB"}, heavy: true},
	{pkg: "./policy", bench: "Check$", benchtime: "20000x", figure: "verdict for one command line, 200 user rules", target: "≤ 20 µs p50", median: "p50-µs", p99: "p99-µs"},
	{pkg: "./audit", bench: "Append$/disk", benchtime: "1000x", figure: "audit append with fsync, on disk (ratio: to the floor's 79 µs fsync)", target: "≤ 2x the floor", extra: []string{"appends/s"}, ratio: "x-fsync-floor"},
	{pkg: "./audit", bench: "RawFsync/disk", benchtime: "1000x", figure: "a bare write+fsync on the same disk, the baseline of the row above", target: "", extra: []string{"writes/s"}},
	{pkg: "./audit", bench: "Verify", benchtime: "1x", figure: "verify a 1M-line audit log", target: "", median: "s/1M-lines", heavy: true},
	{pkg: "./exec", bench: "^BenchmarkRunTrue$", benchtime: "500x", figure: "Runner.Run of `true` under a pty vs `sh -c true` via os/exec", target: "", median: "run-p50-ms", p99: "run-p99-ms", ratio: "p50-ratio"},
	{pkg: "./exec", bench: "^BenchmarkThroughput$", benchtime: "1x", figure: "`head -c 200000000 /dev/urandom | base64` under Run vs a bare raw pty", target: "≥ 90 %", median: "run-MB/s", ratio: "ratio-vs-raw", extra: []string{"peak-rss-MiB"}, heavy: true},
	{pkg: "./exec", bench: "PipeThroughput", benchtime: "2x", figure: "~500 MB of base64 under Run without a terminal (Pipe) vs the same into a plain pipe, interleaved", target: "≥ 0.8x", median: "pipe-run-MB/s", ratio: "ratio-vs-pipe", extra: []string{"bare-pipe-MB/s"}, heavy: true},
	{pkg: "./exec", bench: "ConfinedRunTrue/run", benchtime: "300x", figure: "Runner.Run of `true` confined (read_only) vs the same Runner without Confine, interleaved (ratio: read_only; mutating in other)", target: "≤ 1.15x", median: "read_only-p50-ms", p99: "read_only-p99-ms", ratio: "read_only/unconfined-p50", extra: []string{"unconfined-p50-ms", "mutating/unconfined-p50"}},
	{pkg: "./exec", bench: "ConfinedRunTrue/parts", benchtime: "300x", figure: "where a confined run's extra goes: the confine step (private temporary directory + sandbox.Prepare with the base layer reused), and its parts", target: "", median: "confine-p50-ms", extra: []string{"prepare-p50-ms", "prepare-cold-p50-ms", "base-grants", "tmpdir-p50-ms", "cgroup-pooled-p50-ms", "caps-p50-µs", "restrict-base-p50-µs", "restrict-run-p50-µs", "seccomp-p50-µs"}},
	{pkg: "./exec", bench: "ConfinedThroughput", benchtime: "1x", figure: "`head -c 375000000 /dev/urandom | base64` (~500 MB) under Run confined (read_only) vs unconfined, 4 alternations per op, log on tmpfs", target: "≥ 0.95x", median: "confined-MB/s", ratio: "confined/unconfined", extra: []string{"unconfined-MB/s"}, heavy: true},
	{pkg: "./exec", bench: "ProxiedDownload", benchtime: "10x", figure: "issue 32: `curl -o /dev/null` of 100 MB from a local server in a networked run (own network namespace, through its proxy) vs the same run unconfined, interleaved, curl's own download speed (ratio: netns/unconfined); relay: unconfined through a bare splicing relay, the floor of any proxy", target: "≥ 0.9x", median: "netns-MB/s", ratio: "netns/unconfined", extra: []string{"unconfined-MB/s", "relay/unconfined", "netns/relay", "port/unconfined", "netns-p50-ms", "unconfined-p50-ms"}, heavy: true},
	{pkg: "./cmd/sluice", bench: "RunProcess/tmpfs", benchtime: "300x", figure: "`sluice run` process against a fake actor, vs a Go hello-world", target: "", median: "run-p50-ms", p99: "run-p99-ms", ratio: "run/hello-p50"},
	{pkg: "./cmd/sluice", bench: "^BenchmarkRunServe$", benchtime: "300x", figure: "`sluice run -- true` through `sluice serve`, vs `sh -c true`", target: "≤ 1.15x the floor (3.5 ms when it was 3.05 ms)", median: "run-p50-ms", p99: "run-p99-ms", ratio: "run/sh-p50"},
	{pkg: "./cmd/sluice", bench: "RunServeConfined", benchtime: "300x", figure: "`sluice run -- true` through `sluice serve` confined (default) vs `sandbox = \"off\"`, interleaved", target: "≤ 1.15x", median: "confined-p50-ms", p99: "confined-p99-ms", ratio: "confined/off-p50", extra: []string{"off-p50-ms"}},
	{pkg: "./cmd/sluice", bench: "HookClaude", benchtime: "300x", figure: "`sluice hook claude` for an auto-allowed `git status` through serve", target: "≤ 5 ms p50", median: "hook-p50-ms", p99: "hook-p99-ms"},
	{pkg: "./checkpoint", bench: "Take10k", benchtime: "30x", figure: "checkpoint of a 10,000-file project with 3 files changed since the last one (a mutating run takes two)", target: "≤ 50 ms p50 after the first", median: "p50-ms", p99: "p99-ms", extra: []string{"first-ms"}},
	{pkg: "./tui", bench: "FirstFrame10k", benchtime: "20x", figure: "console: 10,000 pending arrive, to the frame showing them", target: "≤ 100 ms", median: "ns/op", extra: []string{"heap-MiB"}},
	{pkg: "./tui", bench: "KeyToFrame10k", benchtime: "500x", figure: "console: key press to rendered frame, 10,000 pending", target: "≤ 16 ms p50", median: "p50-ms", p99: "p99-ms"},
	{pkg: "./tui", bench: "RunUnderPane", benchtime: "1x", figure: "200 MB of base64 with the console's pane fed, vs without (serve)", target: "≤ 1.1x", median: "pane-s", ratio: "pane/serve", heavy: true},
	{pkg: "./tui/screen", bench: "Render/80x24", benchtime: "2000x", figure: "output pane: render an 80x24 screen", target: "", median: "ns/op"},
}

const (
	begin = "<!-- make bench: begin -->"
	end   = "<!-- make bench: end -->"
)

func main() {
	count := flag.Int("count", 3, "runs of each benchmark; the table shows medians over them")
	quick := flag.Bool("quick", false, "skip the heavy benchmarks (1 GiB and 200 MB outputs, 1M-line logs)")
	out := flag.String("o", "BENCHMARKS.md", "the file to write the table into")
	flag.Parse()

	var table strings.Builder
	fmt.Fprintf(&table, "%s\n\nGenerated by `make bench` on %s: %s.\n\n", begin, time.Now().UTC().Format("2006-01-02 15:04 MST"), machine())
	table.WriteString("| figure | target | median | p99 | ratio | other | command |\n|---|---|---|---|---|---|---|\n")
	failed := false
	for _, r := range rows {
		if *quick && r.heavy {
			continue
		}
		args := []string{"test", r.pkg, "-run", "^$", "-bench", r.bench, "-benchtime", r.benchtime, "-count", strconv.Itoa(*count), "-timeout", "30m"}
		cmdline := "go " + strings.Join(quoteArgs(args), " ")
		fmt.Fprintf(os.Stderr, "benchtable: %s\n", cmdline)
		res, err := runBench(args)
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchtable: %s: %v\n", r.bench, err)
			failed = true
			fmt.Fprintf(&table, "| %s | %s | failed | | | | `%s` |\n", r.figure, r.target, cmdline)
			continue
		}
		var other []string
		for _, m := range r.extra {
			other = append(other, fmt.Sprintf("%s %s", fmtNum(res.median(m)), m))
		}
		fmt.Fprintf(&table, "| %s | %s | %s | %s | %s | %s | `%s` |\n", cell(r.figure), r.target,
			res.show(r.median), res.show(r.p99), res.show(r.ratio), strings.Join(other, ", "), cmdline)
	}
	table.WriteString("\n" + end)
	if err := splice(*out, table.String()); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	if failed {
		os.Exit(1)
	}
}

// results maps a metric to its values over the runs.
type results map[string][]float64

func (r results) median(m string) float64 {
	v := append([]float64(nil), r[m]...)
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	return v[len(v)/2]
}

func (r results) show(m string) string {
	if m == "" || len(r[m]) == 0 {
		return ""
	}
	if m == "ns/op" {
		return fmtDur(r.median(m))
	}
	return fmtNum(r.median(m)) + " " + m
}

// runBench runs go test and collects every metric of the benchmark lines.
func runBench(args []string) (results, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("go", args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%v\n%s%s", err, tail(stdout.String()), tail(stderr.String()))
	}
	res := results{}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		for i := 2; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				res[f[i+1]] = append(res[f[i+1]], v)
			}
		}
	}
	if len(res) == 0 {
		return nil, fmt.Errorf("no benchmark lines in the output:\n%s", tail(stdout.String()))
	}
	return res, nil
}

// splice replaces the table between the markers (or appends it).
func splice(path, table string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(data)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i >= 0 && j > i {
		s = s[:i] + table + s[j+len(end):]
	} else {
		s = strings.TrimRight(s, "\n") + "\n\n## Latest `make bench`\n\n" + table + "\n"
	}
	return os.WriteFile(path, []byte(s), 0o644)
}

func machine() string {
	cpu := runtime.GOARCH
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if name, ok := strings.CutPrefix(l, "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":"))
				break
			}
		}
	}
	v, _ := exec.Command("go", "env", "GOVERSION").Output()
	return fmt.Sprintf("%d CPUs, %s, %s/%s, %s", runtime.NumCPU(), cpu, runtime.GOOS, runtime.GOARCH, strings.TrimSpace(string(v)))
}

func fmtNum(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func fmtDur(ns float64) string { return time.Duration(ns).Round(time.Microsecond).String() }

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, "^$ *") {
			a = "'" + a + "'"
		}
		out[i] = a
	}
	return out
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, "\n") + "\n"
}

// cell makes text safe in a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
