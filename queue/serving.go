package queue

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// servingFile is the file every running engine (a console, sluice serve)
// holds a shared lock on, so that a writer that must not wait in vain (an
// agent hook) can tell whether anyone is there to act on its request.
const servingFile = "serving.lock"

// Present marks this process as acting on the spool until release is
// called (or the process ends: the lock goes with it).
func (s *Spool) Present() (release func(), err error) {
	p := filepath.Join(s.dir, servingFile)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("queue: serving lock: %w", err)
	}
	// A writer's probe holds the lock exclusively for an instant.
	for wait := time.Millisecond; ; wait *= 2 {
		err = lockNB(f, false)
		if !errors.Is(err, ErrBusy) || wait > 64*time.Millisecond {
			break
		}
		time.Sleep(wait)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("queue: serving lock: %w", err)
	}
	return func() { f.Close() }, nil
}

// Serving reports whether a console or sluice serve is acting on the
// spool now.
func (s *Spool) Serving() bool {
	p := filepath.Join(s.dir, servingFile)
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err != nil {
		return true // cannot tell: assume someone is, and let the wait decide
	}
	defer f.Close()
	if err := lockNB(f, true); err != nil {
		return true // held (shared) by an engine
	}
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false
}
