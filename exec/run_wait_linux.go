package exec

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// pidFD asks the child's start for a pidfd of our own (-1 until the start
// succeeds), for awaitExit.
func pidFD(attr *syscall.SysProcAttr) *int {
	fd := -1
	attr.PidFD = &fd
	return &fd
}

// awaitExit returns once the child whose pidfd is *fd has exited (or at
// once when there is none), and closes the pidfd. It waits in the Go
// runtime's poller (a pidfd becomes readable when its process exits),
// so the Wait that follows does not block: a waitid held for the whole
// run keeps an OS thread in a system call, which the runtime's monitor
// notices and answers by handing its P to another thread, and the
// monitor then polls every 20 us for the next millisecond; that was
// ~0.25 ms of serve's CPU for every command.
func awaitExit(fd *int) {
	if fd == nil || *fd < 0 {
		return
	}
	if err := syscall.SetNonblock(*fd, true); err != nil {
		unix.Close(*fd)
		return
	}
	f := os.NewFile(uintptr(*fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	// The flag is the open file's, which os.Process's copy of the pidfd
	// shares: blocking again before we go, or a Wait while the child
	// still ran (after "no telling" below) would fail with EAGAIN.
	defer rc.Control(func(pfd uintptr) { _ = syscall.SetNonblock(int(pfd), false) })
	_ = rc.Read(func(pfd uintptr) bool {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PIDFD, int(pfd), &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		// Exited (the status stays for Wait), or no telling: done.
		return err != nil || info.Signo == int32(unix.SIGCHLD)
	})
}
