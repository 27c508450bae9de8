//go:build linux

// Command compare measures sluice against the physical floor of its spool
// protocol (bench/floor), interleaved sample by sample in one run, and
// prints p50/p90 and the ratio of each row to its floor, with issue 31's
// target where it sets one (MISSED where it is missed), per filesystem:
//
//	go run ./bench/compare [-n 300] [-fs tmpfs|disk|both] [-sluice bin/sluice] [-clients 8]
//
// The floors: the bare floor (floor server: sh under a pty, unconfined),
// the confined floor (floor server -confine: bash under a pty, confined as
// sluice confines a run), the decide-only floor (floor server -decide) and
// the wrapper floor (floor wrap: a process that confines a thread and
// starts the command from it).
//
// run: `sluice run -- true` against `sluice serve`, vs the confined and
// the bare floor; run-program (`ls`), run-shell (`true; true`) and
// run-paused (after -pause) likewise. run-churn: `sluice run -- true`
// while a process creates and removes a file in the spool's grandparent
// every 10 ms, vs the same with that process stopped. hook: `sluice hook
// claude` for Bash `git status` vs the decide-only floor. sandbox:
// `sluice sandbox --profile read_only -- sh -c true` vs the wrapper floor
// and `sh -c true`. check: `sluice check -- git status` vs `sluice
// version`. throughput: -clients concurrent client loops, rounds
// alternating the floors and sluice; requests per second.
//
// See bench/README.md.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	sluiceexec "github.com/sluice-dev/sluice/exec"
	"github.com/sluice-dev/sluice/exec/sandbox"
)

type options struct {
	n, clients, per, rounds, warmup int
	paused                          int
	pause                           time.Duration
	fs, sluice, config              string
	keep                            bool
}

func main() {
	var o options
	flag.IntVar(&o.n, "n", 300, "samples per variant of each latency row")
	flag.StringVar(&o.fs, "fs", "both", "filesystem for spool, audit log and HOME: tmpfs (/dev/shm), disk (/tmp) or both")
	flag.StringVar(&o.sluice, "sluice", "bin/sluice", "the sluice binary (make build)")
	flag.IntVar(&o.clients, "clients", 8, "concurrent client loops for throughput")
	flag.IntVar(&o.per, "per", 40, "requests per client loop in each throughput round")
	flag.IntVar(&o.rounds, "rounds", 5, "throughput rounds per variant (alternating bare floor, confined floor, sluice)")
	flag.IntVar(&o.paused, "paused", 30, "samples per variant of run after a pause (0: none)")
	flag.DurationVar(&o.pause, "pause", 100*time.Millisecond, "the pause before each run-paused sample")
	flag.IntVar(&o.warmup, "warmup", 10, "untimed samples per variant before each latency row")
	flag.StringVar(&o.config, "config", "", "`TOML` for sluice's config.toml (default empty: the defaults; e.g. 'sandbox = \"off\"' to see what confinement costs)")
	flag.BoolVar(&o.keep, "keep", false, "keep the test directories (spools, audit logs, server logs) for a look afterwards")
	flag.Parse()
	if flag.NArg() > 0 || o.n < 1 || o.clients < 1 || o.per < 1 || o.rounds < 1 || o.warmup < 0 {
		flag.Usage()
		os.Exit(2)
	}
	fmt.Println("$ " + commandLine())

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE) // SIGPIPE: stdout piped to head
	go func() {
		s := <-sigs
		interrupted.Store(true)
		fmt.Fprintf(os.Stderr, "compare: %v: cleaning up\n", s)
		cleanup()
		os.Exit(130)
	}()
	err := run(o)
	cleanup() // waits for a cleanup under way
	if interrupted.Load() {
		select {} // the signal's goroutine exits
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

// commandLine is how this program was started: `go run ./bench/compare`
// when it runs from go run's build cache.
func commandLine() string {
	name := os.Args[0]
	if strings.Contains(name, "go-build") {
		name = "go run ./bench/compare"
	}
	words := []string{name}
	for _, a := range os.Args[1:] {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~") {
			a = strconv.Quote(a)
		}
		words = append(words, a)
	}
	return strings.Join(words, " ")
}

// ---- cleanup: every process and directory this program starts

var (
	cleanMu     sync.Mutex // guards cleanups
	cleanups    []func()
	cleaning    sync.Mutex // held while cleanups run
	interrupted atomic.Bool
)

func atCleanup(f func()) {
	cleanMu.Lock()
	cleanups = append(cleanups, f)
	cleanMu.Unlock()
}

// cleanup runs the registered functions, last first, once each.
func cleanup() { cleanupTo(0) }

// cleanupTo runs the functions registered after the first mark ones.
func cleanupTo(mark int) {
	cleaning.Lock()
	defer cleaning.Unlock()
	cleanMu.Lock()
	if mark > len(cleanups) {
		mark = len(cleanups)
	}
	fs := cleanups[mark:]
	cleanups = cleanups[:mark:mark]
	cleanMu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

func run(o options) error {
	sluice, err := filepath.Abs(o.sluice)
	if err != nil {
		return err
	}
	if _, err := os.Stat(sluice); err != nil {
		return fmt.Errorf("%v (run make build first, or pass -sluice)", err)
	}
	var parents [][2]string
	switch o.fs {
	case "tmpfs":
		parents = [][2]string{{"tmpfs", "/dev/shm"}}
	case "disk":
		parents = [][2]string{{"disk", "/tmp"}}
	case "both":
		parents = [][2]string{{"tmpfs", "/dev/shm"}, {"disk", "/tmp"}}
	default:
		return fmt.Errorf("-fs %q: want tmpfs, disk or both", o.fs)
	}

	bdir, err := os.MkdirTemp("", "sluice-floor-bin-")
	if err != nil {
		return err
	}
	atCleanup(func() { os.RemoveAll(bdir) })
	floor := filepath.Join(bdir, "floor")
	build := exec.Command("go", "build", "-o", floor, "github.com/sluice-dev/sluice/bench/floor")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // static, as make build builds sluice
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build bench/floor: %v\n%s", err, out)
	}
	ver, _ := exec.Command(sluice, "version").Output()
	fmt.Printf("# %s %s/%s, %d CPUs; %s: %s; %s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH,
		runtime.NumCPU(), o.sluice, strings.TrimSpace(string(ver)), time.Now().Format(time.DateTime))
	fmt.Printf("# ratio = sluice/floor (latency: >1 is slower; throughput: <1 is slower); samples interleaved bare floor, floor, sluice, ...\n")
	fmt.Printf("# target: issue 31's, on the p50 ratio to the floor named; MISSED where it is missed\n")

	res := &results{}
	for _, p := range parents {
		if err := compareOn(o, p[0], p[1], sluice, floor, res); err != nil {
			return fmt.Errorf("%s: %w", p[0], err)
		}
	}
	res.summary(os.Stdout)
	return nil
}

// bench is one filesystem's setup: the servers, and the environment and
// inputs of the clients.
type bench struct {
	o                  options
	dir, project       string
	sluice, floor      string
	env                []string
	floorRun, floorDec string // the floor servers' spools
	floorConf          string // the confined floor's spool
	hookInput          []byte
	results            *results
}

func compareOn(o options, name, parent, sluice, floor string, res *results) error {
	cleanMu.Lock()
	mark := len(cleanups)
	cleanMu.Unlock()
	defer cleanupTo(mark)
	dir, err := os.MkdirTemp(parent, "sluice-compare-")
	if err != nil {
		return err
	}
	// Registered first, so removed after the servers in it are stopped.
	atCleanup(func() {
		if o.keep {
			fmt.Fprintln(os.Stderr, "compare: kept", dir)
		} else {
			os.RemoveAll(dir)
		}
	})
	b := &bench{o: o, dir: dir, sluice: sluice, floor: floor,
		floorRun: filepath.Join(dir, "floor-run"), floorDec: filepath.Join(dir, "floor-decide"),
		floorConf: filepath.Join(dir, "floor-confined"),
		project:   filepath.Join(dir, "project"), results: res}
	if err := b.setup(); err != nil {
		return err
	}
	fmt.Printf("\n## %s: %s\n", name, dir)
	if ready, err := os.ReadFile(filepath.Join(b.floorConf, "ready")); err == nil {
		fmt.Printf("# confined floor: %s\n", ready)
	}
	return b.rows(name)
}

func (b *bench) setup() error {
	d := b.dir
	home := filepath.Join(d, "home")
	xdg := map[string]string{
		"XDG_CONFIG_HOME": filepath.Join(home, ".config"),
		"XDG_STATE_HOME":  filepath.Join(home, ".local", "state"),
		"XDG_CACHE_HOME":  filepath.Join(home, ".cache"),
		"XDG_DATA_HOME":   filepath.Join(home, ".local", "share"),
		"XDG_RUNTIME_DIR": filepath.Join(d, "run"),
		// sluice serve keeps each confined run's private temporary
		// directory under $TMPDIR: on the filesystem under test too.
		"TMPDIR": filepath.Join(d, "tmp"),
	}
	b.env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8",
		"SLUICE_SPOOL=" + filepath.Join(d, "spool"),
		"SLUICE_AUDIT=" + filepath.Join(d, "audit.log"),
		"SLUICE_CONFIG=" + filepath.Join(d, "config.toml"),
	}
	for k, v := range xdg {
		b.env = append(b.env, k+"="+v)
		if err := os.MkdirAll(v, 0o700); err != nil {
			return err
		}
	}
	slices.Sort(b.env)
	if err := os.WriteFile(filepath.Join(d, "config.toml"), []byte(b.o.config), 0o600); err != nil {
		return err
	}
	if err := os.MkdirAll(b.project, 0o700); err != nil {
		return err
	}
	if out, err := b.command("git", "init", "-q").CombinedOutput(); err != nil {
		return fmt.Errorf("git init: %v\n%s", err, out)
	}
	// Claude Code's PreToolUse input, as in hook/testdata/hooks/claude/bash_git_status.json.
	b.hookInput, _ = json.Marshal(map[string]any{
		"session_id":      "6b1f0c2e-4f7d-4a8e-9b1c-2f3e4d5c6b7a",
		"transcript_path": filepath.Join(home, ".claude", "projects", "-project", "6b1f0c2e-4f7d-4a8e-9b1c-2f3e4d5c6b7a.jsonl"),
		"cwd":             b.project, "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
		"tool_input":  map[string]any{"command": "git status", "description": "Show working tree status"},
		"tool_use_id": "toolu_01A7Kq3XbV9cN2mR5tY8wE1d",
	})

	// The confined floor's base layer hides and closes what sluice's
	// default does for this environment (exec's defaults for its HOME and
	// PATH, the project opened), and its own spool.
	spec, _ := json.Marshal(sandbox.BaseSpec{
		Hidden: append(sluiceexec.DefaultHidden(home), b.floorConf),
		Closed: sluiceexec.DefaultClosed(home),
		Open: slices.Concat(sluiceexec.DefaultReadable(b.env, home), sluiceexec.DefaultWritable(b.env, home),
			[]string{b.project}),
	})
	specFile := filepath.Join(d, "floor-confined.json")
	if err := os.WriteFile(specFile, spec, 0o600); err != nil {
		return err
	}
	for _, s := range [][]string{
		{b.floorRun},
		{b.floorDec, "-decide"},
		{b.floorConf, "-confine", specFile},
	} {
		args := append([]string{"server", "-spool", s[0]}, s[1:]...)
		if err := b.server(filepath.Base(s[0]), syscall.SIGTERM, filepath.Join(s[0], "ready"), b.floor, args...); err != nil {
			return err
		}
	}
	// Ready once it holds the serving lock and answers a run.
	if err := b.server("sluice-serve", os.Interrupt, filepath.Join(d, "spool", "serving.lock"), b.sluice, "serve"); err != nil {
		return err
	}
	c := b.command(b.sluice, "run", "--expires", "15s", "--", "true")
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		return err
	}
	t := time.AfterFunc(20*time.Second, func() { _ = c.Process.Kill() })
	defer t.Stop()
	if err := c.Wait(); err != nil {
		return fmt.Errorf("sluice run through serve: %v\n%s", err, out.Bytes())
	}
	return nil
}

// command is prog with args in the bench's environment, in the project.
func (b *bench) command(prog string, args ...string) *exec.Cmd {
	c := exec.Command(prog, args...)
	c.Env = b.env
	c.Dir = b.project
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return c
}

// server starts a long-lived server, logging to DIR/name.log, waits up to
// 15s for it to make the file ready, and registers its stop: the signal
// stop, then SIGKILL after 5s.
func (b *bench) server(name string, stop os.Signal, ready, prog string, args ...string) error {
	logPath := filepath.Join(b.dir, name+".log")
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	c := b.command(prog, args...)
	c.Stdout, c.Stderr = log, log
	if err := c.Start(); err != nil {
		log.Close()
		return err
	}
	done := make(chan struct{})
	go func() { c.Wait(); log.Close(); close(done) }()
	atCleanup(func() {
		_ = c.Process.Signal(stop)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = c.Process.Kill()
			<-done
		}
	})
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			return nil
		}
		why := "is not ready within 15s"
		select {
		case <-done:
			why = "exited: " + c.ProcessState.String()
		default:
			if time.Now().Before(deadline) {
				continue
			}
		}
		out, _ := os.ReadFile(logPath)
		return fmt.Errorf("%s %s %s\n%s", filepath.Base(prog), strings.Join(args, " "), why, out)
	}
}

// client is one kind of client process: prog args, stdin, and what its
// stdout must hold.
type client struct {
	b     *bench
	prog  string
	args  []string
	stdin []byte
	want  []string
}

func (b *bench) client(prog string, want []string, args ...string) *client {
	return &client{b: b, prog: prog, args: args, want: want}
}

// once runs the client to its exit, stdout to a pipe, and returns its wall
// time; an exit status other than 0 or missing output is an error.
func (c *client) once() (time.Duration, error) {
	cmd := c.b.command(c.prog, c.args...)
	if c.stdin != nil {
		cmd.Stdin = bytes.NewReader(c.stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	d := time.Since(start)
	for _, w := range c.want {
		if err == nil && !bytes.Contains(out, []byte(w)) {
			err = fmt.Errorf("stdout lacks %s", w)
		}
	}
	if err != nil {
		return d, fmt.Errorf("%s %s: %v\nstdout: %s\nstderr: %s", filepath.Base(c.prog), strings.Join(c.args, " "), err, out, stderr.Bytes())
	}
	return d, nil
}

func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(i, 1)-1]
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
