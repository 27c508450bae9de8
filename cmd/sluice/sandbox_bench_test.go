//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/exec/sandbox"
)

// BenchmarkRunServeConfined is BenchmarkRunServe with and without
// confinement (issue 12): two `sluice serve` processes, one with
// sandbox = "off" in its config.toml and one with the default
// (sandbox = "prefer": Landlock + seccomp where the kernel has them), each
// answering `sluice run -- true`, in one loop (which of the two goes first
// alternates) with `sh -c true` as the floor. Reported: p50 and p99 of
// each, and the p50 ratio confined/off (target ≤ 1.15x). It checks in the
// audit logs that the confined serve did confine and the other did not.
func BenchmarkRunServeConfined(b *testing.B) {
	if _, err := sandbox.Available(); err != nil {
		b.Skip("no confinement on this machine:", err)
	}
	// The config files are hidden from confined runs like the spool: on
	// tmpfs next to it (as ~/.config/sluice would be, not in /tmp, which
	// would make every run carve /tmp around them).
	cfgDir, err := os.MkdirTemp("/dev/shm", "sluice-bench-config-")
	if err != nil {
		b.Skip(err)
	}
	b.Cleanup(func() { os.RemoveAll(cfgDir) }) // after the serves stop
	offCfg, onCfg := filepath.Join(cfgDir, "off.toml"), filepath.Join(cfgDir, "prefer.toml")
	if err = os.WriteFile(offCfg, []byte("sandbox = \"off\"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(onCfg, []byte("sandbox = \"prefer\"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	// startBenchServe gives serve, and returns for the client, this
	// process's environment.
	b.Setenv("SLUICE_CONFIG", offCfg)
	offBin, offEnv, offDir := startBenchServe(b)
	b.Setenv("SLUICE_CONFIG", onCfg)
	onBin, onEnv, onDir := startBenchServe(b)
	timeProcess(b, offEnv, offBin, "run", "--", "true") // both engines are up once these return
	timeProcess(b, onEnv, onBin, "run", "--", "true")

	var off, on, direct []time.Duration
	i := 0
	for b.Loop() {
		direct = append(direct, timeProcess(b, offEnv, "/bin/sh", "-c", "true"))
		if i%2 == 0 {
			off = append(off, timeProcess(b, offEnv, offBin, "run", "--", "true"))
			on = append(on, timeProcess(b, onEnv, onBin, "run", "--", "true"))
		} else {
			on = append(on, timeProcess(b, onEnv, onBin, "run", "--", "true"))
			off = append(off, timeProcess(b, offEnv, offBin, "run", "--", "true"))
		}
		i++
	}
	b.StopTimer()
	if got := lastSandbox(b, filepath.Join(offDir, "audit.jsonl")); got != `none: sandbox = off` {
		b.Fatalf("the serve with sandbox = \"off\" ran `true` with sandbox %q", got)
	}
	if got := lastSandbox(b, filepath.Join(onDir, "audit.jsonl")); got != "read_only" {
		b.Fatalf("the serve with sandbox = \"prefer\" ran `true` with sandbox %q, want read_only", got)
	}
	b.ReportMetric(ms(percentile(off, 50)), "off-p50-ms")
	b.ReportMetric(ms(percentile(off, 99)), "off-p99-ms")
	b.ReportMetric(ms(percentile(on, 50)), "confined-p50-ms")
	b.ReportMetric(ms(percentile(on, 99)), "confined-p99-ms")
	b.ReportMetric(ms(percentile(direct, 50)), "sh-p50-ms")
	b.ReportMetric(float64(percentile(on, 50))/float64(percentile(off, 50)), "confined/off-p50")
}

// lastSandbox is the sandbox field of the last audit line that has one.
func lastSandbox(b *testing.B, path string) string {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	last := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct {
			Sandbox string `json:"sandbox"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Sandbox != "" {
			last = ev.Sandbox
		}
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return last
}

// BenchmarkSandboxWrapper times what a hook's wrapped command costs the
// agent: 'sluice sandbox --profile read_only -- true' and '--profile
// mutating -- /bin/bash -c true' (the shape a hook gives an allowed line,
// with the guard of what later runs unconfined), run in this repository's
// directory (a real project: its secret files looked for, its git
// directory guarded), interleaved with 'sh -c true', the floor. With
// SLUICE_BENCH_BEFORE naming another sluice binary (an earlier commit's),
// that one runs the same two in the same loop, for a before/after ratio.
func BenchmarkSandboxWrapper(b *testing.B) {
	if _, err := sandbox.Available(); err != nil {
		b.Skip("no confinement on this machine:", err)
	}
	bin, env, _ := startBenchServe(b)
	before := os.Getenv("SLUICE_BENCH_BEFORE")
	dir, err := filepath.Abs("../..")
	if err != nil {
		b.Fatal(err)
	}
	type variant struct {
		name string
		bin  string
		args []string
		ds   []time.Duration
	}
	ro := []string{"sandbox", "--profile", "read_only", "--", "true"}
	mut := []string{"sandbox", "--profile", "mutating", "--", "/bin/bash", "-c", "true"}
	vs := []*variant{{name: "sh", bin: "/bin/sh", args: []string{"-c", "true"}},
		{name: "read_only", bin: bin, args: ro}, {name: "mutating", bin: bin, args: mut}}
	if before != "" {
		vs = append(vs, &variant{name: "before-read_only", bin: before, args: ro}, &variant{name: "before-mutating", bin: before, args: mut})
	}
	run := func(v *variant) time.Duration {
		cmd := exec.Command(v.bin, v.args...)
		cmd.Env, cmd.Dir = env, dir
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s %v: %v\n%s", v.bin, v.args, err, out)
		}
		return time.Since(start)
	}
	for _, v := range vs {
		run(v) // warm: the project's caches made once
	}
	i := 0
	for b.Loop() {
		for k := range vs {
			v := vs[(i+k)%len(vs)]
			v.ds = append(v.ds, run(v))
		}
		i++
	}
	for _, v := range vs {
		b.ReportMetric(ms(percentile(v.ds, 50)), v.name+"-p50-ms")
	}
	if before != "" {
		b.ReportMetric(float64(percentile(vs[1].ds, 50))/float64(percentile(vs[3].ds, 50)), "read_only/before-p50")
		b.ReportMetric(float64(percentile(vs[2].ds, 50))/float64(percentile(vs[4].ds, 50)), "mutating/before-p50")
	}
}
