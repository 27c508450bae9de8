//go:build unix

// Load is sluice's load test (make load; scripts/load is its flags,
// TestLoadQuick its quick form): many agent processes at once against one
// 'sluice serve', with a scripted person (a Person) approving what the
// policy asks about.
//
// It makes a throwaway home (HOME, XDG_*, the spool on tmpfs where there
// is one, the audit log, a user policy), starts 'sluice serve', and has
// Agents goroutines each run Requests sequential 'sluice run --json --
// CMD' processes. The commands make a fixed mix:
//
//	allow  echo load-A-N "$SLUICE_REQUEST_ID" >> allow.marker   (an allow rule)
//	deny   deny-me load-A-N                                      (a deny rule)
//	ask    printf 'ask-A-N %s\n' "$SLUICE_REQUEST_ID" >> ask.marker  (an ask rule)
//
// The person polls 'sluice ls --json' and runs 'sluice approve ID' for each
// pending ask request, Approvers at once; every DupEvery'th one it approves
// twice at once, and exactly one of the two must win.
//
// At the end it checks, with CheckOnce, CheckTold and CheckChain, that
// nothing was lost or done twice, and with the load's own rules that each
// kind ended as its verdict says (done by the policy, denied by the
// policy, done by a person), that each approval was won once, that each
// marker line is the command of the request it names, that the engine
// logged one line per request it acted on, that the audit log holds
// exactly the expected steps for each id, and that the engine is still
// alive and stops cleanly. It prints wall time, throughput, end-to-end
// latency percentiles per verdict and the engine's peak RSS (VmHWM, Linux
// only).

package e2e

import (
	"bytes"
	"context"
	"errors"
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

	"github.com/sluice-dev/sluice/queue"
)

// loadKind is what the policy makes of a load request, and so how it
// must end.
type loadKind int

const (
	loadAllow loadKind = iota // auto-allowed by serve: exit 0
	loadDeny                  // auto-denied by serve: exit 126
	loadAsk                   // approved by the scripted person: exit 0
	numLoadKinds
)

func (k loadKind) String() string { return [...]string{"allow", "deny", "ask-approved"}[k] }

// loadWant is how a request of each kind must end.
var loadWant = [numLoadKinds]struct {
	status queue.Status
	by     queue.Decider
}{
	loadAllow: {queue.StatusDone, queue.ByPolicy},
	loadDeny:  {queue.StatusDenied, queue.ByPolicy},
	loadAsk:   {queue.StatusDone, queue.ByHuman},
}

// loadSteps are the audit steps per kind: how many of each event an id
// must have (queued for an ask request may be missing: the approver can
// claim it before the engine has seen it).
var loadSteps = [numLoadKinds]map[string][2]int{ // event -> {min, max}
	loadAllow: {"queued": {1, 1}, "auto_allowed": {1, 1}, "started": {1, 1}, "finished": {1, 1}},
	loadDeny:  {"queued": {1, 1}, "auto_denied": {1, 1}},
	loadAsk:   {"queued": {0, 1}, "approved": {1, 1}, "started": {1, 1}, "finished": {1, 1}},
}

// loadPolicy makes the mix: the rules match the argv of one simple command.
const loadPolicy = `# sluice load test (internal/e2e/load.go)
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

// loadCommand is the command line for request n of agent a, and its tag
// (the marker line's first word, or the deny-me operand).
func loadCommand(k loadKind, a, n int) (cmd, tag string) {
	switch k {
	case loadAllow:
		tag = fmt.Sprintf("load-%d-%d", a, n)
		return fmt.Sprintf(`echo %s "$SLUICE_REQUEST_ID" >> %s`, tag, allowMarker), tag
	case loadDeny:
		tag = fmt.Sprintf("load-%d-%d", a, n)
		return "deny-me " + tag, tag
	}
	tag = fmt.Sprintf("ask-%d-%d", a, n)
	return fmt.Sprintf(`printf '%s %%s\n' "$SLUICE_REQUEST_ID" >> %s`, tag, askMarker), tag
}

// LoadOptions are the load test's knobs (scripts/load's flags).
type LoadOptions struct {
	Agents, Requests  int           // agent processes at once, sequential requests each
	AllowPct, DenyPct int           // per cent of each agent's requests allowed, denied (the rest ask)
	Approvers         int           // 'sluice approve' processes at once
	DupEvery          int           // approve every Nth ask request twice at once (0: never)
	Poll              time.Duration // between 'sluice ls --json' polls that find nothing new
	Timeout           time.Duration // the load must have finished by then
	MaxAuto           int           // sluice serve --max-auto (0: its default)
	Bin               string        // a sluice binary to run instead of Programs' ("": built)
	Dir               string        // parent of the temporary directory ("": the system's)
	Keep              bool          // keep the temporary directory (always kept when a check fails)
	DiskSpool         bool          // the spool beside the rest, not on /dev/shm
	Seed              uint64        // the order of each agent's mix
	Out               io.Writer     // the progress and the report (nil: stdout)
}

// LoadDefaults are make load's: 50 agents x 100 requests.
func LoadDefaults() LoadOptions {
	return LoadOptions{Agents: 50, Requests: 100, AllowPct: 70, DenyPct: 15, Approvers: 3, DupEvery: 10,
		Poll: 10 * time.Millisecond, Timeout: 10 * time.Minute, Seed: 1}
}

// Quick makes o a smoke run: 8 agents x 20 requests (make test, -quick).
func (o LoadOptions) Quick() LoadOptions {
	o.Agents, o.Requests = 8, 20
	return o
}

// Valid says what is wrong with o, if anything.
func (o LoadOptions) Valid() error {
	if o.Agents < 1 || o.Requests < 1 || o.Approvers < 1 || o.AllowPct < 0 || o.DenyPct < 0 ||
		o.AllowPct+o.DenyPct > 100 || o.DupEvery < 0 || o.Timeout <= 0 {
		return errors.New("need agents, requests and approvers >= 1, allow and deny >= 0 adding up to at most 100, dup-every >= 0, timeout > 0")
	}
	return nil
}

// loadRun is one run of the load test.
type loadRun struct {
	o                           LoadOptions
	root, spool, audit, project string
	bin                         string
	env                         []string
	shm                         string // the spool's tmpfs directory, "" if none
	person                      *Person

	elapsed    time.Duration
	samples    []loadSample
	byID       map[string]*loadSample
	engineRSS  int64 // KiB
	rssNote    string
	engineCPU  time.Duration
	auditLines int
	verify     string
	violations Failures
}

// loadSample is one 'sluice run' as the agent saw it.
type loadSample struct {
	agent, n int
	kind     loadKind
	cmd, tag string
	took     time.Duration // 0: never run
	Told
}

func (s *loadSample) String() string {
	id := "(no result)"
	if s.Result != nil {
		id = s.Result.ID
	}
	return fmt.Sprintf("agent %d request %d (%s, %s, %q)", s.agent, s.n, s.kind, id, s.cmd)
}

func (r *loadRun) fail(format string, args ...any) { r.violations.Addf(format, args...) }

// Load runs the load test with o and returns what its checks found wrong
// and the work directory, removed unless something failed or o.Keep.
func Load(o LoadOptions) (Failures, string) {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	began := time.Now()
	r, err := setupLoad(o)
	if err != nil {
		if r != nil {
			return Failures{err.Error()}, r.root
		}
		return Failures{err.Error()}, ""
	}
	fmt.Fprintf(o.Out, "sluice load: %d agents x %d requests (allow %d%%, deny %d%%, ask %d%%), %d approvers, %s/%s, %d CPUs\n",
		o.Agents, o.Requests, o.AllowPct, o.DenyPct, 100-o.AllowPct-o.DenyPct, o.Approvers, runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	fmt.Fprintf(o.Out, "spool %s, audit log %s (setup %s)\n", r.spool, r.audit, time.Since(began).Round(time.Millisecond))
	r.run()
	r.print()
	if len(r.violations) > 0 || o.Keep {
		fmt.Fprintf(o.Out, "files kept in %s (and the spool in %s)\n", r.root, filepath.Dir(r.spool))
		return r.violations, r.root
	}
	os.RemoveAll(r.root)
	if r.shm != "" {
		os.RemoveAll(r.shm)
	}
	fmt.Fprintf(o.Out, "ok (whole run %s)\n", time.Since(began).Round(time.Millisecond))
	return nil, r.root
}

func setupLoad(o LoadOptions) (*loadRun, error) {
	root, err := os.MkdirTemp(o.Dir, "sluice-load-")
	if err != nil {
		return nil, err
	}
	r := &loadRun{o: o, root: root, project: filepath.Join(root, "project"),
		audit: filepath.Join(root, "state", "sluice", "audit.jsonl")}
	// The default spool lives in $XDG_RUNTIME_DIR, a tmpfs on systemd
	// machines: put it on one where there is one.
	runtimeDir := filepath.Join(root, "run")
	if fi, err := os.Stat("/dev/shm"); !o.DiskSpool && err == nil && fi.IsDir() {
		if shm, err := os.MkdirTemp("/dev/shm", "sluice-load-"); err == nil {
			runtimeDir, r.shm = shm, shm
		}
	}
	r.spool = filepath.Join(runtimeDir, "sluice")
	home := filepath.Join(root, "home")
	for _, d := range []string{runtimeDir, home, r.project, filepath.Join(root, "config"), filepath.Join(root, "state"),
		filepath.Join(root, "cache"), filepath.Join(root, "data")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return r, err
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return r, err
		}
	}
	policyFile := filepath.Join(root, "policy.toml")
	if err := os.WriteFile(policyFile, []byte(loadPolicy), 0o600); err != nil {
		return r, err
	}
	r.env = append(scrubbedEnv("TMUX"), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(root, "config"),
		"XDG_STATE_HOME="+filepath.Join(root, "state"), "XDG_CACHE_HOME="+filepath.Join(root, "cache"),
		"XDG_DATA_HOME="+filepath.Join(root, "data"), "XDG_RUNTIME_DIR="+runtimeDir,
		"SLUICE_SPOOL="+r.spool, "SLUICE_AUDIT="+r.audit, "SLUICE_POLICY="+policyFile)
	if r.bin, err = sluiceProgram(o.Bin); err != nil {
		return r, err
	}
	// The policy must load as written: a typo would make the mix wrong.
	if out, err := r.command(context.Background(), "policy", "lint", policyFile).CombinedOutput(); err != nil {
		return r, fmt.Errorf("sluice policy lint: %v\n%s", err, out)
	}
	// The person approves each ask request, twice at once for every
	// DupEvery'th.
	var asks atomic.Int64
	r.person = &Person{Sluice: r.command, Poll: o.Poll, Limit: o.Approvers, Decide: func(p Pending) [][]string {
		if !strings.HasPrefix(p.Command, "printf 'ask-") {
			return nil
		}
		n := asks.Add(1)
		if o.DupEvery > 0 && n%int64(o.DupEvery) == 0 {
			return [][]string{{"approve", p.ID}, {"approve", p.ID}}
		}
		return [][]string{{"approve", p.ID}}
	}}
	return r, nil
}

// command is a sluice process in the run's environment, run in the project.
func (r *loadRun) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, r.bin, args...)
	cmd.Env, cmd.Dir = r.env, r.project
	return cmd
}

// mix is agent a's requests, in a shuffled order fixed by the seed, with
// exactly AllowPct/DenyPct of them allowed/denied.
func (r *loadRun) mix(a int) []loadKind {
	ks := make([]loadKind, r.o.Requests)
	nAllow, nDeny := r.o.Requests*r.o.AllowPct/100, r.o.Requests*r.o.DenyPct/100
	for i := range ks {
		switch {
		case i < nAllow:
			ks[i] = loadAllow
		case i < nAllow+nDeny:
			ks[i] = loadDeny
		default:
			ks[i] = loadAsk
		}
	}
	rng := rand.New(rand.NewPCG(r.o.Seed, uint64(a)))
	rng.Shuffle(len(ks), func(i, j int) { ks[i], ks[j] = ks[j], ks[i] })
	return ks
}

// agent runs agent a's requests one after the other into out.
func (r *loadRun) agent(ctx context.Context, a int, out []loadSample, done *atomic.Int64) {
	for n, k := range r.mix(a) {
		if ctx.Err() != nil {
			return
		}
		cmdline, tag := loadCommand(k, a, n)
		cmd := r.command(ctx, "run", "--json", "--agent", fmt.Sprintf("load-%d", a), "--", cmdline)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		_ = cmd.Run()
		s := loadSample{agent: a, n: n, kind: k, cmd: cmdline, tag: tag, took: time.Since(start),
			Told: Told{Name: fmt.Sprintf("agent %d request %d (%s)", a, n, k), Exit: -1, Stderr: strings.TrimSpace(stderr.String())}}
		if cmd.ProcessState != nil {
			s.Exit = cmd.ProcessState.ExitCode()
		}
		if b := bytes.TrimSpace(stdout.Bytes()); len(b) > 0 {
			if res, err := queue.DecodeResult(b); err == nil {
				s.Result = res
			} else {
				s.Stderr += fmt.Sprintf(" (decode the result it printed: %v)", err)
			}
		}
		out[n] = s
		done.Add(1)
	}
}

// startServe starts the engine and waits until it watches the spool.
func (r *loadRun) startServe() (*Proc, error) {
	return LaunchServe(r.command(context.Background(), serveArgs(r.o.MaxAuto)...))
}

func (r *loadRun) run() {
	g, err := r.startServe()
	if err != nil {
		r.fail("%v", err)
		return
	}
	defer func() {
		if !g.Exited() {
			g.KillGroup()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), r.o.Timeout)
	defer cancel()
	personCtx, stopPerson := context.WithCancel(ctx)
	defer stopPerson()
	var person sync.WaitGroup
	person.Go(func() { r.person.Run(personCtx) })

	samples := make([][]loadSample, r.o.Agents)
	var done atomic.Int64
	start := time.Now()
	var agents sync.WaitGroup
	for a := range r.o.Agents {
		samples[a] = make([]loadSample, r.o.Requests)
		agents.Go(func() { r.agent(ctx, a, samples[a], &done) })
	}
	progressDone := make(chan struct{})
	go func() {
		total := int64(r.o.Agents * r.o.Requests)
		t := time.NewTicker(15 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-progressDone:
				return
			case <-t.C:
				fmt.Fprintf(r.o.Out, "  %s: %d/%d requests answered\n", time.Since(start).Round(time.Second), done.Load(), total)
			}
		}
	}()
	agents.Wait()
	r.elapsed = time.Since(start)
	close(progressDone)
	stopPerson()
	person.Wait()
	for _, s := range samples {
		r.samples = append(r.samples, s...)
	}
	if ctx.Err() != nil {
		r.fail("the load did not finish within -timeout %s (%d of %d requests answered)", r.o.Timeout, done.Load(), r.o.Agents*r.o.Requests)
	}

	// The engine: alive after the load, its peak RSS, then a clean stop.
	if g.Exited() {
		r.fail("sluice serve died during the load: %v", g.Cmd.ProcessState)
	} else {
		r.engineRSS, r.rssNote = peakRSS(g.Pid())
		if err := g.StopWithin(10 * time.Second); err != nil {
			r.fail("%v", err)
		} else if ps := g.Cmd.ProcessState; !ps.Success() {
			r.fail("sluice serve exited with %v after SIGTERM", ps)
		}
	}
	if ps := g.Cmd.ProcessState; ps != nil {
		r.engineCPU = ps.UserTime() + ps.SystemTime()
	}
	r.check(g.Stderr.String())
}
