package e2e

import (
	"bytes"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
	done           chan struct{}
}

// Start starts cmd as name; its output goes to p.Stdout and p.Stderr
// unless cmd says otherwise.
func Start(t testing.TB, name string, cmd *osexec.Cmd) *Proc {
	t.Helper()
	p := &Proc{Name: name, Cmd: cmd, done: make(chan struct{})}
	if cmd.Stdout == nil {
		cmd.Stdout = &p.Stdout
	}
	if cmd.Stderr == nil {
		cmd.Stderr = &p.Stderr
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	return p
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

// pids lists the processes in /proc.
func pids() []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid > 0 {
			out = append(out, pid)
		}
	}
	return out
}

// RunProcs lists the live processes of request id's run: those whose
// environment holds SLUICE_REQUEST_ID=id (the runner sets it; what the
// run starts inherits it). Zombies are not counted: they run nothing.
func RunProcs(id string) []int {
	want := []byte("\x00SLUICE_REQUEST_ID=" + id + "\x00")
	var out []int
	for _, pid := range pids() {
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !bytes.Contains(append([]byte{0}, env...), want) {
			continue
		}
		if state(pid) == 'Z' {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// Describe is a line per process: pid, state and command line.
func Describe(ps []int) string {
	var b strings.Builder
	for _, pid := range ps {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		fmt.Fprintf(&b, "\n  %d %c %s", pid, state(pid), strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " "))
	}
	return b.String()
}

// state is a process's state letter (R, S, Z, ...), or 0.
func state(pid int) byte {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// pid (comm) STATE ppid ...: comm may hold anything, so from the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return 0
	}
	return stat[i+2]
}

// parent is a process's parent pid, or 0.
func parent(pid int) int {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// Children lists the live children of pid whose executable's name is
// program ("" for any).
func Children(pid int, program string) []int {
	var out []int
	for _, p := range pids() {
		if parent(p) != pid || state(p) == 'Z' {
			continue
		}
		if program != "" {
			exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p))
			if err != nil || filepath.Base(exe) != program {
				continue
			}
		}
		out = append(out, p)
	}
	return out
}

// under lists the processes whose working directory is dir or below it.
func under(dir string) []int {
	var out []int
	for _, pid := range pids() {
		cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		if err == nil && (cwd == dir || strings.HasPrefix(cwd, dir+"/")) {
			out = append(out, pid)
		}
	}
	return out
}
