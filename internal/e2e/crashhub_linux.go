//go:build linux

// CrashHub is the fleet's crash suite (make crash-hub, scripts/crashhub
// its flags; TestCrashHubQuick, its quick form, in make test): the real programs (a 'sluice hub serve' process and two
// boxes, each a 'sluice serve --hub' with its bridge), agents asking on
// both boxes through 'sluice run', and two consoles deciding whatever waits
// on the hub (most approved, some denied) while the hub and the boxes are
// killed with SIGKILL (a box's whole process group: serve, its bridge and
// any 'sluice approve' the bridge runs) at random moments and started
// again.
//
// Each agent's command appends its request id to a marker file in its
// box's project. After the last kill, everything is left running until
// every 'sluice run' has its answer; then, for every request:
//
//   - its 'sluice run' returned, with a result, within the drain time (no
//     request lost);
//   - it ended done, denied, interrupted (its actor died with its box
//     before the command started: the marker must not hold it) or stopped
//     (the command started and its actor died part way);
//   - the marker holds its id at most once (nothing ran twice), once if
//     done, never if denied;
//   - done only with an approval on the hub, denied by policy or a console
//     (a deny on the hub never ends done);
//
// and each box's audit chain verifies and its spool holds nothing left
// claimed (CheckOnce, CheckHub, CheckChain over each box). It returns
// the failures, keeping the directory when there are any.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluice-dev/sluice/hub"
	"github.com/sluice-dev/sluice/queue"
)

// CrashHubOptions are the fleet crash harness's knobs.
type CrashHubOptions struct {
	Kills   int    // kills of the hub or a box
	Writers int    // agents asking on each box at once
	Seed    uint64 // 0: from the clock
	Keep    bool   // keep the directory
	Out     io.Writer
}

// CrashHubDefaults are make crash-hub's: 30 kills, 3 agents a box.
func CrashHubDefaults() CrashHubOptions { return CrashHubOptions{Kills: 30, Writers: 3} }

// Quick makes o a smoke run: 8 kills (make test).
func (o CrashHubOptions) Quick() CrashHubOptions {
	o.Kills = 8
	return o
}

type hubCrash struct {
	o      CrashHubOptions
	rng    *rand.Rand
	dir    string
	bin    string // sluice
	store  string
	port   string
	url    string
	logs   *os.File
	boxes  []string
	mu     sync.Mutex
	procs  map[string]*Proc // "hub", "b1", "b2"
	runs   []boxWrite
	failed Failures
}

// boxWrite is an agent's 'sluice run' on a box, and what it was told.
type boxWrite struct {
	box string
	Told
}

func (h *hubCrash) fail(format string, a ...any) {
	h.failed.Addf(format, a...)
	if len(h.failed) <= 20 {
		fmt.Fprintf(h.o.Out, "crashhub: FAIL: "+format+"\n", a...)
	}
}

// CrashHub runs the fleet crash harness with o and returns what its
// checks found wrong and its directory, removed unless something failed
// or o.Keep.
func CrashHub(o CrashHubOptions) (Failures, string) {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	h := &hubCrash{o: o, rng: rand.New(rand.NewPCG(o.Seed, 1)), boxes: []string{"b1", "b2"}, procs: map[string]*Proc{}}
	var err error
	if h.dir, err = os.MkdirTemp("", "sluice-crashhub-"); err != nil {
		return Failures{err.Error()}, ""
	}
	if err := h.setup(); err != nil {
		h.stopAll()
		return Failures{err.Error()}, h.dir
	}
	start := time.Now()
	kills := h.load()
	h.check()
	h.stopAll()
	fmt.Fprintf(o.Out, "crashhub: %d requests on 2 boxes, %d kills (%s), seed %d, %.1f s\n", len(h.runs), o.Kills, kills, o.Seed, time.Since(start).Seconds())
	if len(h.failed) > 0 {
		fmt.Fprintf(o.Out, "crashhub: %d checks failed; the directory is kept: %s\n", len(h.failed), h.dir)
		return h.failed, h.dir
	}
	if !o.Keep {
		os.RemoveAll(h.dir)
	}
	fmt.Fprintln(o.Out, "crashhub: ok (nothing lost, nothing run twice, every decision as the hub holds it, both chains verify)")
	return nil, h.dir
}

func (h *hubCrash) setup() error {
	bin, err := Programs()
	if err != nil {
		return err
	}
	h.bin = filepath.Join(bin, "sluice")
	h.store = filepath.Join(h.dir, "store")
	if h.logs, err = os.Create(filepath.Join(h.dir, "programs.log")); err != nil {
		return err
	}
	h.port = "0"
	if err := h.startHub(); err != nil {
		return err
	}
	h.url = "nats://127.0.0.1:" + h.port
	for _, b := range h.boxes {
		if out, err := exec.Command(h.bin, "hub", "add-box", b, "--url", h.url, "--store", h.store).CombinedOutput(); err != nil {
			return fmt.Errorf("add-box: %v: %s", err, out)
		}
		for _, d := range []string{"config/sluice", "home", "project", "state"} {
			if err := os.MkdirAll(filepath.Join(h.dir, b, d), 0o700); err != nil {
				return err
			}
		}
		if err := os.Rename(filepath.Join(h.store, "creds", b+".creds"), filepath.Join(h.dir, b, "config/sluice/hub.creds")); err != nil {
			return err
		}
		if err := h.startBox(b); err != nil {
			return err
		}
	}
	for _, c := range []string{"c1", "c2"} {
		if out, err := exec.Command(h.bin, "hub", "add-console", c, "--url", h.url, "--store", h.store).CombinedOutput(); err != nil {
			return fmt.Errorf("add-console: %v: %s", err, out)
		}
	}
	return nil
}

// start runs a program in its own process group under name.
func (h *hubCrash) start(name string, cmd *exec.Cmd) (*Proc, error) {
	if cmd.Stdout == nil {
		cmd.Stdout, cmd.Stderr = h.logs, h.logs
	}
	p, err := Launch(name, cmd)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.procs[name] = p
	h.mu.Unlock()
	return p, nil
}

// startHub starts the hub, on the port it had before once it has one.
func (h *hubCrash) startHub() error {
	cmd := exec.Command(h.bin, "hub", "serve", "--listen", "127.0.0.1:"+h.port, "--store", h.store)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	cmd.Stdout = h.logs
	p, err := h.start("hub", cmd)
	if err != nil {
		return err
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintln(h.logs, "hub:", sc.Text())
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				_, port, _ := strings.Cut(m[1], ":")
				found <- port
			}
		}
	}()
	select {
	case h.port = <-found:
		return nil
	case <-p.Done():
		return errors.New("the hub exited at start (see programs.log)")
	case <-time.After(30 * time.Second):
		return errors.New("the hub did not start listening within 30 s")
	}
}

func (h *hubCrash) boxEnv(b string) []string {
	d := filepath.Join(h.dir, b)
	return append(homeEnv(d), "SLUICE_SPOOL="+d+"/spool", "SLUICE_AUDIT="+d+"/audit.jsonl", "SLUICE_CONFIG=")
}

func (h *hubCrash) startBox(b string) error {
	cmd := exec.Command(h.bin, "serve", "--hub", h.url)
	cmd.Env, cmd.Dir = h.boxEnv(b), filepath.Join(h.dir, b, "project")
	_, err := h.start(b, cmd)
	return err
}

// load runs agents and consoles, killing the hub or a box -kills times.
func (h *hubCrash) load() string {
	ctx, stopLoad := context.WithCancel(context.Background())
	var agents, consoles sync.WaitGroup
	for _, b := range h.boxes {
		for range h.o.Writers {
			agents.Go(func() { h.agent(ctx, b) })
		}
	}
	decideCtx, stopDeciding := context.WithCancel(context.Background())
	for i, c := range []string{"c1", "c2"} {
		consoles.Go(func() { h.console(decideCtx, c, uint64(i)) })
	}
	killed := map[string]int{}
	for range h.o.Kills {
		time.Sleep(time.Duration(300+h.rng.IntN(900)) * time.Millisecond)
		victim := []string{"hub", "b1", "b2"}[h.rng.IntN(3)]
		h.mu.Lock()
		p := h.procs[victim]
		h.mu.Unlock()
		p.KillGroup()
		killed[victim]++
		time.Sleep(time.Duration(100+h.rng.IntN(400)) * time.Millisecond)
		var err error
		if victim == "hub" {
			err = h.startHub()
		} else {
			err = h.startBox(victim)
		}
		if err != nil {
			h.fail("%s does not start again: %v", victim, err)
			break
		}
	}
	// Drain: no new asks; everything asked gets its answer.
	stopLoad()
	drained := make(chan struct{})
	go func() { agents.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(90 * time.Second):
		h.fail("agents still waiting 90 s after the last kill (requests lost)")
		h.stopAll()
		<-drained
	}
	stopDeciding()
	consoles.Wait()
	return fmt.Sprintf("hub %d, b1 %d, b2 %d", killed["hub"], killed["b1"], killed["b2"])
}

// agent asks on box b until ctx ends: each command marks its id, most
// need a person.
func (h *hubCrash) agent(ctx context.Context, b string) {
	for ctx.Err() == nil {
		line := `echo "$SLUICE_REQUEST_ID" >> mark; sleep 0.2`
		cmd := exec.Command(h.bin, "run", "--json", "--expires", "10m", "--", line)
		cmd.Env, cmd.Dir = h.boxEnv(b), filepath.Join(h.dir, b, "project")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		r := boxWrite{box: b, Told: Told{Name: "sluice run on " + b, Exit: -1, Stderr: stderr.String()}}
		if cmd.ProcessState != nil {
			r.Exit = cmd.ProcessState.ExitCode()
		}
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			r.Stderr += " (" + err.Error() + ")"
		}
		if res, derr := queue.DecodeResult(bytes.TrimSpace(stdout.Bytes())); derr == nil {
			r.Result = res
		}
		h.mu.Lock()
		h.runs = append(h.runs, r)
		h.mu.Unlock()
	}
}

// console decides whatever waits on the hub: 85% approved.
func (h *hubCrash) console(ctx context.Context, name string, seed uint64) {
	rng := rand.New(rand.NewPCG(h.o.Seed, 100+seed))
	creds, err := hub.ReadCreds(filepath.Join(h.store, "creds", name+".creds"))
	if err != nil {
		h.fail("console %s: %v", name, err)
		return
	}
	var cl *hub.Client
	for ctx.Err() == nil && cl == nil {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		cl, err = hub.Connect(cctx, h.url, creds)
		cancel()
		if err != nil {
			time.Sleep(200 * time.Millisecond)
		}
	}
	if cl == nil {
		return
	}
	defer cl.Close()
	for ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		ps, err := cl.List(cctx, "")
		if err != nil && os.Getenv("CRASHHUB_DEBUG") != "" {
			fmt.Fprintf(h.o.Out, "%s console %s: list: %v\n", time.Now().Format("15:04:05.000"), name, err)
		}
		for _, p := range ps {
			d := hub.Approve
			if rng.IntN(100) < 15 {
				d = hub.Deny
			}
			_, _ = cl.Decide(cctx, hub.Choice{Box: p.Box, ID: p.ID, Decision: d, As: "crash", Digest: p.Digest})
		}
		cancel()
		if err != nil || len(ps) == 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// check runs the checkers over each box: its spool, its marker, its
// audit log, what its agents were told, and the hub's decisions for it.
func (h *hubCrash) check() {
	creds, err := hub.ReadCreds(filepath.Join(h.store, "creds", "c1.creds"))
	if err != nil {
		h.fail("%v", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := hub.Connect(ctx, h.url, creds)
	if err != nil {
		h.fail("the hub after the run: %v", err)
		return
	}
	defer cl.Close()
	statuses := map[queue.Status]int{}
	for _, b := range h.boxes {
		d := filepath.Join(h.dir, b)
		sp, err := ReadSpool(filepath.Join(d, "spool"))
		if err != nil {
			h.fail("%s: read the spool: %v", b, err)
			continue
		}
		marks, err := ReadMarks(filepath.Join(d, "project", "mark"))
		if err != nil {
			h.fail("%s: %v", b, err)
		}
		events, err := ReadAudit(filepath.Join(d, "audit.jsonl"))
		if err != nil {
			h.fail("%s: %v", b, err)
		}
		var told []Told
		for _, r := range h.runs {
			if r.box == b {
				told = append(told, r.Told)
			}
		}
		decisions := map[string]string{}
		keys, err := cl.Decisions.ListKeysFiltered(ctx, b+".*")
		if err != nil {
			h.fail("%s: the hub's decisions: %v", b, err)
			continue
		}
		for key := range keys.Keys() {
			e, err := cl.Decisions.Get(ctx, key)
			if err != nil {
				h.fail("%s: the hub's decision %s: %v", b, key, err)
				continue
			}
			var v struct {
				Decision string `json:"decision"`
			}
			_, id, _ := hub.SplitKey(key)
			if err := json.Unmarshal(e.Value(), &v); err != nil {
				h.fail("%s: the hub's decision %s: %v", b, key, err)
			}
			decisions[id] = v.Decision
		}
		_, chain := CheckChain(filepath.Join(d, "audit.jsonl"))
		for _, f := range []Failures{CheckOnce(sp, marks, events), CheckTold(sp, told), CheckHub(b, sp, marks, decisions, nil), chain} {
			for _, line := range f {
				h.fail("%s: %s", b, line)
			}
		}
		for _, res := range sp.Results {
			statuses[res.Status]++
			switch res.Status {
			case queue.StatusDone, queue.StatusDenied, queue.StatusInterrupted, queue.StatusStopped:
			default:
				h.fail("%s/%s ended %s (%s)", b, res.ID, res.Status, res.Reason)
			}
		}
	}
	fmt.Fprintf(h.o.Out, "crashhub: results %v\n", statuses)
}

func (h *hubCrash) stopAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.procs {
		if p.Exited() {
			continue
		}
		_ = syscall.Kill(-p.Pid(), syscall.SIGTERM)
		select {
		case <-p.Done():
		case <-time.After(10 * time.Second):
			p.KillGroup()
		}
	}
}
