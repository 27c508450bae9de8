// Command load is sluice's load test (make load): many agent processes at
// once against one 'sluice serve', with a scripted person approving what
// the policy asks about.
//
// It builds the binary once, makes a throwaway home (HOME, XDG_*, the spool
// on tmpfs where there is one, the audit log, a user policy), starts
// 'sluice serve', and has -agents goroutines each run -requests sequential
// 'sluice run --json -- CMD' processes. The commands make a fixed mix:
//
//	allow  echo load-A-N "$SLUICE_REQUEST_ID" >> allow.marker   (an allow rule)
//	deny   deny-me load-A-N                                      (a deny rule)
//	ask    printf 'ask-A-N %s\n' "$SLUICE_REQUEST_ID" >> ask.marker  (an ask rule)
//
// A lister polls 'sluice ls --json' and hands each pending ask request to a
// pool of approvers running 'sluice approve ID'; every -dup-every'th one is
// handed to two approvers at once, and exactly one of them must win.
//
// At the end it checks that nothing was lost or done twice: every run
// exited as its verdict says (0, 126, 0) with a result naming a fresh id;
// out/ holds exactly one result per request and nothing else is pending;
// each command that ran left its id in its marker file exactly once; the
// audit log verifies and holds exactly the expected steps for each id; and
// the engine is still alive and stops cleanly. It prints wall time,
// throughput, end-to-end latency percentiles per verdict kind and the
// engine's peak RSS (VmHWM, Linux only), and exits 1 on any violation.
//
// Run it from the repository root: go run ./scripts/load [flags].
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// kind is what the policy makes of a request, and so how it must end.
type kind int

const (
	kindAllow kind = iota // auto-allowed by serve: exit 0
	kindDeny              // auto-denied by serve: exit 126
	kindAsk               // approved by the scripted person: exit 0
	numKinds
)

func (k kind) String() string { return [...]string{"allow", "deny", "ask-approved"}[k] }

// wantExit is the exit status of 'sluice run' for each kind.
var wantExit = [numKinds]int{0, 126, 0}

// policyText makes the mix: the rules match the argv of one simple command.
const policyText = `# sluice load test (scripts/load)
[[rule]]
action = "allow"
command = "echo load-* *"
reason = "load test: allowed"

[[rule]]
action = "deny"
command = "deny-me *"
reason = "load test: denied"

[[rule]]
action = "ask"
command = "printf *"
reason = "load test: a person approves it"
`

const (
	allowMarker = "allow.marker"
	askMarker   = "ask.marker"
)

// command is the command line for request n of agent a, and its tag (the
// marker line's first word, or the deny-me operand).
func command(k kind, a, n int) (cmd, tag string) {
	switch k {
	case kindAllow:
		tag = fmt.Sprintf("load-%d-%d", a, n)
		return fmt.Sprintf(`echo %s "$SLUICE_REQUEST_ID" >> %s`, tag, allowMarker), tag
	case kindDeny:
		tag = fmt.Sprintf("load-%d-%d", a, n)
		return "deny-me " + tag, tag
	}
	tag = fmt.Sprintf("ask-%d-%d", a, n)
	return fmt.Sprintf(`printf '%s %%s\n' "$SLUICE_REQUEST_ID" >> %s`, tag, askMarker), tag
}

// isAsk tells the approver which pending requests are its to approve.
func isAsk(cmd string) bool { return strings.HasPrefix(cmd, "printf 'ask-") }

// opts are the flags.
type opts struct {
	agents, requests   int
	allowPct, denyPct  int
	approvers          int
	dupEvery           int
	poll               time.Duration
	timeout            time.Duration
	maxAuto            int
	bin, dir           string
	keep, noTmpfsSpool bool
	seed               uint64
}

func main() {
	var o opts
	flag.IntVar(&o.agents, "agents", 50, "concurrent agent processes")
	flag.IntVar(&o.requests, "requests", 100, "sequential requests per agent")
	flag.IntVar(&o.allowPct, "allow", 70, "percent of each agent's requests the policy allows")
	flag.IntVar(&o.denyPct, "deny", 15, "percent the policy denies (the rest ask and are approved)")
	flag.IntVar(&o.approvers, "approvers", 3, "'sluice approve' processes at once")
	flag.IntVar(&o.dupEvery, "dup-every", 10, "hand every Nth ask request to two approvers at once (0: never)")
	flag.DurationVar(&o.poll, "poll", 10*time.Millisecond, "pause between 'sluice ls --json' polls that find nothing new")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "fail if the load has not finished by then")
	flag.IntVar(&o.maxAuto, "max-auto", 0, "sluice serve --max-auto (0: its default)")
	flag.StringVar(&o.bin, "bin", "", "use this sluice binary instead of building one")
	flag.StringVar(&o.dir, "dir", "", "parent of the temporary directory (default: the system's)")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (its path is printed)")
	flag.BoolVar(&o.noTmpfsSpool, "disk-spool", false, "put the spool beside the rest, not on /dev/shm")
	flag.Uint64Var(&o.seed, "seed", 1, "seed for the order of each agent's mix")
	flag.Parse()
	if flag.NArg() > 0 || o.agents < 1 || o.requests < 1 || o.approvers < 1 || o.allowPct < 0 || o.denyPct < 0 ||
		o.allowPct+o.denyPct > 100 || o.dupEvery < 0 || o.timeout <= 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "load: %v\n", err)
		os.Exit(1)
	}
}

// env is the throwaway world every child process lives in.
type env struct {
	root, spool, audit, project, bin string
	vars                             []string
}

func setup(o opts) (*env, func(), error) {
	root, err := os.MkdirTemp(o.dir, "sluice-load-")
	if err != nil {
		return nil, nil, err
	}
	cleanups := []func(){func() {
		if o.keep {
			fmt.Printf("kept %s\n", root)
			return
		}
		os.RemoveAll(root)
	}}
	cleanup := func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}
	// The default spool lives in $XDG_RUNTIME_DIR, a tmpfs on systemd
	// machines: put it on one where there is one.
	runtimeDir := filepath.Join(root, "run")
	if fi, err := os.Stat("/dev/shm"); !o.noTmpfsSpool && err == nil && fi.IsDir() {
		shm, err := os.MkdirTemp("/dev/shm", "sluice-load-")
		if err == nil {
			runtimeDir = shm
			cleanups = append(cleanups, func() {
				if !o.keep {
					os.RemoveAll(shm)
				} else {
					fmt.Printf("kept %s\n", shm)
				}
			})
		}
	}
	e := &env{root: root, spool: filepath.Join(runtimeDir, "sluice"), audit: filepath.Join(root, "state", "sluice", "audit.jsonl"),
		project: filepath.Join(root, "project"), bin: o.bin}
	home := filepath.Join(root, "home")
	for _, d := range []string{runtimeDir, home, e.project, filepath.Join(root, "config"), filepath.Join(root, "state"),
		filepath.Join(root, "cache"), filepath.Join(root, "data")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			cleanup()
			return nil, nil, err
		}
		if err := os.Chmod(d, 0o700); err != nil {
			cleanup()
			return nil, nil, err
		}
	}
	policyFile := filepath.Join(root, "policy.toml")
	if err := os.WriteFile(policyFile, []byte(policyText), 0o600); err != nil {
		cleanup()
		return nil, nil, err
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "HOME" || strings.HasPrefix(k, "XDG_") || strings.HasPrefix(k, "SLUICE_") || k == "TMUX" {
			continue
		}
		e.vars = append(e.vars, kv)
	}
	e.vars = append(e.vars, "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(root, "config"),
		"XDG_STATE_HOME="+filepath.Join(root, "state"), "XDG_CACHE_HOME="+filepath.Join(root, "cache"),
		"XDG_DATA_HOME="+filepath.Join(root, "data"), "XDG_RUNTIME_DIR="+runtimeDir,
		"SLUICE_SPOOL="+e.spool, "SLUICE_AUDIT="+e.audit, "SLUICE_POLICY="+policyFile)
	if e.bin == "" {
		e.bin = filepath.Join(root, "sluice")
		repo, err := repoRoot()
		if err != nil {
			cleanup()
			return nil, nil, err
		}
		build := exec.Command("go", "build", "-o", e.bin, "./cmd/sluice")
		build.Dir = repo
		build.Env = append(os.Environ(), "CGO_ENABLED=0") // as make build builds it
		if out, err := build.CombinedOutput(); err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("go build: %v\n%s", err, out)
		}
	} else if e.bin, err = filepath.Abs(e.bin); err != nil {
		cleanup()
		return nil, nil, err
	}
	// The policy must load as written: a typo would make the mix wrong.
	if out, err := e.command(context.Background(), "policy", "lint", policyFile).CombinedOutput(); err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("sluice policy lint: %v\n%s", err, out)
	}
	return e, cleanup, nil
}

// repoRoot is the directory holding go.mod, at or above the working one.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod here or above: run it from the repository (go run ./scripts/load)")
		}
		dir = up
	}
}

func (e *env) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, e.bin, args...)
	cmd.Env = e.vars
	cmd.Dir = e.project
	return cmd
}

// exitCode is a finished command's exit status, or -1 when it did not exit
// on its own (killed by a signal, never started).
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.Exited() {
		return ee.ExitCode()
	}
	return -1
}

// sample is one 'sluice run' as the agent saw it.
type sample struct {
	agent, n int
	kind     kind
	cmd, tag string
	took     time.Duration
	exit     int
	stderr   string
	res      *result // nil if its output was not a result
}

// result is the part of a result file the checks read.
type result struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	Decision  string `json:"decision"`
	DecidedBy string `json:"decided_by"`
	ExitCode  *int   `json:"exit_code"`
}

// approval is one 'sluice approve' run.
type approval struct {
	id     string
	dup    bool // one of two approvers handed the same id
	took   time.Duration
	exit   int
	output string
}

// mix is agent a's requests, in a shuffled order fixed by the seed, with
// exactly allowPct/denyPct of them allowed/denied.
func mix(o opts, a int) []kind {
	ks := make([]kind, o.requests)
	nAllow, nDeny := o.requests*o.allowPct/100, o.requests*o.denyPct/100
	for i := range ks {
		switch {
		case i < nAllow:
			ks[i] = kindAllow
		case i < nAllow+nDeny:
			ks[i] = kindDeny
		default:
			ks[i] = kindAsk
		}
	}
	r := rand.New(rand.NewPCG(o.seed, uint64(a)))
	r.Shuffle(len(ks), func(i, j int) { ks[i], ks[j] = ks[j], ks[i] })
	return ks
}

func agent(ctx context.Context, e *env, o opts, a int, out []sample, done *atomic.Int64) {
	for n, k := range mix(o, a) {
		if ctx.Err() != nil {
			return
		}
		cmdline, tag := command(k, a, n)
		cmd := e.command(ctx, "run", "--json", "--agent", fmt.Sprintf("load-%d", a), "--", cmdline)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		err := cmd.Run()
		s := sample{agent: a, n: n, kind: k, cmd: cmdline, tag: tag, took: time.Since(start), exit: exitCode(err),
			stderr: strings.TrimSpace(stderr.String())}
		var r result
		if json.Unmarshal(stdout.Bytes(), &r) == nil && r.ID != "" {
			s.res = &r
		}
		out[n] = s
		done.Add(1)
	}
}

// lsEntry is the part of one 'sluice ls --json' entry the lister reads.
type lsEntry struct {
	ID      string `json:"id"`
	State   string `json:"state"`
	Request *struct {
		Command string `json:"command"`
	} `json:"request"`
}

// person polls 'sluice ls --json' until ctx ends and sends each new
// pending ask request's id to approve (twice for every dupEvery'th). It
// returns the number of polls and the polls that failed.
func person(ctx context.Context, e *env, o opts, approve chan<- approval) (polls int, failed []string) {
	seen := map[string]bool{}
	for ctx.Err() == nil {
		out, err := e.command(ctx, "ls", "--json").Output()
		if ctx.Err() != nil {
			break
		}
		polls++
		var list []lsEntry
		if err == nil {
			err = json.Unmarshal(out, &list)
		}
		if err != nil {
			failed = append(failed, fmt.Sprintf("sluice ls --json: %v", err))
			time.Sleep(o.poll)
			continue
		}
		fresh := 0
		for _, le := range list {
			if le.State != "pending" || le.Request == nil || !isAsk(le.Request.Command) || seen[le.ID] {
				continue
			}
			seen[le.ID] = true
			fresh++
			dup := o.dupEvery > 0 && len(seen)%o.dupEvery == 0
			approve <- approval{id: le.ID, dup: dup}
			if dup {
				approve <- approval{id: le.ID, dup: true}
			}
		}
		if fresh == 0 {
			select {
			case <-ctx.Done():
			case <-time.After(o.poll):
			}
		}
	}
	return polls, failed
}

func approver(ctx context.Context, e *env, in <-chan approval, mu *sync.Mutex, all *[]approval) {
	for ap := range in {
		cmd := e.command(ctx, "approve", ap.id)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		ap.took, ap.exit, ap.output = time.Since(start), exitCode(err), strings.TrimSpace(string(out))
		mu.Lock()
		*all = append(*all, ap)
		mu.Unlock()
	}
}

// engine is the running 'sluice serve'.
type engine struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed when it exits
	err    error         // its Wait error, once exited
	ready  chan struct{} // closed when it logs that it watches
	mu     sync.Mutex
	log    []string
}

func startServe(e *env, o opts) (*engine, error) {
	args := []string{"serve"}
	if o.maxAuto > 0 {
		args = append(args, "--max-auto", fmt.Sprint(o.maxAuto))
	}
	// Not tied to a context: the end of the run is checked on it.
	cmd := exec.Command(e.bin, args...)
	cmd.Env, cmd.Dir = e.vars, e.project
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	g := &engine{cmd: cmd, exited: make(chan struct{}), ready: make(chan struct{})}
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		watching := false
		for sc.Scan() {
			line := sc.Text()
			g.mu.Lock()
			g.log = append(g.log, line)
			g.mu.Unlock()
			if !watching && strings.Contains(line, "sluice serve: watching ") {
				watching = true
				close(g.ready)
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	go func() {
		<-logDone // Wait closes the pipe: read it all first
		g.err = cmd.Wait()
		close(g.exited)
	}()
	select {
	case <-g.ready:
		return g, nil
	case <-g.exited:
		return nil, fmt.Errorf("sluice serve exited at start: %v\n%s", g.err, strings.Join(g.lines(), "\n"))
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-g.exited
		return nil, fmt.Errorf("sluice serve did not start watching within 10s\n%s", strings.Join(g.lines(), "\n"))
	}
}

func (g *engine) lines() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.log...)
}

func (g *engine) alive() bool {
	select {
	case <-g.exited:
		return false
	default:
		return true
	}
}

// stop interrupts the engine and waits for it (10s, then kills it).
func (g *engine) stop() error {
	if !g.alive() {
		return fmt.Errorf("it had exited already: %v", g.err)
	}
	_ = g.cmd.Process.Signal(os.Interrupt)
	select {
	case <-g.exited:
	case <-time.After(10 * time.Second):
		_ = g.cmd.Process.Kill()
		<-g.exited
		return errors.New("it did not stop within 10s of SIGINT; killed")
	}
	if g.err != nil {
		return fmt.Errorf("it exited with %v after SIGINT", g.err)
	}
	return nil
}

func run(o opts) error {
	began := time.Now()
	e, cleanup, err := setup(o)
	if err != nil {
		return err
	}
	defer cleanup()
	fmt.Printf("sluice load: %d agents x %d requests (allow %d%%, deny %d%%, ask %d%%), %d approvers, %s/%s, %d CPUs\n",
		o.agents, o.requests, o.allowPct, o.denyPct, 100-o.allowPct-o.denyPct, o.approvers, runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	fmt.Printf("spool %s, audit log %s (setup and build %s)\n", e.spool, e.audit, time.Since(began).Round(time.Millisecond))

	g, err := startServe(e, o)
	if err != nil {
		return err
	}
	defer func() {
		if g.alive() {
			_ = g.cmd.Process.Kill()
			<-g.exited
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	personCtx, stopPerson := context.WithCancel(ctx)
	defer stopPerson()

	var (
		approveCh = make(chan approval, 2*o.agents*o.requests+16)
		apMu      sync.Mutex
		approvals []approval
		apWG      sync.WaitGroup
		polls     int
		pollFails []string
		personWG  sync.WaitGroup
	)
	for range o.approvers {
		apWG.Go(func() { approver(ctx, e, approveCh, &apMu, &approvals) })
	}
	personWG.Go(func() { polls, pollFails = person(personCtx, e, o, approveCh) })

	samples := make([][]sample, o.agents)
	var done atomic.Int64
	start := time.Now()
	var agents sync.WaitGroup
	for a := range o.agents {
		samples[a] = make([]sample, o.requests)
		agents.Go(func() { agent(ctx, e, o, a, samples[a], &done) })
	}
	progressDone := make(chan struct{})
	go func() {
		total := int64(o.agents * o.requests)
		t := time.NewTicker(15 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-progressDone:
				return
			case <-t.C:
				fmt.Printf("  %s: %d/%d requests answered\n", time.Since(start).Round(time.Second), done.Load(), total)
			}
		}
	}()
	agents.Wait()
	elapsed := time.Since(start)
	close(progressDone)
	stopPerson()
	personWG.Wait()
	close(approveCh)
	apWG.Wait()
	timedOut := ctx.Err() != nil

	r := &report{o: o, e: e, elapsed: elapsed, polls: polls, approvals: approvals}
	for _, s := range samples {
		r.samples = append(r.samples, s...)
	}
	if timedOut {
		r.fail("the load did not finish within -timeout %s (%d of %d requests answered)", o.timeout, done.Load(), o.agents*o.requests)
	}
	for _, f := range pollFails {
		r.fail("%s", f)
	}
	r.checkRuns()
	r.checkApprovals()
	r.checkSpool(ctx)
	r.checkMarkers()

	// The engine: alive after the load, its peak RSS, then a clean stop.
	if !g.alive() {
		r.fail("sluice serve died during the load: %v", g.err)
	} else {
		r.engineRSS, r.rssNote = peakRSS(g.cmd.Process.Pid)
	}
	if err := g.stop(); err != nil {
		r.fail("sluice serve: %v", err)
	}
	if ps := g.cmd.ProcessState; ps != nil {
		r.engineCPU = ps.UserTime() + ps.SystemTime()
	}
	r.checkServeLog(g.lines())
	r.checkAudit()
	r.print()
	if len(r.violations) > 0 {
		return fmt.Errorf("%d violation(s)", len(r.violations))
	}
	fmt.Printf("ok (whole run %s)\n", time.Since(began).Round(time.Millisecond))
	return nil
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
