package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/internal/e2e"
	"github.com/sluice-dev/sluice/policy"
	"github.com/sluice-dev/sluice/queue"
)

// env is one scenario's world: a fresh HOME, a project, a spool, the
// sluice programs, and (when the scenario wants one) a running 'sluice
// serve' and a scripted person.
type env struct {
	root, home, proj, spool, bin string
	baseURL                      string // the scripted model's
	note                         string // what a scenario wants reported
	hung                         bool   // the agent was killed at the scenario's limit
	stop                         []func()
	engine                       *e2e.Proc // the running 'sluice serve', if any
	mu                           sync.Mutex
	seen                         []*queue.Request // requests the person saw
}

func newEnv(root, bin string) (*env, error) {
	e := &env{root: root, home: filepath.Join(root, "home"), proj: filepath.Join(root, "proj"),
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

func (e *env) close() {
	for i := len(e.stop) - 1; i >= 0; i-- {
		e.stop[i]()
	}
}

// environ is the environment every process of the scenario gets: its
// own HOME and nothing of the caller's sluice or agent settings.
func (e *env) environ(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "SLUICE_") || strings.HasPrefix(k, "XDG_") || strings.HasPrefix(k, "ANTHROPIC_") ||
			strings.HasPrefix(k, "OPENAI_") || strings.HasPrefix(k, "GEMINI_") || strings.HasPrefix(k, "GOOGLE_") ||
			strings.HasPrefix(k, "CODEX_") || strings.HasPrefix(k, "CLAUDE") || k == "HOME" {
			continue
		}
		out = append(out, kv)
	}
	return append(out, append([]string{"HOME=" + e.home}, extra...)...)
}

// sluice runs a sluice command in the scenario and returns its output.
func (e *env) sluice(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(e.bin, "sluice"), args...)
	cmd.Env, cmd.Dir = e.environ(), e.proj
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("sluice %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// install runs 'sluice install AGENT --yes' with the scenario's spool.
func (e *env) install(agent string, args ...string) error {
	_, err := e.sluice(append([]string{"--spool", e.spool, "install", agent, "--yes"}, args...)...)
	return err
}

// auditPath is where 'sluice serve' keeps its log in this HOME.
func (e *env) auditPath() string {
	return filepath.Join(e.home, ".local", "state", "sluice", "audit.jsonl")
}

// serve starts 'sluice serve' on the spool (in a process group of its
// own, stopped with the scenario) and waits until it serves.
func (e *env) serve() error {
	cmd := exec.Command(filepath.Join(e.bin, "sluice"), "--spool", e.spool, "serve")
	cmd.Env, cmd.Dir = e.environ(), e.proj
	p, err := e2e.Launch("sluice serve", cmd)
	if err != nil {
		return err
	}
	e.engine = p
	e.stop = append(e.stop, func() { _ = p.StopWithin(5 * time.Second) })
	sp, err := queue.Open(e.spool)
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(10 * time.Second); !sp.Serving(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) || p.Exited() {
			return fmt.Errorf("sluice serve did not start: %s", e.serveLog())
		}
	}
	return nil
}

// serveLog is what 'sluice serve' printed.
func (e *env) serveLog() string {
	if e.engine == nil {
		return ""
	}
	return e.engine.Stderr.String() + e.engine.Stdout.String()
}

// checkAudit is the harness's checker over the scenario's audit log,
// which serve and the person's engine both wrote: the chain verifies.
func (e *env) checkAudit() error {
	if _, err := os.Stat(e.auditPath()); err != nil {
		return nil // nothing was recorded: no serve, or nothing asked
	}
	if _, f := e2e.CheckChain(e.auditPath()); len(f) > 0 {
		return fmt.Errorf("%s", strings.Join(f, "; "))
	}
	return nil
}

// decision is what the scripted person does with a pending request.
type decision struct {
	approve bool
	reason  string // for a denial
	edit    string // approve this command instead
}

// person watches the spool and decides each pending request with decide,
// through the engine the console uses, recording in serve's audit log.
func (e *env) person(decide func(*queue.Request) decision) error {
	sp, err := queue.Open(e.spool)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(e.auditPath()), 0o700); err != nil {
		return err
	}
	log, err := audit.Open(e.auditPath())
	if err != nil {
		return err
	}
	sp.Recorder = log
	// Approvals and denials go through the sluice commands a person
	// would type (approve runs an execute-mode request here, confined);
	// an edit through the engine the console drives.
	eng := &queue.Engine{Spool: sp, Recorder: log, AuditPath: log.Path(),
		Judge: &policy.Judge{Options: policy.Options{Home: e.home}}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		handled := map[string]bool{}
		for ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
			list, err := sp.List()
			if err != nil {
				continue
			}
			for _, ent := range list {
				if ent.State != queue.StatePending || ent.Request == nil || handled[ent.ID] {
					continue
				}
				// serve decides what the policy decides alone; a person
				// sees what it leaves: give it a moment.
				if time.Since(ent.Request.CreatedAt) < 300*time.Millisecond {
					continue
				}
				handled[ent.ID] = true
				e.mu.Lock()
				e.seen = append(e.seen, ent.Request)
				e.mu.Unlock()
				d := decide(ent.Request)
				switch {
				case d.approve && d.edit != "":
					_, _ = eng.ApproveAs(ctx, ent.ID, queue.Approval{Actor: "e2e-person", Command: d.edit})
				case d.approve:
					_, _ = e.sluice("--spool", e.spool, "approve", ent.ID)
				default:
					_, _ = e.sluice("--spool", e.spool, "deny", ent.ID, "--reason", d.reason)
				}
			}
		}
	}()
	e.stop = append(e.stop, func() { cancel(); <-done; log.Close() })
	return nil
}

// seenRequests are the requests the person was shown.
func (e *env) seenRequests() []*queue.Request {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*queue.Request(nil), e.seen...)
}

// run runs an agent command with a deadline: a run that hangs fails.
func run(cmd *exec.Cmd, limit time.Duration) (string, time.Duration, error) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return "", 0, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), time.Since(start), err
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		return out.String(), time.Since(start), fmt.Errorf("hung: still running after %s", limit)
	}
}

// exists reports whether the project holds a file.
func (e *env) exists(name string) bool {
	_, err := os.Stat(filepath.Join(e.proj, name))
	return err == nil
}

var errSkip = errors.New("skipped")

// writeJSONFile writes an agent's settings file.
func writeJSONFile(path, data string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(data), 0o600)
}
