//go:build unix

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/policy"
	"github.com/sluice-dev/sluice/queue"
)

// agentEnv is one scenario's world: a fresh HOME, a project, a spool,
// the sluice programs, and (when the scenario wants them) a running
// 'sluice serve' and a scripted Person.
type agentEnv struct {
	root, home, proj, spool, bin string
	baseURL                      string // the scripted model's
	note                         string // what a scenario wants reported
	hung                         bool   // the agent was killed at the scenario's limit
	stop                         []func()
	engine                       *Proc   // the running 'sluice serve', if any
	person                       *Person // the scripted person, if any
	mu                           sync.Mutex
	seen                         []*queue.Request // requests the person saw
}

func newEnv(root, bin string) (*agentEnv, error) {
	e := &agentEnv{root: root, home: filepath.Join(root, "home"), proj: filepath.Join(root, "proj"),
		spool: filepath.Join(root, "spool"), bin: bin}
	for _, d := range []string{e.home, e.proj} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	// A git repository: the agents and the policy find the project root.
	if out, err := exec.Command("git", "init", "-q", e.proj).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("git init: %v: %s", err, out)
	}
	return e, nil
}

func (e *agentEnv) close() {
	for i := len(e.stop) - 1; i >= 0; i-- {
		e.stop[i]()
	}
}

// environ is the environment every process of the scenario gets: its
// own HOME and nothing of the caller's sluice or agent settings.
func (e *agentEnv) environ(extra ...string) []string {
	env := scrubbedEnv("ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_", "CODEX_", "CLAUDE")
	return append(env, append([]string{"HOME=" + e.home}, extra...)...)
}

// command is a sluice command of the scenario, on its spool.
func (e *agentEnv) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(e.bin, "sluice"), append([]string{"--spool", e.spool}, args...)...)
	cmd.Env, cmd.Dir = e.environ(), e.proj
	return cmd
}

// sluice runs a sluice command in the scenario and returns its output.
func (e *agentEnv) sluice(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(e.bin, "sluice"), args...)
	cmd.Env, cmd.Dir = e.environ(), e.proj
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("sluice %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// install runs 'sluice install AGENT --yes' with the scenario's spool.
func (e *agentEnv) install(agent string, args ...string) error {
	_, err := e.sluice(append([]string{"--spool", e.spool, "install", agent, "--yes"}, args...)...)
	return err
}

// auditPath is where 'sluice serve' keeps its log in this HOME.
func (e *agentEnv) auditPath() string {
	return filepath.Join(e.home, ".local", "state", "sluice", "audit.jsonl")
}

// serve starts 'sluice serve' on the spool (stopped with the scenario)
// and waits until it serves: it watches, and holds the serving.lock the
// hooks look for before they wait for a person.
func (e *agentEnv) serve() error {
	p, err := LaunchServe(e.command(context.Background(), "serve"))
	if err != nil {
		return err
	}
	e.engine = p
	e.stop = append(e.stop, func() { _ = p.StopWithin(5 * time.Second) })
	sp, err := queue.Open(e.spool)
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(serveStart); !sp.Serving(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) || p.Exited() {
			return fmt.Errorf("sluice serve does not hold the serving lock: %s", e.serveLog())
		}
	}
	return nil
}

// serveLog is what 'sluice serve' printed.
func (e *agentEnv) serveLog() string {
	if e.engine == nil {
		return ""
	}
	return e.engine.Stderr.String() + e.engine.Stdout.String()
}

// checkAudit is the scenario's checker over its audit log, which serve
// and the person both wrote: the chain verifies.
func (e *agentEnv) checkAudit() error {
	if _, err := os.Stat(e.auditPath()); err != nil {
		return nil // nothing was recorded: no serve, or nothing asked
	}
	if _, f := CheckChain(e.auditPath()); len(f) > 0 {
		return fmt.Errorf("%s", strings.Join(f, "; "))
	}
	return nil
}

// choice is what the scripted person does with a pending request.
type choice struct {
	approve bool
	reason  string // for a denial
	edit    string // approve this command instead
}

// args are the Person's commands for c on request id.
func (c choice) args(id string) []string {
	switch {
	case c.approve && c.edit != "":
		return EditTo(c.edit)
	case c.approve:
		return []string{"approve", id}
	}
	return []string{"deny", id, "--reason", c.reason}
}

// startPerson starts a Person that decides each request serve leaves
// with decide, through the sluice commands a person would type (approve
// runs an execute-mode request here, confined), and an edit through the
// engine the console drives, recording in serve's audit log.
func (e *agentEnv) startPerson(decide func(*queue.Request) choice) error {
	edit, closeEdit, err := e.editor()
	if err != nil {
		return err
	}
	e.person = &Person{Sluice: e.command, Poll: 50 * time.Millisecond, Edit: edit,
		// serve decides what the policy decides alone; a person sees
		// what it leaves: give it a moment.
		Grace: 300 * time.Millisecond,
		Decide: func(p Pending) [][]string {
			e.mu.Lock()
			e.seen = append(e.seen, p.Request)
			e.mu.Unlock()
			return [][]string{decide(p.Request).args(p.ID)}
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.person.Run(ctx) }()
	e.stop = append(e.stop, func() { cancel(); <-done; closeEdit() })
	return nil
}

// editor is the Person's Edit: the engine the console drives, on the
// scenario's spool and serve's audit log, approving with another
// command.
func (e *agentEnv) editor() (func(ctx context.Context, id, command string) error, func(), error) {
	sp, err := queue.Open(e.spool)
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(filepath.Dir(e.auditPath()), 0o700); err != nil {
		return nil, nil, err
	}
	log, err := audit.Open(e.auditPath())
	if err != nil {
		return nil, nil, err
	}
	sp.Recorder = log
	eng := &queue.Engine{Spool: sp, Recorder: log, AuditPath: log.Path(),
		Judge: &policy.Judge{Options: policy.Options{Home: e.home}}}
	edit := func(ctx context.Context, id, command string) error {
		_, err := eng.ApproveAs(ctx, id, queue.Approval{Actor: "e2e-person", Command: command})
		return err
	}
	return edit, func() { log.Close() }, nil
}

// seenRequests are the requests the person was shown.
func (e *agentEnv) seenRequests() []*queue.Request {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*queue.Request(nil), e.seen...)
}

// personLog is what the person did, for a failing scenario's report.
func (e *agentEnv) personLog() string {
	if e.person == nil {
		return ""
	}
	ds, _, failed := e.person.Decisions()
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "%s: exit %d %s\n", strings.Join(d.Args, " "), d.Exit, d.Output)
	}
	for _, f := range failed {
		fmt.Fprintf(&b, "%s\n", f)
	}
	return b.String()
}

// runLimited runs an agent command (in a process group of its own) with
// a deadline: a run that hangs past it is killed with its group, and
// says so (hung).
func runLimited(cmd *exec.Cmd, limit time.Duration) (out string, took time.Duration, hung bool, err error) {
	var buf Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	p, err := Launch(filepath.Base(cmd.Path), cmd)
	if err != nil {
		return "", 0, false, err
	}
	select {
	case <-p.Done():
	case <-time.After(limit):
		p.KillGroup()
		hung = true
	}
	return buf.String(), time.Since(p.Started), hung, nil
}

// exists reports whether the project holds a file.
func (e *agentEnv) exists(name string) bool {
	_, err := os.Stat(filepath.Join(e.proj, name))
	return err == nil
}

// writeSettings writes an agent's settings file (mode 600), making its
// directory.
func writeSettings(path, data string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(data), 0o600)
}
