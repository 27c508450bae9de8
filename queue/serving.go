package queue

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// servingFile is the file every running engine (a console, sluice serve)
// holds a shared lock on, so that a writer that must not wait in vain (an
// agent hook) can tell whether anyone is there to act on its request.
const servingFile = "serving.lock"

// Present marks this process as acting on the spool until release is
// called (or the process ends: the lock goes with it). auditPath, when not
// "", is published in the lock file: the audit log a writer checks a
// decision against (AuditPath).
func (s *Spool) Present(auditPath string) (release func(), err error) {
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
	if auditPath != "" && filepath.IsAbs(auditPath) {
		if cur, _ := readSmall(f, maxAuditPath); string(cur) != auditPath+"\n" {
			_ = f.Truncate(0)
			_, _ = f.WriteAt([]byte(auditPath+"\n"), 0)
		}
	}
	return func() { f.Close() }, nil
}

// maxAuditPath bounds what AuditPath reads.
const maxAuditPath = 4096

// AuditPath is the audit log the engines serving the spool published
// (Present), or "" when none did.
func (s *Spool) AuditPath() string {
	f, err := os.OpenFile(filepath.Join(s.dir, servingFile), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	data, err := readSmall(f, maxAuditPath)
	if err != nil {
		return ""
	}
	p, ok := strings.CutSuffix(string(data), "\n")
	if !ok || !filepath.IsAbs(p) || strings.ContainsAny(p, "\n\x00") || filepath.Clean(p) != p {
		return ""
	}
	return p
}

// readSmall reads f from its start, at most limit bytes.
func readSmall(f *os.File, limit int) ([]byte, error) {
	buf := make([]byte, limit+1)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if n > limit {
		return nil, fmt.Errorf("queue: %s is over %d bytes", servingFile, limit)
	}
	return buf[:n], nil
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
