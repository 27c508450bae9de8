//go:build unix

package e2e

import (
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Guard bounds every wait of the suite: a hang guard, never a timing
// assertion (machines are shared and noisy). What should happen at once
// gets this long; a wait that runs out fails the test as a hang.
const Guard = 90 * time.Second

// Until polls cond every 20 ms until it holds, failing the test with
// what after Guard.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Guard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s (a hang guard), still not: %s", Guard, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Proc is a program the suite started, in a process group of its own.
type Proc struct {
	Name           string
	Cmd            *osexec.Cmd
	Stdout, Stderr Buffer
	Started        time.Time // when it was started
	done           chan struct{}
}

// Start starts cmd as name; its output goes to p.Stdout and p.Stderr
// unless cmd says otherwise.
func Start(t testing.TB, name string, cmd *osexec.Cmd) *Proc {
	t.Helper()
	p, err := Launch(name, cmd)
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	return p
}

// StartLogged is Start, with the program stopped when the test ends and
// its stderr logged then if the test failed.
func StartLogged(t testing.TB, name string, cmd *osexec.Cmd) *Proc {
	t.Helper()
	p := Start(t, name, cmd)
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("stderr of %s:\n%s", name, p.Stderr.String())
		}
	})
	return p
}

// FreeAddr is an address on 127.0.0.1 whose port was free a moment ago,
// for a program the test starts to listen on.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Launch is Start outside a test: it starts cmd as name, in a process
// group of its own (out of reach of a terminal's ^C), its output to
// p.Stdout and p.Stderr unless cmd says otherwise.
func Launch(name string, cmd *osexec.Cmd) (*Proc, error) {
	p := &Proc{Name: name, Cmd: cmd, done: make(chan struct{})}
	if cmd.Stdout == nil {
		cmd.Stdout = &p.Stdout
	}
	if cmd.Stderr == nil {
		cmd.Stderr = &p.Stderr
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.Started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	return p, nil
}

// serveStart bounds how long a 'sluice serve' may take to say it
// watches its spool (a hang guard).
const serveStart = 10 * time.Second

// LaunchServe launches cmd, a 'sluice serve', and waits until it says it
// watches its spool. One that ends first, or has not said so within
// 10 s, is killed, and the error holds what it printed.
func LaunchServe(cmd *osexec.Cmd) (*Proc, error) {
	p, err := Launch("sluice serve", cmd)
	if err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(serveStart); !strings.Contains(p.Stderr.String(), "sluice serve: watching "); time.Sleep(5 * time.Millisecond) {
		if p.Exited() {
			return nil, fmt.Errorf("sluice serve exited at start: %v\n%s", p.Cmd.ProcessState, p.Stderr.String())
		}
		if time.Now().After(deadline) {
			p.KillGroup()
			return nil, fmt.Errorf("sluice serve did not start watching within %s\n%s", serveStart, p.Stderr.String())
		}
	}
	return p, nil
}

// Pid is the process's id.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Done is closed once the process ended and was reaped.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the process ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Wait waits for the process to end (Guard) and returns its exit code.
func (p *Proc) Wait(t testing.TB) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(Guard):
		t.Fatalf("%s still runs after %s (a hang guard)\nstdout: %s\nstderr: %s", p.Name, Guard, p.Stdout.String(), p.Stderr.String())
	}
	return p.Cmd.ProcessState.ExitCode()
}

// Result waits for the process to end (Guard) and returns its exit code
// and output.
func (p *Proc) Result(t testing.TB) (code int, stdout, stderr string) {
	t.Helper()
	code = p.Wait(t)
	return code, p.Stdout.String(), p.Stderr.String()
}

// started is the programs a box or a hub started for a test, stopped at
// its end.
type started struct {
	mu    sync.Mutex
	procs []*Proc
}

// start starts cmd as name and keeps it to be stopped.
func (s *started) start(t testing.TB, name string, cmd *osexec.Cmd) *Proc {
	t.Helper()
	p := Start(t, name, cmd)
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	return p
}

// stop stops every program started.
func (s *started) stop() {
	s.mu.Lock()
	procs := s.procs
	s.mu.Unlock()
	for _, p := range procs {
		p.Stop()
	}
}

// homeEnv is the environment of a user whose home, configuration and
// state are dir/home, dir/config and dir/state, with no runtime directory
// (nothing of the real user's is found) and this process's PATH.
func homeEnv(dir string) []string {
	return []string{"HOME=" + dir + "/home", "XDG_CONFIG_HOME=" + dir + "/config", "XDG_STATE_HOME=" + dir + "/state",
		"XDG_RUNTIME_DIR=", "PATH=" + os.Getenv("PATH")}
}

// Kill kills the process with SIGKILL (the process only, not its
// children) and waits until it is reaped.
func (p *Proc) Kill() {
	_ = p.Cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Stop asks the process to stop (SIGTERM), and kills its group after
// Guard.
func (p *Proc) Stop() {
	if p.Exited() {
		return
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(Guard):
		_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
		<-p.done
	}
}

// WaitOutput waits until the process's stderr (or stdout) holds text, and
// fails the test if it ends first.
func (p *Proc) WaitOutput(t testing.TB, text string) {
	t.Helper()
	Until(t, fmt.Sprintf("%s says %q", p.Name, text), func() bool {
		if strings.Contains(p.Stderr.String(), text) || strings.Contains(p.Stdout.String(), text) {
			return true
		}
		if p.Exited() {
			t.Fatalf("%s ended (%v) without saying %q\nstdout: %s\nstderr: %s", p.Name, p.Cmd.ProcessState, text, p.Stdout.String(), p.Stderr.String())
		}
		return false
	})
}

// KillGroup kills the process's group with SIGKILL (the process and
// what it started that stayed in its group), waits until it is reaped,
// and returns the moment of the kill.
func (p *Proc) KillGroup() time.Time {
	at := time.Now()
	_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
	<-p.done
	return at
}

// StopWithin asks the process to stop (SIGTERM) and kills its group if
// it has not within d, saying so.
func (p *Proc) StopWithin(d time.Duration) error {
	if p.Exited() {
		return nil
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(d):
		p.KillGroup()
		return fmt.Errorf("%s did not stop within %s of SIGTERM", p.Name, d)
	}
}
