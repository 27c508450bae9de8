package queue

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"

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
	return readRequestKnown(f, stem, nil)
}

// readRequestKnown is readRequestFile told a request already decoded
// from this name (known, nil for none): when the file's bytes are the
// ones known was decoded from (the same SHA-256), it is not decoded
// again, and a copy of known, stamped with this file, is returned. What
// is decoded from the same bytes is the same request; an engine reads a
// request twice, to judge it and under its claim.
func readRequestKnown(f *os.File, stem string, known *Request) (*Request, error) {
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
	digest := sha256.Sum256(data)
	if known != nil && known.digest == digest && known.ID == stem && stem != "" {
		req := *known
		req.stamp = stampOf(fi)
		return &req, nil
	}
	req, err := DecodeRequest(data, stem)
	if err != nil {
		return nil, err
	}
	req.digest = digest
	req.stamp = stampOf(fi)
	return req, nil
}

// readRequestPath reads and decodes the request file at p (not following
// a final symlink, not blocking on a FIFO) as readRequestFile does an open
// one, with raw system calls: the watcher reads every request that
// arrives, and an *os.File costs it a poller registration, a finalizer
// and a growing buffer each.
func readRequestPath(p, stem string) (*Request, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	for err == unix.EINTR { // a signal, on a network or FUSE file system
		fd, err = unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	for err == unix.EINTR {
		err = unix.Fstat(fd, &st)
	}
	if err != nil {
		return nil, fmt.Errorf("stat: %w", err)
	}
	if m := uint32(st.Mode) & unix.S_IFMT; m != unix.S_IFREG {
		return nil, invalidf("%s, not a regular file", fileKind(modeType(m)))
	}
	if st.Size > MaxRequestSize {
		return nil, invalidf("file is %d bytes, over the %d byte limit", st.Size, MaxRequestSize)
	}
	// One byte over the size seen: a file that grew meanwhile is still
	// read to its end (or past the limit, and refused).
	data := make([]byte, 0, st.Size+1)
	for len(data) <= MaxRequestSize {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := unix.Read(fd, data[len(data):min(cap(data), MaxRequestSize+1)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read: %w", err)
		}
		if n == 0 {
			break
		}
		data = data[:len(data)+n]
	}
	req, err := DecodeRequest(data, stem)
	if err != nil {
		return nil, err
	}
	req.digest = sha256.Sum256(data)
	req.stamp = fileStamp{ino: int64(st.Ino), size: st.Size, mtime: time.Unix(st.Mtim.Unix())}
	return req, nil
}

// modeType is the fs.FileMode type bits of a stat mode's S_IFMT bits.
func modeType(m uint32) fs.FileMode {
	switch m {
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
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
