package queue

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// openNoFollow opens p for reading without following a final symlink and
// without blocking on a FIFO an agent may have put in its place.
func openNoFollow(p string) (*os.File, error) {
	return os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
}

// lockNB takes an exclusive (or shared) flock on f without waiting.
func lockNB(f *os.File, exclusive bool) error {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.EWOULDBLOCK) {
			return ErrBusy
		}
		return err
	}
}

// fileKind names what a non-regular file is, for the quarantine reason.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}

// readRequestFile reads and decodes an open request file. stem is the id the
// file's name claims. Refusals are *InvalidError.
func readRequestFile(f *os.File, stem string) (*Request, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("queue: stat request: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, invalidf("%s, not a regular file", fileKind(fi.Mode()))
	}
	if fi.Size() > MaxRequestSize {
		return nil, invalidf("file is %d bytes, over the %d byte limit", fi.Size(), MaxRequestSize)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxRequestSize+1))
	if err != nil {
		return nil, fmt.Errorf("queue: read request: %w", err)
	}
	req, err := DecodeRequest(data, stem)
	if err != nil {
		return nil, err
	}
	req.digest = sha256.Sum256(data)
	req.stamp = stampOf(fi)
	return req, nil
}

// SameFile reports whether the open file f is still the file at path p
// (p is not followed if it is a symlink): the check every process that
// locks a file by name needs, since the name may have been replaced.
func SameFile(f *os.File, p string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Lstat(p)
	if err != nil {
		return false
	}
	return os.SameFile(a, b)
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
