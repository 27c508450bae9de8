package exec

import (
	osexec "os/exec"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestAwaitExit: awaitExit returns once the child has exited, not
// before, leaves its status for Wait (TestRunNoFDLeak sees the pidfd
// closed), and leaves the pidfd's open file blocking, as it found it.
func TestAwaitExit(t *testing.T) {
	cmd := osexec.Command("/bin/sh", "-c", "sleep 0.2; exit 7")
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	fd := pidFD(cmd.SysProcAttr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if *fd < 0 {
		t.Skip("no pidfd from this kernel")
	}
	// A copy sharing the open file, as os.Process's own pidfd does.
	peer, err := unix.FcntlInt(uintptr(*fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(peer)
	done := make(chan struct{})
	go func() { awaitExit(fd); close(done) }()
	select {
	case <-done:
		t.Fatal("awaitExit returned while the child still runs")
	case <-time.After(50 * time.Millisecond):
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("awaitExit did not return after the child exited")
	}
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil); err != nil || info.Signo != int32(unix.SIGCHLD) {
		t.Errorf("after awaitExit the child is not waitable: %v, signo %d", err, info.Signo)
	}
	// The non-blocking flag is the open file's: set back, or a Wait on
	// os.Process's copy while a child still ran would fail with EAGAIN.
	if fl, err := unix.FcntlInt(uintptr(peer), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK != 0 {
		t.Errorf("the pidfd's open file is left non-blocking (flags %#x, %v)", fl, err)
	}
	if err := cmd.Wait(); cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 7 {
		t.Errorf("Wait after awaitExit: %v, %v", err, cmd.ProcessState)
	}
}
