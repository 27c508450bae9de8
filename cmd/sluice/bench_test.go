package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/internal/syncbuf"
	"github.com/sluice-dev/sluice/queue"
)

// BenchmarkRunProcess is the end-to-end cost an agent pays per command: a
// new `sluice run -- true` process queues its request, a fake actor in this
// process answers it at once (done, exit 0), and sluice run exits. The
// binary is the real one, built with go build. Each iteration also starts a
// Go hello-world process, the floor for any Go CLI, so that the ratio
// run/hello comes from one run on one (noisy) machine.
//
// Reported: run-p50-ms, run-p99-ms, hello-p50-ms and run/hello-p50, for a
// spool on tmpfs (where the default $XDG_RUNTIME_DIR/sluice lives) and on
// disk (the ~/.local/state fallback).
func BenchmarkRunProcess(b *testing.B) {
	b.Run("tmpfs", func(b *testing.B) {
		fi, err := os.Stat("/dev/shm")
		if err != nil || !fi.IsDir() {
			b.Skip("no /dev/shm")
		}
		dir, err := os.MkdirTemp("/dev/shm", "sluice-bench-")
		if err != nil {
			b.Skip(err)
		}
		defer os.RemoveAll(dir)
		benchRunProcess(b, dir)
	})
	b.Run("disk", func(b *testing.B) { benchRunProcess(b, b.TempDir()) })
}

func benchRunProcess(b *testing.B, spoolParent string) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		b.Skip("no go command to build the binaries:", err)
	}
	dir := b.TempDir()
	sluice := filepath.Join(dir, "sluice")
	goBuild(b, goTool, ".", "-o", sluice, ".")
	if err := os.WriteFile(filepath.Join(dir, "hello.go"), []byte(helloSrc), 0o600); err != nil {
		b.Fatal(err)
	}
	hello := filepath.Join(dir, "hello")
	goBuild(b, goTool, dir, "-o", hello, "hello.go")

	spool := filepath.Join(spoolParent, "spool")
	sp, err := queue.Open(spool)
	if err != nil {
		b.Fatal(err)
	}
	stop := (&fakeActor{status: queue.StatusDone, exitCode: new(int), noLog: true,
		auditPath: filepath.Join(b.TempDir(), "audit.jsonl")}).start(sp)
	defer func() {
		for _, err := range stop() {
			b.Error(err)
		}
	}()
	env := append(os.Environ(), "SLUICE_SPOOL="+spool)

	var runs, hellos []time.Duration
	for b.Loop() {
		hellos = append(hellos, timeProcess(b, env, hello))
		runs = append(runs, timeProcess(b, env, sluice, "run", "--", "true"))
	}
	runP50, helloP50 := percentile(runs, 50), percentile(hellos, 50)
	b.ReportMetric(ms(runP50), "run-p50-ms")
	b.ReportMetric(ms(percentile(runs, 99)), "run-p99-ms")
	b.ReportMetric(ms(helloP50), "hello-p50-ms")
	b.ReportMetric(float64(runP50)/float64(helloP50), "run/hello-p50")
}

const helloSrc = `package main

import "fmt"

func main() { fmt.Println("hello") }
`

func goBuild(b *testing.B, goTool, dir string, args ...string) {
	b.Helper()
	cmd := exec.Command(goTool, append([]string{"build"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // as make build builds it
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build %v: %v\n%s", args, err, out)
	}
}

// timeProcess runs prog to completion and returns its wall time, start to
// exit; it fails the benchmark unless prog exits 0.
func timeProcess(b *testing.B, env []string, prog string, args ...string) time.Duration {
	b.Helper()
	cmd := exec.Command(prog, args...)
	cmd.Env = env
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil {
		b.Fatalf("%s %v: %v\n%s", filepath.Base(prog), args, err, out)
	}
	return d
}

// percentile returns the p-th percentile of ds (nearest rank).
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(i, 1)-1]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkRunServe is the whole path an auto-allowed command takes: a new
// `sluice run -- true` process, a real `sluice serve` process judging it,
// claiming it, recording four audit lines (fsynced), running `true` under
// a pty and answering. In the same run it times `sh -c true` spawned
// directly, the floor, and reports the ratio. Spool and audit log are on
// tmpfs, as the default $XDG_RUNTIME_DIR spool is.
func BenchmarkRunServe(b *testing.B) {
	bin, env, _ := startBenchServe(b)
	timeProcess(b, env, bin, "run", "--", "true") // the engine is up once this returns
	var runs, direct []time.Duration
	for b.Loop() {
		direct = append(direct, timeProcess(b, env, "/bin/sh", "-c", "true"))
		runs = append(runs, timeProcess(b, env, bin, "run", "--", "true"))
	}
	b.ReportMetric(ms(percentile(runs, 50)), "run-p50-ms")
	b.ReportMetric(ms(percentile(runs, 99)), "run-p99-ms")
	b.ReportMetric(ms(percentile(direct, 50)), "sh-p50-ms")
	b.ReportMetric(float64(percentile(runs, 50))/float64(percentile(direct, 50)), "run/sh-p50")
}

// startBenchServe builds sluice and starts 'sluice serve' on a spool and
// audit log in a fresh tmpfs directory, with an empty user policy; it is
// stopped when the benchmark ends. It returns the binary, the environment
// to run sluice in, and the directory.
func startBenchServe(b *testing.B) (bin string, env []string, dir string) {
	b.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		b.Skip("no go command to build the binary:", err)
	}
	if fi, err := os.Stat("/dev/shm"); err != nil || !fi.IsDir() {
		b.Skip("no /dev/shm")
	}
	bin = filepath.Join(b.TempDir(), "sluice")
	goBuild(b, goTool, ".", "-o", bin, ".")
	// sluice-engine (which 'sluice serve' runs) and sluice-box beside
	// it, as make build and go install put them.
	for _, prog := range []string{"sluice-engine", "sluice-box"} {
		goBuild(b, goTool, "../"+prog, "-o", filepath.Join(filepath.Dir(bin), prog), ".")
	}
	dir, err = os.MkdirTemp("/dev/shm", "sluice-bench-")
	if err != nil {
		b.Skip(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	env = append(os.Environ(), "SLUICE_SPOOL="+filepath.Join(dir, "spool"), "SLUICE_AUDIT="+filepath.Join(dir, "audit.jsonl"),
		"SLUICE_POLICY="+filepath.Join(dir, "policy.toml"))
	if err := os.WriteFile(filepath.Join(dir, "policy.toml"), nil, 0o600); err != nil {
		b.Fatal(err)
	}
	serve := exec.Command(bin, "serve")
	serve.Env = env
	var stderr syncbuf.Buffer
	serve.Stderr = &stderr
	if err := serve.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = serve.Wait()
		close(exited)
	}()
	b.Cleanup(func() {
		_ = serve.Process.Signal(os.Interrupt)
		<-exited
	})
	// Serving, or said why not: a 'sluice run' against a spool nobody
	// serves would wait for its --expires.
	sp, err := queue.Open(filepath.Join(dir, "spool"))
	for deadline := time.Now().Add(time.Minute); err != nil || !sp.Serving(); {
		select {
		case <-exited:
			b.Fatalf("sluice serve exited:\n%s", stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b.Fatalf("sluice serve does not serve the spool after a minute:\n%s", stderr.String())
		}
		if err != nil {
			sp, err = queue.Open(filepath.Join(dir, "spool"))
		}
	}
	return bin, env, dir
}
