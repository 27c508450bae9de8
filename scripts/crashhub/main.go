//go:build linux

// Command crashhub is the fleet's crash suite (make crash-hub; -quick in
// make test): the real programs (a 'sluice hub serve' process and two
// boxes, each a 'sluice serve --hub' with its bridge), agents asking on
// both boxes through 'sluice run', and two consoles deciding whatever waits
// on the hub (most approved, some denied) while the hub and the boxes are
// killed with SIGKILL (a box's whole process group: serve, its bridge and
// any 'sluice approve' the bridge runs) at random moments and started
// again.
//
//	go run ./scripts/crashhub [-kills 30] [-quick] [-seed N] [-keep]
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
// claimed. It exits 1 (keeping the directory) when a check fails.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluice-dev/sluice/hub"
	"github.com/sluice-dev/sluice/queue"
)

type options struct {
	kills   int
	writers int // per box
	seed    uint64
	keep    bool
}

func main() {
	var o options
	quick := flag.Bool("quick", false, "8 kills (a smoke run)")
	flag.IntVar(&o.kills, "kills", 30, "kills of the hub or a box")
	flag.IntVar(&o.writers, "writers", 3, "agents asking on each box at once")
	flag.Uint64Var(&o.seed, "seed", 0, "random seed (0: from the clock)")
	flag.BoolVar(&o.keep, "keep", false, "keep the directory")
	flag.Parse()
	if *quick {
		o.kills = 8
	}
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	os.Exit(run(o))
}

// proc is one program started by the suite, in its own process group.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *proc) kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

type harness struct {
	o      options
	rng    *rand.Rand
	dir    string
	bin    string // sluice
	store  string
	port   string
	url    string
	logs   *os.File
	boxes  []string
	mu     sync.Mutex
	procs  map[string]*proc // "hub", "b1", "b2"
	runs   []runRecord
	failed int
}

type runRecord struct {
	box  string
	res  *queue.Result
	err  string
	exit int
}

func (h *harness) fail(format string, a ...any) {
	h.failed++
	if h.failed <= 20 {
		fmt.Printf("crashhub: FAIL: "+format+"\n", a...)
	}
}

func run(o options) int {
	h := &harness{o: o, rng: rand.New(rand.NewPCG(o.seed, 1)), boxes: []string{"b1", "b2"}, procs: map[string]*proc{}}
	var err error
	if h.dir, err = os.MkdirTemp("", "sluice-crashhub-"); err != nil {
		fmt.Println("crashhub:", err)
		return 2
	}
	if err := h.setup(); err != nil {
		fmt.Println("crashhub:", err)
		return 2
	}
	start := time.Now()
	kills := h.load()
	h.check()
	h.stopAll()
	fmt.Printf("crashhub: %d requests on 2 boxes, %d kills (%s), seed %d, %.1f s\n", len(h.runs), o.kills, kills, o.seed, time.Since(start).Seconds())
	if h.failed > 0 {
		fmt.Printf("crashhub: %d checks failed; the directory is kept: %s\n", h.failed, h.dir)
		return 1
	}
	if !o.keep {
		os.RemoveAll(h.dir)
	}
	fmt.Println("crashhub: ok (nothing lost, nothing run twice, every decision as the hub holds it, both chains verify)")
	return 0
}

func (h *harness) setup() error {
	root, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(root)) == os.DevNull {
		return errors.New("run it from the sluice repository")
	}
	build := exec.Command("go", "build", "-o", h.dir+"/bin/", "./cmd/sluice", "./cmd/sluice-hub")
	build.Dir = filepath.Dir(strings.TrimSpace(string(root)))
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build: %v\n%s", err, out)
	}
	h.bin = filepath.Join(h.dir, "bin", "sluice")
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
func (h *harness) start(name string, cmd *exec.Cmd) (*proc, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if cmd.Stdout == nil {
		cmd.Stdout, cmd.Stderr = h.logs, h.logs
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	h.mu.Lock()
	h.procs[name] = p
	h.mu.Unlock()
	return p, nil
}

var listening = regexp.MustCompile(`listening on 127\.0\.0\.1:(\d+)`)

// startHub starts the hub, on the port it had before once it has one.
func (h *harness) startHub() error {
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
				found <- m[1]
			}
		}
	}()
	select {
	case h.port = <-found:
		return nil
	case <-p.done:
		return errors.New("the hub exited at start (see programs.log)")
	case <-time.After(30 * time.Second):
		return errors.New("the hub did not start listening within 30 s")
	}
}

func (h *harness) boxEnv(b string) []string {
	d := filepath.Join(h.dir, b)
	return []string{"HOME=" + d + "/home", "XDG_CONFIG_HOME=" + d + "/config", "XDG_STATE_HOME=" + d + "/state", "XDG_RUNTIME_DIR=",
		"SLUICE_SPOOL=" + d + "/spool", "SLUICE_AUDIT=" + d + "/audit.jsonl", "SLUICE_CONFIG=", "PATH=" + os.Getenv("PATH")}
}

func (h *harness) startBox(b string) error {
	cmd := exec.Command(h.bin, "serve", "--hub", h.url)
	cmd.Env, cmd.Dir = h.boxEnv(b), filepath.Join(h.dir, b, "project")
	_, err := h.start(b, cmd)
	return err
}

// load runs agents and consoles, killing the hub or a box -kills times.
func (h *harness) load() string {
	ctx, stopLoad := context.WithCancel(context.Background())
	var agents, consoles sync.WaitGroup
	for _, b := range h.boxes {
		for range h.o.writers {
			agents.Go(func() { h.agent(ctx, b) })
		}
	}
	decideCtx, stopDeciding := context.WithCancel(context.Background())
	for i, c := range []string{"c1", "c2"} {
		consoles.Go(func() { h.console(decideCtx, c, uint64(i)) })
	}
	killed := map[string]int{}
	for range h.o.kills {
		time.Sleep(time.Duration(300+h.rng.IntN(900)) * time.Millisecond)
		victim := []string{"hub", "b1", "b2"}[h.rng.IntN(3)]
		h.mu.Lock()
		p := h.procs[victim]
		h.mu.Unlock()
		p.kill()
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
func (h *harness) agent(ctx context.Context, b string) {
	for ctx.Err() == nil {
		line := `echo "$SLUICE_REQUEST_ID" >> mark; sleep 0.2`
		cmd := exec.Command(h.bin, "run", "--json", "--expires", "10m", "--", line)
		cmd.Env, cmd.Dir = h.boxEnv(b), filepath.Join(h.dir, b, "project")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		r := runRecord{box: b, exit: -1}
		if cmd.ProcessState != nil {
			r.exit = cmd.ProcessState.ExitCode()
		}
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			r.err = err.Error()
		}
		if res, derr := queue.DecodeResult(bytes.TrimSpace(stdout.Bytes())); derr == nil {
			r.res = res
		} else if r.err == "" {
			r.err = fmt.Sprintf("no result printed (%v): %s", derr, strings.TrimSpace(stderr.String()))
		}
		h.mu.Lock()
		h.runs = append(h.runs, r)
		h.mu.Unlock()
	}
}

// console decides whatever waits on the hub: 85% approved.
func (h *harness) console(ctx context.Context, name string, seed uint64) {
	rng := rand.New(rand.NewPCG(h.o.seed, 100+seed))
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
			fmt.Printf("%s console %s: list: %v\n", time.Now().Format("15:04:05.000"), name, err)
		}
		for _, p := range ps {
			d := hub.Approve
			if rng.IntN(100) < 15 {
				d = hub.Deny
			}
			_, _ = cl.Decide(cctx, p.Box, p.ID, d, "crash@"+name, "", p.Digest, "")
		}
		cancel()
		if err != nil || len(ps) == 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// check checks every request's end against the markers, the hub's
// decisions and the boxes' spools and chains.
func (h *harness) check() {
	marks := map[string]int{}
	for _, b := range h.boxes {
		data, _ := os.ReadFile(filepath.Join(h.dir, b, "project", "mark"))
		for _, id := range strings.Fields(string(data)) {
			marks[b+"/"+id]++
		}
	}
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
	for _, r := range h.runs {
		if r.res == nil {
			h.fail("a 'sluice run' on %s ended without a result (exit %d): %s", r.box, r.exit, r.err)
			continue
		}
		key := r.box + "/" + r.res.ID
		statuses[r.res.Status]++
		n := marks[key]
		delete(marks, key)
		decision := ""
		if e, err := cl.Decisions.Get(ctx, hub.Key(r.box, r.res.ID)); err == nil {
			decision = string(e.Value())
		}
		switch r.res.Status {
		case queue.StatusDone:
			if n != 1 {
				h.fail("%s done, its command ran %d times", key, n)
			}
			if !strings.Contains(decision, `"decision":"approve"`) {
				h.fail("%s done without an approval on the hub (%s)", key, decision)
			}
		case queue.StatusDenied:
			if n != 0 {
				h.fail("%s denied, its command ran %d times", key, n)
			}
		case queue.StatusInterrupted:
			// "Not run": true only of a command that never started.
			if n > 0 {
				h.fail("%s interrupted (not run), yet its command ran %d times", key, n)
			}
		case queue.StatusStopped:
			if n > 1 {
				h.fail("%s stopped, its command ran %d times", key, n)
			}
		default:
			h.fail("%s ended %s (%s)", key, r.res.Status, r.res.Reason)
		}
		if strings.Contains(decision, `"decision":"deny"`) && r.res.Status == queue.StatusDone {
			h.fail("%s denied on the hub, yet done", key)
		}
	}
	for key, n := range marks {
		h.fail("%s ran %d times, and no agent heard of it", key, n)
	}
	for _, b := range h.boxes {
		verify := exec.Command(h.bin, "audit", "verify")
		verify.Env = h.boxEnv(b)
		if out, err := verify.CombinedOutput(); err != nil {
			h.fail("%s's audit chain: %v: %s", b, err, out)
		}
		for _, sub := range []string{"new", "cur"} {
			left, _ := filepath.Glob(filepath.Join(h.dir, b, "spool", sub, "*.json"))
			for _, f := range left {
				// A claimed request stays in cur/ with its result beside it.
				if _, err := os.Stat(filepath.Join(h.dir, b, "spool", "out", filepath.Base(f))); err != nil || sub == "new" {
					h.fail("%s: %s left in %s/ unanswered", b, filepath.Base(f), sub)
				}
			}
		}
	}
	fmt.Printf("crashhub: results %v\n", statuses)
}

func (h *harness) stopAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.procs {
		select {
		case <-p.done:
		default:
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
				_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
				<-p.done
			}
		}
	}
}
