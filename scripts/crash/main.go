// Command crash is sluice's crash-recovery suite (make crash): it kills the
// engine, 'sluice serve', with SIGKILL at many random moments while agents
// keep submitting requests, starts a new engine after each kill, and then
// checks that nothing was lost and nothing ran twice.
//
// Run it from the repository root:
//
//	go run ./scripts/crash              # 200 kills, 1-2 minutes on 2 cores
//	go run ./scripts/crash -quick       # 20 kills, a smoke test
//	go run ./scripts/crash -kills 500 -writers 16 -seed 42
//
// It builds bin/sluice's equivalent once (CGO_ENABLED=0 go build) into a
// temporary directory (on /dev/shm when there is one), which also holds the
// spool, the audit log, the policy, HOME and the XDG directories of every
// process it starts, so it never touches your own spool or log.
//
// The load: -writers goroutines each loop on 'sluice run --json -- CMD',
// where CMD appends its own request id ($SLUICE_REQUEST_ID) to a marker
// file and then sleeps. A policy file sorts them by their first word:
//
//	echo auto ID >> mark; sleep S      allowed by the policy (S short, or 1-3 s)
//	echo deny ID >> mark               denied by the policy
//	echo ask ID >> mark; sleep S       asks: an approver approves it with
//	                                   'sluice approve ID' (its own process),
//	                                   or, for some, refuses it ('sluice deny')
//
// The approver polls 'sluice ls --json' and is never killed; only the
// engine is. Each cycle waits until the engine has served a request (a
// policy decision in the audit log: that is the recovery time after the
// previous kill), lets it work for a random -min-gap to -max-gap (20-300
// ms; for a fraction -long of the kills, -max-gap to -long-gap, up to 4 s,
// so that long runs finish too), and kills its process group with SIGKILL.
// A fraction -early of the kills instead come at a random moment of the
// engine's first -early-window (150 ms), whether or not it has served
// anything yet, to hit its start-up (the rescan that answers the dead
// engine's claims interrupted). The commands an engine started run in
// their own sessions and may outlive it; that is allowed (they ran once).
//
// After the last kill the writers stop, every 'sluice run' is waited for,
// and the last engine is stopped with SIGTERM. Then it checks, for every
// request (every id in the writers' JSON results, the spool, the marker
// file and the audit log):
//
//   - it has exactly one result, out/<id>.json, and its 'sluice run'
//     printed that result and exited with the matching status (the
//     command's 0, 126 denied, 125 interrupted, 123 stopped);
//   - its status is one the request can end with: auto: done, interrupted
//     (never started: the marker must not hold it, the audit log has no
//     'started') or stopped (started: a 'started' event); deny: denied or
//     interrupted; approved: done; refused:
//     denied (never expired, invalid, failed, timeout or killed, and an
//     approved request is never interrupted: its approver did not die);
//   - the marker file holds its id at most once (no command ran twice),
//     exactly once when it is done, never when it was denied; and the
//     audit log has at most one 'started' event for it, and one before any
//     run (a command that wrote the marker has a 'started' event);
//   - the audit log tells the same story as the result: done has a
//     'finished' event, denied an 'auto_denied' or 'denied', interrupted an
//     'interrupted';
//   - nothing is left in new/, cur/ without a result, or bad/;
//   - 'sluice audit verify' exits 0 (torn tails left by a kill in the
//     middle of an append are repaired by the next append and count as ok).
//
// It prints the figures (requests, kills, results by status, duplicates,
// lost, interrupted, recovery times, run time) and exits 1, keeping the
// temporary directory, if any check fails.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// The kinds of request a writer submits.
const (
	kindAuto     = "auto"      // allowed by the policy, short
	kindAutoLong = "auto-long" // allowed by the policy, runs 1-3 s
	kindDeny     = "deny"      // denied by the policy
	kindAsk      = "ask"       // the policy asks; approved, short
	kindAskLong  = "ask-long"  // the policy asks; approved, runs 1-3 s
	kindAskDeny  = "ask-deny"  // the policy asks; refused by a person
)

// The note that tells the approver to refuse a request.
const refuseNote = "crash-test: refuse"

// weights is the mix of kinds, in per cent.
var weights = []struct {
	kind string
	pct  int
}{
	{kindAuto, 45}, {kindAutoLong, 12}, {kindDeny, 15}, {kindAsk, 15}, {kindAskLong, 7}, {kindAskDeny, 6},
}

type options struct {
	kills       int
	writers     int
	minGap      time.Duration
	maxGap      time.Duration
	early       float64
	long        float64
	longGap     time.Duration
	earlyWindow time.Duration
	seed        uint64
	dir         string
	bin         string
	keep        bool
	serveWait   time.Duration
	drainWait   time.Duration
	verbose     bool
	maxAuto     int
	quick       bool
	approvePoll time.Duration
}

func main() {
	var o options
	flag.IntVar(&o.kills, "kills", 200, "kill the engine `N` times")
	flag.IntVar(&o.writers, "writers", 12, "`N` writers submitting requests at once")
	flag.DurationVar(&o.minGap, "min-gap", 20*time.Millisecond, "shortest time an engine works before it is killed")
	flag.DurationVar(&o.maxGap, "max-gap", 300*time.Millisecond, "longest time an engine works before it is killed")
	flag.Float64Var(&o.long, "long", 0.1, "fraction of kills made after a long stretch, -max-gap to -long-gap, so that long runs can finish")
	flag.DurationVar(&o.longGap, "long-gap", 4*time.Second, "longest time an engine works before a long-stretch kill")
	flag.Float64Var(&o.early, "early", 0.2, "fraction of kills made at a random moment of the engine's start-up (-early-window), served or not")
	flag.DurationVar(&o.earlyWindow, "early-window", 150*time.Millisecond, "the start-up window of the early kills")
	flag.Uint64Var(&o.seed, "seed", 0, "random seed (default: from the clock; printed)")
	flag.StringVar(&o.dir, "dir", "", "parent of the temporary directory (default /dev/shm if present, else $TMPDIR)")
	flag.StringVar(&o.bin, "bin", "", "use this sluice binary instead of building one")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (it is always kept when a check fails)")
	flag.DurationVar(&o.serveWait, "serve-wait", 30*time.Second, "how long an engine may take to serve its first request after a kill")
	flag.DurationVar(&o.drainWait, "drain-wait", 2*time.Minute, "how long the writers may take to finish after the last kill")
	flag.IntVar(&o.maxAuto, "max-auto", 0, "pass --max-auto `N` to sluice serve (default: its own)")
	flag.DurationVar(&o.approvePoll, "approve-poll", 30*time.Millisecond, "how often the approver runs 'sluice ls --json'")
	flag.BoolVar(&o.verbose, "v", false, "log every kill")
	flag.BoolVar(&o.quick, "quick", false, "a smoke test: 20 kills, 6 writers")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "crash: takes no arguments")
		os.Exit(2)
	}
	if o.quick {
		o.kills, o.writers = 20, 6
	}
	if o.kills < 1 || o.writers < 1 || o.minGap < 0 || o.maxGap < o.minGap || o.early < 0 || o.long < 0 || o.early+o.long > 1 || o.earlyWindow <= 0 || o.longGap < o.maxGap {
		fmt.Fprintln(os.Stderr, "crash: bad flags: need -kills >= 1, -writers >= 1, 0 <= -min-gap <= -max-gap, -early and -long fractions adding up to at most 1, -early-window > 0, -long-gap >= -max-gap")
		os.Exit(2)
	}
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	os.Exit(run(o))
}

func run(o options) int {
	start := time.Now()
	h, err := setup(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "crash: %v\n", err)
		if h != nil && h.work != "" {
			fmt.Fprintf(os.Stderr, "crash: files kept in %s\n", h.work)
		}
		return 1
	}
	fmt.Printf("crash: seed %d, %d kills, %d writers, work dir %s\n", o.seed, o.kills, o.writers, h.work)
	h.runLoad()
	h.check()
	h.report(time.Since(start))
	if len(h.violations) > 0 || o.keep {
		fmt.Printf("files kept in %s (serve.log: the engines' logs)\n", h.work)
	} else {
		os.RemoveAll(h.work)
	}
	if len(h.violations) > 0 {
		return 1
	}
	return 0
}

// harness is one run of the suite.
type harness struct {
	o         options
	bin       string
	work      string // the temporary directory, also the requests' cwd
	spool     string
	auditPath string
	mark      string
	serveLog  *os.File
	env       []string
	rng       *rand.Rand // the kill loop's

	mu         sync.Mutex
	inFlight   map[*exec.Cmd]bool // the writers' 'sluice run's
	current    *engine            // the engine running now
	runs       []*runRecord
	decisions  []*decisionRecord
	violations []string

	kills      int
	earlyKills int
	longKills  int
	recoveries []time.Duration // kill -> first request served by the next engine
	// recoveries of the kills that left a request the policy decides
	// alone waiting in new/: the engine had work from its first moment
	recoveriesWaiting []time.Duration
	firstServed       time.Duration // start of the first engine -> its first request served
	loadTime          time.Duration // first engine start to last run answered

	// filled in by check
	stats checkStats
}

type runRecord struct {
	kind   string
	cmd    string
	exit   int
	stdout []byte
	stderr string
	res    *queue.Result
	err    error
}

type decisionRecord struct {
	id     string
	refuse bool
	exit   int
	stderr string
}

func (h *harness) fail(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.violations = append(h.violations, fmt.Sprintf(format, args...))
}

func setup(o options) (*harness, error) {
	parent := o.dir
	if parent == "" {
		if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
			parent = "/dev/shm"
		}
	}
	work, err := os.MkdirTemp(parent, "sluice-crash-")
	if err != nil {
		return nil, err
	}
	h := &harness{o: o, work: work, rng: rand.New(rand.NewPCG(o.seed, 1)), inFlight: map[*exec.Cmd]bool{}}
	h.spool = filepath.Join(work, "spool")
	h.auditPath = filepath.Join(work, "audit.jsonl")
	h.mark = filepath.Join(work, "mark")
	// Made before the engine starts: the runs are confined to the project
	// (the work directory), which also holds the spool and the audit log,
	// secret paths; in a directory that holds one, a confined run may
	// change files but not create them.
	if err := os.WriteFile(h.mark, nil, 0o644); err != nil {
		return nil, err
	}
	h.bin = o.bin
	if h.bin == "" {
		h.bin = filepath.Join(work, "sluice")
		if err := build(h.bin); err != nil {
			return h, err
		}
	} else if h.bin, err = filepath.Abs(h.bin); err != nil {
		return h, err
	}
	policyFile := filepath.Join(work, "policy.toml")
	// The marker is written in the project (the work directory, the
	// requests' cwd), which the rule for the command covers.
	const policyText = `# crash test: sorted by the first word after echo
[[rule]]
action = "allow"
command = "echo auto *"

[[rule]]
action = "ask"
command = "echo ask *"

[[rule]]
action = "deny"
command = "echo deny *"
`
	if err := os.WriteFile(policyFile, []byte(policyText), 0o600); err != nil {
		return h, err
	}
	for _, d := range []string{"home", "config", "state"} {
		if err := os.Mkdir(filepath.Join(work, d), 0o700); err != nil {
			return h, err
		}
	}
	env := []string{}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "SLUICE_") || strings.HasPrefix(k, "XDG_") || k == "HOME" || k == "NO_COLOR" {
			continue
		}
		env = append(env, kv)
	}
	h.env = append(env,
		"SLUICE_SPOOL="+h.spool,
		"SLUICE_AUDIT="+h.auditPath,
		"SLUICE_POLICY="+policyFile,
		"HOME="+filepath.Join(work, "home"),
		"XDG_CONFIG_HOME="+filepath.Join(work, "config"),
		"XDG_STATE_HOME="+filepath.Join(work, "state"),
		"XDG_RUNTIME_DIR=",
		"NO_COLOR=1",
	)
	if h.serveLog, err = os.Create(filepath.Join(work, "serve.log")); err != nil {
		return h, err
	}
	// The policy must sort the commands as intended, or every figure lies.
	for kind, want := range map[string]string{kindAuto: "ALLOW", kindDeny: "DENY", kindAsk: "ASK"} {
		out, _ := h.command("check", "--", commandFor(kind, "0.1")).CombinedOutput()
		if !bytes.HasPrefix(out, []byte(want+" ")) {
			return h, fmt.Errorf("the policy does not %s %q:\n%s", strings.ToLower(want), commandFor(kind, "0.1"), out)
		}
	}
	return h, nil
}

// build builds the sluice binary from the module this program is in.
func build(out string) error {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(gomod))
	if mod == "" || mod == os.DevNull {
		return errors.New("not inside the sluice module: run it from the repository root")
	}
	root := filepath.Dir(mod)
	cmd := exec.Command("go", "build", "-o", out, "./cmd/sluice")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/sluice: %v\n%s", err, b)
	}
	return nil
}

// command is a sluice process in the test's environment, run in the work
// directory.
func (h *harness) command(args ...string) *exec.Cmd {
	cmd := exec.Command(h.bin, args...)
	cmd.Env = h.env
	cmd.Dir = h.work
	return cmd
}

// commandFor is the command line of a request of kind; sleep is the
// run time in seconds.
func commandFor(kind, sleep string) string {
	word := kind
	switch kind {
	case kindAutoLong:
		word = kindAuto
	case kindAskLong, kindAskDeny:
		word = kindAsk
	case kindDeny:
		return `echo deny "$SLUICE_REQUEST_ID" >> mark`
	}
	return fmt.Sprintf(`echo %s "$SLUICE_REQUEST_ID" >> mark; sleep %s`, word, sleep)
}

// engine is one 'sluice serve' process.
type engine struct {
	cmd     *exec.Cmd
	started time.Time
	done    chan struct{}
}

func (h *harness) startEngine() (*engine, error) {
	args := []string{"serve"}
	if h.o.maxAuto > 0 {
		args = append(args, "--max-auto", fmt.Sprint(h.o.maxAuto))
	}
	cmd := h.command(args...)
	cmd.Stdout, cmd.Stderr = h.serveLog, h.serveLog
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	e := &engine{cmd: cmd, done: make(chan struct{})}
	e.started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		cmd.Wait()
		close(e.done)
	}()
	h.mu.Lock()
	h.current = e
	h.mu.Unlock()
	return e, nil
}

func (e *engine) exited() bool {
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}

// kill kills the engine's process group with SIGKILL and waits for it;
// it returns the moment of the kill.
func (e *engine) kill() time.Time {
	at := time.Now()
	syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
	<-e.done
	return at
}

// stop asks the engine to stop cleanly.
func (e *engine) stop() error {
	e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.done:
		return nil
	case <-time.After(15 * time.Second):
		syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
		<-e.done
		return errors.New("sluice serve did not stop within 15 s of SIGTERM")
	}
}

// runLoad runs the writers, the approver and the kill loop, then drains.
func (h *harness) runLoad() {
	stopWriters := make(chan struct{})
	var writers sync.WaitGroup
	for i := range h.o.writers {
		rng := rand.New(rand.NewPCG(h.o.seed, uint64(i)+100))
		writers.Go(func() { h.writer(rng, stopWriters) })
	}
	stopApprover := make(chan struct{})
	var approver sync.WaitGroup
	approver.Go(func() { h.approver(stopApprover) })

	// Interrupted, it leaves no engine behind (it is in a process group
	// of its own, out of reach of the terminal's ^C) and no writer waiting.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		sig, ok := <-sigs
		if !ok {
			return
		}
		h.mu.Lock()
		if h.current != nil {
			syscall.Kill(-h.current.cmd.Process.Pid, syscall.SIGKILL)
		}
		for cmd := range h.inFlight {
			cmd.Process.Signal(syscall.SIGTERM)
		}
		h.mu.Unlock()
		fmt.Fprintf(os.Stderr, "crash: %v: stopped; files kept in %s\n", sig, h.work)
		os.Exit(130)
	}()

	loadStart := time.Now()
	eng, err := h.startEngine()
	if err != nil {
		h.fail("start sluice serve: %v", err)
		close(stopWriters)
		close(stopApprover)
		writers.Wait()
		approver.Wait()
		return
	}
	aw := &auditWatcher{path: h.auditPath}
	at, served := h.waitServed(eng, aw, eng.started)
	if served {
		h.firstServed = at.Sub(eng.started)
	}
	for k := 0; k < h.o.kills && served; k++ {
		dice := h.rng.Float64()
		early := dice < h.o.early
		switch {
		case early:
			sleepUntil(eng.started.Add(time.Duration(h.rng.Int64N(int64(h.o.earlyWindow)))))
		case dice < h.o.early+h.o.long:
			h.longKills++
			time.Sleep(h.o.maxGap + time.Duration(h.rng.Int64N(int64(h.o.longGap-h.o.maxGap)+1)))
		default:
			time.Sleep(h.o.minGap + time.Duration(h.rng.Int64N(int64(h.o.maxGap-h.o.minGap)+1)))
		}
		if eng.exited() {
			h.fail("kill %d: sluice serve had exited on its own before the kill (see serve.log); stopping the kills", k+1)
			break
		}
		killedAt := eng.kill()
		aw.poll() // the dead engine's last lines
		h.kills++
		if early {
			h.earlyKills++
		}
		fmt.Fprintf(h.serveLog, "--- crash: SIGKILL %d (early %v) at %s\n", k+1, early, killedAt.Format(time.RFC3339Nano))
		if eng, err = h.startEngine(); err != nil {
			h.fail("start sluice serve after kill %d: %v", k+1, err)
			break
		}
		if !early || k == h.o.kills-1 {
			// The recovery time: from the kill to the next request served.
			// An engine that serves nothing stops the kills: the checks
			// will say what is stuck.
			waiting := h.policyWaiting()
			if at, served = h.waitServed(eng, aw, killedAt); served {
				h.recoveries = append(h.recoveries, at.Sub(killedAt))
				if waiting {
					h.recoveriesWaiting = append(h.recoveriesWaiting, at.Sub(killedAt))
				}
			}
		}
		if h.o.verbose {
			fmt.Printf("kill %d/%d early=%v\n", k+1, h.o.kills, early)
		} else if (k+1)%50 == 0 {
			fmt.Printf("crash: %d kills, %s\n", k+1, time.Since(loadStart).Round(time.Second))
		}
	}
	close(stopWriters)
	drained := make(chan struct{})
	go func() { writers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(h.o.drainWait):
		h.fail("writers still waiting %s after the last kill: some requests were never answered (lost)", h.o.drainWait)
		// SIGTERM the stuck 'sluice run's: they withdraw what nobody claimed.
		h.mu.Lock()
		for cmd := range h.inFlight {
			cmd.Process.Signal(syscall.SIGTERM)
		}
		h.mu.Unlock()
		<-drained
	}
	h.loadTime = time.Since(loadStart)
	close(stopApprover)
	approver.Wait()
	if eng != nil {
		if err := eng.stop(); err != nil {
			h.fail("%v", err)
		}
	}
	// A command orphaned by a kill may still be finishing its sleep; its
	// marker line was written first, but give a straggler a moment.
	time.Sleep(300 * time.Millisecond)
}

// policyWaiting reports whether new/ holds a request the policy decides
// alone (auto or deny). It only reads files: no locks that could get in
// the next engine's way.
func (h *harness) policyWaiting() bool {
	dir := filepath.Join(h.spool, "new")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		var req struct {
			Command string `json:"command"`
		}
		if json.Unmarshal(data, &req) == nil && (strings.HasPrefix(req.Command, "echo auto ") || strings.HasPrefix(req.Command, "echo deny ")) {
			return true
		}
	}
	return false
}

func sleepUntil(t time.Time) {
	if d := time.Until(t); d > 0 {
		time.Sleep(d)
	}
}

// waitServed waits until an engine decides a request on its own (an
// auto_allowed or auto_denied line in the audit log, stamped after since)
// and returns that line's time.
func (h *harness) waitServed(eng *engine, aw *auditWatcher, since time.Time) (time.Time, bool) {
	deadline := time.Now().Add(h.o.serveWait)
	for time.Now().Before(deadline) {
		for _, ev := range aw.poll() {
			if (ev.Event == "auto_allowed" || ev.Event == "auto_denied") && !ev.TS.Before(since) {
				return ev.TS, true
			}
		}
		if eng.exited() {
			h.fail("sluice serve exited on its own (see serve.log)")
			return time.Time{}, false
		}
		time.Sleep(2 * time.Millisecond)
	}
	h.fail("sluice serve served nothing within %s of starting (-serve-wait); stopping the kills", h.o.serveWait)
	return time.Time{}, false
}

// writer submits requests until stop is closed.
func (h *harness) writer(rng *rand.Rand, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		kind := pickKind(rng)
		sleep := fmt.Sprintf("0.%02d", rng.IntN(10))
		if kind == kindAutoLong || kind == kindAskLong {
			sleep = fmt.Sprintf("%d.%d", 1+rng.IntN(2), rng.IntN(10))
		}
		line := commandFor(kind, sleep)
		args := []string{"run", "--json", "--expires", "10m"}
		if kind == kindAskDeny {
			args = append(args, "--note", refuseNote)
		}
		cmd := h.command(append(args, "--", line)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Start()
		if err == nil {
			h.mu.Lock()
			h.inFlight[cmd] = true
			h.mu.Unlock()
			err = cmd.Wait()
			h.mu.Lock()
			delete(h.inFlight, cmd)
			h.mu.Unlock()
		}
		r := &runRecord{kind: kind, cmd: line, stdout: stdout.Bytes(), stderr: stderr.String(), exit: -1}
		if cmd.ProcessState != nil {
			r.exit = cmd.ProcessState.ExitCode()
		}
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			r.err = err
		}
		if len(r.stdout) > 0 {
			r.res, err = queue.DecodeResult(bytes.TrimSpace(r.stdout))
			if err != nil && r.err == nil {
				r.err = fmt.Errorf("decode the result it printed: %w", err)
			}
		}
		h.mu.Lock()
		h.runs = append(h.runs, r)
		h.mu.Unlock()
	}
}

func pickKind(rng *rand.Rand) string {
	n := rng.IntN(100)
	for _, w := range weights {
		if n < w.pct {
			return w.kind
		}
		n -= w.pct
	}
	return kindAuto
}

// lsEntry is the part of a 'sluice ls --json' entry the approver reads.
type lsEntry struct {
	ID      string `json:"id"`
	State   string `json:"state"`
	Request *struct {
		Command string `json:"command"`
		Note    string `json:"note"`
	} `json:"request"`
}

// approver plays the person: it approves (or, for the requests noted so,
// denies) every request the policy asks about, each in its own process.
func (h *harness) approver(stop <-chan struct{}) {
	seen := map[string]bool{}
	var acts sync.WaitGroup
	defer acts.Wait()
	tick := time.NewTicker(h.o.approvePoll)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		out, err := h.command("ls", "--json").Output()
		if err != nil {
			h.fail("sluice ls --json: %v", err)
			continue
		}
		var list []lsEntry
		if err := json.Unmarshal(out, &list); err != nil {
			h.fail("sluice ls --json printed something that is not its JSON: %v", err)
			continue
		}
		for _, e := range list {
			if e.State != "pending" || e.Request == nil || seen[e.ID] || !strings.HasPrefix(e.Request.Command, "echo ask ") {
				continue
			}
			seen[e.ID] = true
			refuse := e.Request.Note == refuseNote
			acts.Go(func() { h.decide(e.ID, refuse) })
		}
	}
}

func (h *harness) decide(id string, refuse bool) {
	var cmd *exec.Cmd
	if refuse {
		cmd = h.command("deny", "--reason", "crash test", id)
	} else {
		cmd = h.command("approve", id)
	}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	cmd.Run()
	d := &decisionRecord{id: id, refuse: refuse, exit: -1, stderr: stderr.String()}
	if cmd.ProcessState != nil {
		d.exit = cmd.ProcessState.ExitCode()
	}
	h.mu.Lock()
	h.decisions = append(h.decisions, d)
	h.mu.Unlock()
}

// auditEvent is the part of an audit line the checks read.
type auditEvent struct {
	Seq    int       `json:"seq"`
	TS     time.Time `json:"ts"`
	ID     string    `json:"id"`
	Event  string    `json:"event"`
	Status string    `json:"status"`
}

// auditWatcher reads the lines appended to the audit log since it last
// looked. Lines that are not events (a torn tail) are skipped.
type auditWatcher struct {
	path    string
	off     int64
	partial []byte
}

func (a *auditWatcher) poll() []auditEvent {
	f, err := os.Open(a.path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(a.off, io.SeekStart); err != nil {
		return nil
	}
	data, _ := io.ReadAll(f)
	a.off += int64(len(data))
	data = append(a.partial, data...)
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		a.partial = data
		return nil
	}
	a.partial = slices.Clone(data[end+1:])
	return parseEvents(data[:end+1])
}

func parseEvents(data []byte) []auditEvent {
	var evs []auditEvent
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		var ev auditEvent
		if len(line) == 0 || json.Unmarshal(line, &ev) != nil || ev.Event == "" {
			continue
		}
		evs = append(evs, ev)
	}
	return evs
}

// checkStats are the figures the checks find.
type checkStats struct {
	requests     int
	byKind       map[string]int
	byKindStatus map[string]map[string]int
	byStatus     map[string]int
	duplicates   int // ids in the marker more than once, or started twice
	lost         int // requests without a result
	writersLost  int // 'sluice run's that ended without printing a result
	interrupted  int
	stopped      int // started, its engine killed part way
	markerLines  int
	repaired     int // audit_repaired lines: torn tails repaired
	auditLines   int
	verify       string
	approved     int
	refused      int
	litter       int // temporary files left in tmp/ and out/ by killed engines
}

func (h *harness) check() {
	st := &h.stats
	st.byKind, st.byStatus, st.byKindStatus = map[string]int{}, map[string]int{}, map[string]map[string]int{}

	// Every id the spool knows of, and where.
	dirIDs := map[string][]string{}
	for _, d := range []string{"new", "cur", "bad", "out", "tmp"} {
		entries, err := os.ReadDir(filepath.Join(h.spool, d))
		if err != nil {
			h.fail("read spool %s/: %v", d, err)
			continue
		}
		for _, e := range entries {
			name := e.Name()
			switch {
			case d == "tmp" || strings.HasSuffix(name, ".tmp"):
				st.litter++
			case d == "out" && (strings.HasSuffix(name, ".log") || strings.HasSuffix(name, ".wake")):
				if strings.HasSuffix(name, ".wake") {
					h.fail("out/%s: a wake FIFO left behind after its writer finished", name)
				}
			case d == "bad":
				h.fail("bad/%s: a request was quarantined", name)
			default:
				id, ok := strings.CutSuffix(name, ".json")
				if !ok || !queue.ValidID(id) {
					h.fail("%s/%s: an unexpected file in the spool", d, name)
					continue
				}
				dirIDs[id] = append(dirIDs[id], d)
			}
		}
	}

	// What each writer was told.
	byID := map[string]*runRecord{}
	for _, r := range h.runs {
		if r.res == nil {
			st.writersLost++
			h.fail("a 'sluice run' (%s) exited %d without a result: err %v, stderr %q", r.kind, r.exit, r.err, r.stderr)
			continue
		}
		if r.err != nil {
			h.fail("sluice run %s: %v", r.res.ID, r.err)
		}
		if prev := byID[r.res.ID]; prev != nil {
			h.fail("id %s was given to two requests", r.res.ID)
		}
		byID[r.res.ID] = r
	}

	// The marker file.
	marks := map[string]int{}
	markWord := map[string]string{}
	if data, err := os.ReadFile(h.mark); err != nil && !errors.Is(err, os.ErrNotExist) {
		h.fail("read the marker: %v", err)
	} else {
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			word, id, ok := strings.Cut(sc.Text(), " ")
			if !ok || !queue.ValidID(id) {
				h.fail("marker line %q is not 'WORD ID'", sc.Text())
				continue
			}
			st.markerLines++
			marks[id]++
			markWord[id] = word
		}
	}

	// The audit log, whole.
	started, events := map[string]int{}, map[string][]string{}
	if data, err := os.ReadFile(h.auditPath); err != nil {
		h.fail("read the audit log: %v", err)
	} else {
		for _, ev := range parseEvents(data) {
			st.auditLines++
			switch ev.Event {
			case "audit_repaired":
				st.repaired++
			case "started":
				started[ev.ID]++
			}
			if queue.ValidID(ev.ID) {
				events[ev.ID] = append(events[ev.ID], ev.Event)
			}
		}
	}
	out, err := h.command("audit", "verify").CombinedOutput()
	st.verify = strings.TrimSpace(string(out))
	if err != nil {
		h.fail("sluice audit verify failed: %v: %s", err, st.verify)
	}

	// Every id anyone saw.
	ids := map[string]bool{}
	for id := range dirIDs {
		ids[id] = true
	}
	for id := range byID {
		ids[id] = true
	}
	for id := range marks {
		ids[id] = true
	}
	for id := range events {
		ids[id] = true
	}
	decided := map[string]*decisionRecord{}
	for _, d := range h.decisions {
		ids[d.id] = true
		decided[d.id] = d
		if d.refuse {
			st.refused++
		} else {
			st.approved++
		}
	}
	sorted := make([]string, 0, len(ids))
	for id := range ids {
		sorted = append(sorted, id)
	}
	sort.Strings(sorted)
	st.requests = len(sorted)

	for _, id := range sorted {
		h.checkOne(id, dirIDs[id], byID[id], decided[id], marks[id], markWord[id], started[id], events[id])
	}
}

func (h *harness) checkOne(id string, dirs []string, r *runRecord, d *decisionRecord, marks int, markWord string, started int, events []string) {
	st := &h.stats
	res, err := spoolResult(h.spool, id)
	if err != nil {
		st.lost++
		h.fail("%s: no result (%v); in %v; marker %d; audit %v", id, err, dirs, marks, events)
		return
	}
	status := string(res.Status)
	st.byStatus[status]++
	if slices.Contains(dirs, "new") {
		h.fail("%s: answered %s but still pending in new/", id, status)
	}
	kind := "?"
	if r != nil {
		kind = r.kind
	} else {
		h.fail("%s: a result (%s) no writer received", id, status)
	}
	st.byKind[kind]++
	if st.byKindStatus[kind] == nil {
		st.byKindStatus[kind] = map[string]int{}
	}
	st.byKindStatus[kind][status]++

	if marks > 1 || started > 1 {
		st.duplicates++
		h.fail("%s (%s): ran more than once: %d marker lines, %d started events; audit %v", id, kind, marks, started, events)
	}
	if marks > 0 && started == 0 {
		h.fail("%s (%s): its command ran (marker) but the audit log has no started event: %v", id, kind, events)
	}
	if r != nil {
		if r.res.Status != res.Status {
			h.fail("%s: its writer was told %s, the spool says %s", id, r.res.Status, status)
		}
		if want := exitFor(res); r.exit != want {
			h.fail("%s (%s): sluice run exited %d for status %s, want %d; stderr %q", id, kind, r.exit, status, want, r.stderr)
		}
		if res.Status == queue.StatusInterrupted && !strings.Contains(r.stderr, "not run: interrupted") {
			h.fail("%s: interrupted, but sluice run's stderr does not say so: %q", id, r.stderr)
		}
		if res.Status == queue.StatusStopped && !strings.Contains(r.stderr, "stopped") {
			h.fail("%s: stopped, but sluice run's stderr does not say so: %q", id, r.stderr)
		}
	}
	if d != nil && d.exit != 0 {
		h.fail("%s: sluice %s exited %d: %q", id, map[bool]string{true: "deny", false: "approve"}[d.refuse], d.exit, d.stderr)
	}

	// How each kind may end.
	var allowed []queue.Status
	switch kind {
	case kindAuto, kindAutoLong:
		allowed = []queue.Status{queue.StatusDone, queue.StatusInterrupted, queue.StatusStopped}
	case kindDeny:
		allowed = []queue.Status{queue.StatusDenied, queue.StatusInterrupted}
	case kindAsk, kindAskLong:
		allowed = []queue.Status{queue.StatusDone}
	case kindAskDeny:
		allowed = []queue.Status{queue.StatusDenied}
	}
	if !slices.Contains(allowed, res.Status) {
		h.fail("%s (%s): status %s, want one of %v; reason %q; audit %v", id, kind, status, allowed, res.Reason, events)
	}
	switch res.Status {
	case queue.StatusDone:
		if marks != 1 {
			h.fail("%s (%s): done, but its id is in the marker %d times", id, kind, marks)
		}
		if res.ExitCode == nil || *res.ExitCode != 0 {
			h.fail("%s (%s): done with exit code %v, want 0; output %q", id, kind, res.ExitCode, res.OutputTail)
		}
		if !slices.Contains(events, "finished") {
			h.fail("%s (%s): done, but the audit log has no finished event: %v", id, kind, events)
		}
		wantBy := queue.ByPolicy
		if kind == kindAsk || kind == kindAskLong {
			wantBy = queue.ByHuman
		}
		if res.DecidedBy != wantBy {
			h.fail("%s (%s): decided by %q, want %q", id, kind, res.DecidedBy, wantBy)
		}
	case queue.StatusDenied:
		if marks != 0 {
			h.fail("%s (%s): denied, but its command wrote the marker", id, kind)
		}
		want := "auto_denied"
		if kind == kindAskDeny {
			want = "denied"
		}
		if !slices.Contains(events, want) {
			h.fail("%s (%s): denied, but the audit log has no %s event: %v", id, kind, want, events)
		}
	case queue.StatusInterrupted:
		// "Not run": true only of a command that never started.
		st.interrupted++
		if marks > 0 || started > 0 {
			h.fail("%s (%s): told interrupted (not run), but it started (%d marker lines, %d started events)", id, kind, marks, started)
		}
		if !slices.Contains(events, "interrupted") {
			h.fail("%s (%s): interrupted, but the audit log has no interrupted event: %v", id, kind, events)
		}
	case queue.StatusStopped:
		st.stopped++
		if started == 0 {
			h.fail("%s (%s): told stopped (started), but the audit log has no started event: %v", id, kind, events)
		}
	}
	if markWord != "" && marks > 0 && kind != "?" && !strings.HasPrefix(kind, markWord) {
		h.fail("%s (%s): the marker line says %q", id, kind, markWord)
	}
}

// spoolResult reads out/<id>.json.
func spoolResult(spool, id string) (*queue.Result, error) {
	data, err := os.ReadFile(filepath.Join(spool, "out", id+".json"))
	if err != nil {
		return nil, err
	}
	return queue.DecodeResult(data)
}

// exitFor is the exit status 'sluice run' must give for res.
func exitFor(res *queue.Result) int {
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

// counts is "a 1, b 2" for m, sorted by key.
func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// durations summarises ds: max, p50, p90 and how many.
func durations(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none measured"
	}
	rs := slices.Clone(ds)
	slices.Sort(rs)
	pct := func(p int) time.Duration { return rs[max((len(rs)*p+99)/100, 1)-1].Round(time.Millisecond) }
	return fmt.Sprintf("max %s, p50 %s, p90 %s (%d measured)", pct(100), pct(50), pct(90), len(rs))
}

func (h *harness) report(total time.Duration) {
	st := &h.stats
	fmt.Println()
	fmt.Println("crash recovery: sluice serve killed with SIGKILL under load")
	row := func(k string, v any) { fmt.Printf("  %-34s %v\n", k, v) }
	row("requests", st.requests)
	kinds := []string{}
	for _, w := range weights {
		kinds = append(kinds, w.kind)
	}
	for _, k := range append(kinds, "?") {
		if st.byKind[k] == 0 {
			continue
		}
		row("  "+k, fmt.Sprintf("%d: %s", st.byKind[k], counts(st.byKindStatus[k])))
	}
	row("kills (SIGKILL)", fmt.Sprintf("%d (%d in an engine's first %s, %d after %s-%s, the rest after %s-%s)",
		h.kills, h.earlyKills, h.o.earlyWindow, h.longKills, h.o.maxGap, h.o.longGap, h.o.minGap, h.o.maxGap))
	row("results by status", counts(st.byStatus))
	row("approved / refused by a person", fmt.Sprintf("%d / %d", st.approved, st.refused))
	row("duplicates (ran twice)", st.duplicates)
	row("lost (no result)", st.lost)
	row("sluice runs without a result", st.writersLost)
	row("interrupted", fmt.Sprintf("%d (never started); stopped %d (started)", st.interrupted, st.stopped))
	row("marker lines", st.markerLines)
	row("recovery: kill to next served", durations(h.recoveries))
	row("  with a policy request waiting", durations(h.recoveriesWaiting))
	row("first engine: start to served", h.firstServed.Round(time.Millisecond))
	row("audit lines", fmt.Sprintf("%d (%d torn tails repaired)", st.auditLines, st.repaired))
	row("audit verify", st.verify)
	row("temporary files left by kills", st.litter)
	row("load time / run time", fmt.Sprintf("%s / %s", h.loadTime.Round(time.Second), total.Round(time.Second)))
	if len(h.violations) == 0 {
		fmt.Println("OK: every request has exactly one result, nothing ran twice, the audit log verifies")
		return
	}
	fmt.Printf("FAILED: %d violations\n", len(h.violations))
	for i, v := range h.violations {
		if i == 50 {
			fmt.Printf("  ... and %d more\n", len(h.violations)-50)
			break
		}
		fmt.Println("  - " + v)
	}
}
