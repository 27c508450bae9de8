//go:build unix

// Crash is sluice's crash-recovery suite (make crash; scripts/crash is
// its flags, TestCrashQuick its quick form in make test): it kills the
// engine, 'sluice serve', with SIGKILL at many random moments while agents
// keep submitting requests, starts a new engine after each kill, and then
// checks that nothing was lost and nothing ran twice.
//
// It runs the programs Programs builds (or CrashOptions.Bin) in a
// temporary directory (on /dev/shm when there is one), which holds the
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
// The approver (a Person) polls 'sluice ls --json' and is never killed; only the
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
// and the last engine is stopped with SIGTERM. Then it checks, with
// CheckOnce, CheckTold and CheckChain and the kinds' own rules, for every
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
// lost, interrupted, recovery times, run time) and returns the failures,
// keeping the temporary directory if there are any.

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// The kinds of request a crash writer submits.
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

// crashWeights is the mix of kinds, in per cent.
var crashWeights = []struct {
	kind string
	pct  int
}{
	{kindAuto, 45}, {kindAutoLong, 12}, {kindDeny, 15}, {kindAsk, 15}, {kindAskLong, 7}, {kindAskDeny, 6},
}

// CrashOptions are the crash harness's knobs (scripts/crash's flags).
type CrashOptions struct {
	Kills       int           // kill the engine N times
	Writers     int           // writers submitting requests at once
	MinGap      time.Duration // shortest time an engine works before it is killed
	MaxGap      time.Duration // longest time an engine works before it is killed
	Early       float64       // fraction of kills at a random moment of the engine's start-up (EarlyWindow)
	EarlyWindow time.Duration
	Long        float64 // fraction of kills after a long stretch, MaxGap to LongGap
	LongGap     time.Duration
	Seed        uint64        // 0: from the clock
	Dir         string        // parent of the work directory ("": /dev/shm if there, else $TMPDIR)
	Bin         string        // a sluice binary to run instead of Programs' ("": built)
	Keep        bool          // keep the work directory (always kept when a check fails)
	ServeWait   time.Duration // how long an engine may take to serve its first request after a kill
	DrainWait   time.Duration // how long the writers may take to finish after the last kill
	Verbose     bool          // say every kill
	MaxAuto     int           // --max-auto for sluice serve (0: its own)
	ApprovePoll time.Duration // how often the person runs 'sluice ls --json'
	Out         io.Writer     // the progress and the report (nil: stdout)
}

// CrashDefaults are make crash's: 200 kills, 12 writers.
func CrashDefaults() CrashOptions {
	return CrashOptions{Kills: 200, Writers: 12, MinGap: 20 * time.Millisecond, MaxGap: 300 * time.Millisecond,
		Early: 0.2, EarlyWindow: 150 * time.Millisecond, Long: 0.1, LongGap: 4 * time.Second,
		ServeWait: 30 * time.Second, DrainWait: 2 * time.Minute, ApprovePoll: 30 * time.Millisecond}
}

// Quick makes o a smoke run: 20 kills, 6 writers (make test, -quick).
func (o CrashOptions) Quick() CrashOptions {
	o.Kills, o.Writers = 20, 6
	return o
}

// Valid says what is wrong with o, if anything.
func (o CrashOptions) Valid() error {
	if o.Kills < 1 || o.Writers < 1 || o.MinGap < 0 || o.MaxGap < o.MinGap || o.Early < 0 || o.Long < 0 || o.Early+o.Long > 1 || o.EarlyWindow <= 0 || o.LongGap < o.MaxGap {
		return errors.New("need kills >= 1, writers >= 1, 0 <= min-gap <= max-gap, early and long fractions adding up to at most 1, early-window > 0, long-gap >= max-gap")
	}
	return nil
}

// Crash runs the crash harness with o and returns what its checks found
// wrong (nothing: every request has one result, nothing ran twice, the
// audit log verifies) and the work directory, removed unless something
// failed or o.Keep.
func Crash(o CrashOptions) (Failures, string) {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	start := time.Now()
	h, err := setupCrash(o)
	if err != nil {
		if h != nil && h.work != "" {
			return Failures{err.Error()}, h.work
		}
		return Failures{err.Error()}, ""
	}
	fmt.Fprintf(o.Out, "crash: seed %d, %d kills, %d writers, work dir %s\n", o.Seed, o.Kills, o.Writers, h.work)
	h.runLoad()
	h.check()
	h.report(time.Since(start))
	if len(h.violations) > 0 || o.Keep {
		fmt.Fprintf(o.Out, "files kept in %s (serve.log: the engines' logs)\n", h.work)
		return h.violations, h.work
	}
	os.RemoveAll(h.work)
	return nil, h.work
}

// crashRun is one run of the crash harness.
type crashRun struct {
	o         CrashOptions
	bin       string
	work      string // the temporary directory, also the requests' cwd
	spool     string
	auditPath string
	mark      string
	serveLog  *os.File
	env       []string
	rng       *rand.Rand // the kill loop's
	person    *Person

	mu         sync.Mutex
	inFlight   map[*exec.Cmd]bool // the writers' 'sluice run's
	current    *Proc              // the engine running now
	runs       []*crashWrite
	violations Failures

	kills      int
	earlyKills int
	longKills  int
	recoveries []time.Duration // kill -> first request served by the next engine
	// recoveries of the kills that left a request the policy decides
	// alone waiting in new/: the engine had work from its first moment
	recoveriesWaiting []time.Duration
	firstServed       time.Duration // start of the first engine -> its first request served
	loadTime          time.Duration // first engine start to last run answered

	stats crashStats // filled in by check
}

// crashWrite is one writer's 'sluice run' and what it was told.
type crashWrite struct {
	kind string
	Told
}

func (h *crashRun) fail(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.violations.Addf(format, args...)
}

func setupCrash(o CrashOptions) (*crashRun, error) {
	parent := o.Dir
	if parent == "" {
		if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
			parent = "/dev/shm"
		}
	}
	work, err := os.MkdirTemp(parent, "sluice-crash-")
	if err != nil {
		return nil, err
	}
	h := &crashRun{o: o, work: work, rng: rand.New(rand.NewPCG(o.Seed, 1)), inFlight: map[*exec.Cmd]bool{}}
	h.spool = filepath.Join(work, "spool")
	h.auditPath = filepath.Join(work, "audit.jsonl")
	h.mark = filepath.Join(work, "mark")
	// Made before the engine starts: the runs are confined to the project
	// (the work directory), which also holds the spool and the audit log,
	// secret paths; in a directory that holds one, a confined run may
	// change files but not create them.
	if err := os.WriteFile(h.mark, nil, 0o644); err != nil {
		return h, err
	}
	if h.bin, err = sluiceProgram(o.Bin); err != nil {
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
	h.env = append(scrubbedEnv("NO_COLOR"),
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
		out, _ := h.command(context.Background(), "check", "--", crashCommand(kind, "0.1")).CombinedOutput()
		if !bytes.HasPrefix(out, []byte(want+" ")) {
			return h, fmt.Errorf("the policy does not %s %q:\n%s", strings.ToLower(want), crashCommand(kind, "0.1"), out)
		}
	}
	// The person approves (or, for the requests noted so, denies) every
	// request the policy asks about.
	h.person = &Person{Sluice: h.command, Poll: o.ApprovePoll, Decide: func(p Pending) [][]string {
		switch {
		case !strings.HasPrefix(p.Command, "echo ask "):
			return nil
		case p.Note == refuseNote:
			return [][]string{{"deny", "--reason", "crash test", p.ID}}
		}
		return [][]string{{"approve", p.ID}}
	}}
	return h, nil
}

// command is a sluice process in the run's environment, run in the work
// directory.
func (h *crashRun) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, h.bin, args...)
	cmd.Env = h.env
	cmd.Dir = h.work
	return cmd
}

// crashCommand is the command line of a request of kind; sleep is the
// run time in seconds.
func crashCommand(kind, sleep string) string {
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

// startEngine starts 'sluice serve', in a process group of its own.
func (h *crashRun) startEngine() (*Proc, error) {
	cmd := h.command(context.Background(), serveArgs(h.o.MaxAuto)...)
	cmd.Stdout, cmd.Stderr = h.serveLog, h.serveLog
	e, err := Launch("sluice serve", cmd)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.current = e
	h.mu.Unlock()
	return e, nil
}

// runLoad runs the writers, the person and the kill loop, then drains.
func (h *crashRun) runLoad() {
	stopWriters := make(chan struct{})
	var writers sync.WaitGroup
	for i := range h.o.Writers {
		rng := rand.New(rand.NewPCG(h.o.Seed, uint64(i)+100))
		writers.Go(func() { h.writer(rng, stopWriters) })
	}
	personCtx, stopPerson := context.WithCancel(context.Background())
	var person sync.WaitGroup
	person.Go(func() { h.person.Run(personCtx) })

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
			_ = syscall.Kill(-h.current.Pid(), syscall.SIGKILL)
		}
		for cmd := range h.inFlight {
			_ = cmd.Process.Signal(syscall.SIGTERM)
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
		stopPerson()
		writers.Wait()
		person.Wait()
		return
	}
	aw := &AuditTail{Path: h.auditPath}
	at, served := h.waitServed(eng, aw, eng.Started)
	if served {
		h.firstServed = at.Sub(eng.Started)
	}
	for k := 0; k < h.o.Kills && served; k++ {
		dice := h.rng.Float64()
		early := dice < h.o.Early
		switch {
		case early:
			if d := time.Until(eng.Started.Add(time.Duration(h.rng.Int64N(int64(h.o.EarlyWindow))))); d > 0 {
				time.Sleep(d)
			}
		case dice < h.o.Early+h.o.Long:
			h.longKills++
			time.Sleep(h.o.MaxGap + time.Duration(h.rng.Int64N(int64(h.o.LongGap-h.o.MaxGap)+1)))
		default:
			time.Sleep(h.o.MinGap + time.Duration(h.rng.Int64N(int64(h.o.MaxGap-h.o.MinGap)+1)))
		}
		if eng.Exited() {
			h.fail("kill %d: sluice serve had exited on its own before the kill (see serve.log); stopping the kills", k+1)
			break
		}
		killedAt := eng.KillGroup()
		aw.Poll() // the dead engine's last lines
		h.kills++
		if early {
			h.earlyKills++
		}
		fmt.Fprintf(h.serveLog, "--- crash: SIGKILL %d (early %v) at %s\n", k+1, early, killedAt.Format(time.RFC3339Nano))
		if eng, err = h.startEngine(); err != nil {
			h.fail("start sluice serve after kill %d: %v", k+1, err)
			break
		}
		if !early || k == h.o.Kills-1 {
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
		if h.o.Verbose {
			fmt.Fprintf(h.o.Out, "kill %d/%d early=%v\n", k+1, h.o.Kills, early)
		} else if (k+1)%50 == 0 {
			fmt.Fprintf(h.o.Out, "crash: %d kills, %s\n", k+1, time.Since(loadStart).Round(time.Second))
		}
	}
	close(stopWriters)
	drained := make(chan struct{})
	go func() { writers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(h.o.DrainWait):
		h.fail("writers still waiting %s after the last kill: some requests were never answered (lost)", h.o.DrainWait)
		// SIGTERM the stuck 'sluice run's: they withdraw what nobody claimed.
		h.mu.Lock()
		for cmd := range h.inFlight {
			_ = cmd.Process.Signal(syscall.SIGTERM)
		}
		h.mu.Unlock()
		<-drained
	}
	h.loadTime = time.Since(loadStart)
	stopPerson()
	person.Wait()
	if eng != nil {
		if err := eng.StopWithin(15 * time.Second); err != nil {
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
func (h *crashRun) policyWaiting() bool {
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

// waitServed waits until an engine decides a request on its own (an
// auto_allowed or auto_denied line in the audit log, stamped after since)
// and returns that line's time.
func (h *crashRun) waitServed(eng *Proc, aw *AuditTail, since time.Time) (time.Time, bool) {
	deadline := time.Now().Add(h.o.ServeWait)
	for time.Now().Before(deadline) {
		for _, ev := range aw.Poll() {
			if (ev.Event == "auto_allowed" || ev.Event == "auto_denied") && !ev.TS.Before(since) {
				return ev.TS, true
			}
		}
		if eng.Exited() {
			h.fail("sluice serve exited on its own (see serve.log)")
			return time.Time{}, false
		}
		time.Sleep(2 * time.Millisecond)
	}
	h.fail("sluice serve served nothing within %s of starting (-serve-wait); stopping the kills", h.o.ServeWait)
	return time.Time{}, false
}

// writer submits requests until stop is closed.
func (h *crashRun) writer(rng *rand.Rand, stop <-chan struct{}) {
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
		line := crashCommand(kind, sleep)
		args := []string{"run", "--json", "--expires", "10m"}
		if kind == kindAskDeny {
			args = append(args, "--note", refuseNote)
		}
		cmd := h.command(context.Background(), append(args, "--", line)...)
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
		w := &crashWrite{kind: kind, Told: Told{Name: "sluice run (" + kind + ")", Stderr: stderr.String(), Exit: -1}}
		if cmd.ProcessState != nil {
			w.Exit = cmd.ProcessState.ExitCode()
		}
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			w.Stderr += fmt.Sprintf(" (%v)", err)
		}
		if b := bytes.TrimSpace(stdout.Bytes()); len(b) > 0 {
			if w.Result, err = queue.DecodeResult(b); err != nil {
				w.Stderr += fmt.Sprintf(" (decode the result it printed: %v)", err)
			}
		}
		h.mu.Lock()
		h.runs = append(h.runs, w)
		h.mu.Unlock()
	}
}

func pickKind(rng *rand.Rand) string {
	n := rng.IntN(100)
	for _, w := range crashWeights {
		if n < w.pct {
			return w.kind
		}
		n -= w.pct
	}
	return kindAuto
}
