//go:build unix

package exec

import (
	"fmt"
	"os"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// openPTY opens a pty pair sized rows x cols with output post-processing
// off, and returns the master re-wrapped non-blocking (so reads can be
// bounded by a deadline and Close interrupts them) and the slave for the
// child.
//
// creack/pty hands back a blocking master (its ioctls call File.Fd, which
// switches the descriptor to blocking mode; pty#174), and a blocking Read
// cannot be interrupted when a grandchild keeps the slave open. The
// descriptor is duplicated, set non-blocking and wrapped by os.NewFile,
// which registers it with the runtime poller.
func openPTY(rows, cols uint16) (master, tty *os.File, err error) {
	m, t, err := pty.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("exec: open pty: %w", err)
	}
	defer func() {
		_ = m.Close() // the duplicate below is the one we keep
		if err != nil {
			_ = t.Close()
		}
	}()
	tfd := int(t.Fd())
	if err := unix.IoctlSetWinsize(tfd, unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		return nil, nil, fmt.Errorf("exec: set pty size: %w", err)
	}
	tio, err := unix.IoctlGetTermios(tfd, ioctlGetTermios)
	if err != nil {
		return nil, nil, fmt.Errorf("exec: get pty termios: %w", err)
	}
	// Raw output: the log must hold exactly the bytes the child wrote (no
	// LF -> CR LF), so the tail and the SHA-256 describe the program's
	// output, not the line discipline's.
	tio.Oflag &^= unix.OPOST
	if err := unix.IoctlSetTermios(tfd, ioctlSetTermios, tio); err != nil {
		return nil, nil, fmt.Errorf("exec: set pty termios: %w", err)
	}
	fd, err := unix.Dup(int(m.Fd()))
	if err != nil {
		return nil, nil, fmt.Errorf("exec: dup pty master: %w", err)
	}
	unix.CloseOnExec(fd)
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return nil, nil, fmt.Errorf("exec: pty master non-blocking: %w", err)
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), t, nil
}

// setSize changes the window size through the non-blocking master without
// calling Fd (which would switch it back to blocking mode). The kernel sends
// SIGWINCH to the pty's foreground process group.
func setSize(master *os.File, rows, cols uint16) error {
	rc, err := master.SyscallConn()
	if err != nil {
		return fmt.Errorf("exec: resize: %w", err)
	}
	var ierr error
	if err := rc.Control(func(fd uintptr) {
		ierr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
	}); err != nil {
		return fmt.Errorf("exec: resize: %w", err)
	}
	if ierr != nil {
		return fmt.Errorf("exec: resize: %w", ierr)
	}
	return nil
}
