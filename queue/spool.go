package queue

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// The spool's subdirectories (protocol section 3).
const (
	dirTmp = "tmp"
	dirNew = "new"
	dirCur = "cur"
	dirOut = "out"
	dirBad = "bad"
)

var subdirs = []string{dirTmp, dirNew, dirCur, dirOut, dirBad}

// Spool is an opened spool directory.
type Spool struct {
	dir string

	// Recorder, when set, records the results the spool writes on its own
	// (a quarantined file answered invalid, an expired request, a claim
	// whose actor died answered interrupted) before writing them. Set it
	// before the spool is used, and do not change it afterwards.
	Recorder Recorder

	// StopOrphans, when set, kills what the runs of actors that died
	// left running (sandbox.KillOrphans). A recovery calls it before it
	// answers a run that started "stopped": an agent told so may run the
	// command again, and must not find the first run still going. Set it
	// before the spool is used.
	StopOrphans func()

	// localFIFOs: the spool's file system is one where a FIFO's readers
	// are processes of this kernel (not NFS, SMB, 9p, virtiofs...), so a
	// FIFO nobody reads means its writer is gone (WriterGone). Looked up
	// on first use: only engines ask, and every writer opens a spool.
	localFIFOs func() bool
}

// Sentinel errors callers branch on.
var (
	ErrNotFound = errors.New("queue: no such request")
	ErrClaimed  = errors.New("queue: request already claimed")
	ErrBusy     = errors.New("queue: request is being claimed by another process")
	ErrExists   = errors.New("queue: request id already used")
	ErrResulted = errors.New("queue: result already written")
	ErrExpired  = errors.New("queue: request expired")
	ErrNoResult = errors.New("queue: no result yet")
	// ErrEmptyResult: out/<id>.json is there but empty (results are not
	// synced: an operating-system crash, or a process that can write the
	// spool, left it so). It is no result (it wraps ErrNoResult), and a
	// writer past expires_at stops waiting on it.
	ErrEmptyResult error = &wrapErr{ErrNoResult.Error() + ": the result file is empty", ErrNoResult}
)

// wrapErr is an error that says msg and wraps err: what fmt.Errorf with
// %w makes, for a package-level error made without fmt at start (a
// process's first fmt.Errorf costs ~0.03 ms, every writer's included).
type wrapErr struct {
	msg string
	err error
}

func (e *wrapErr) Error() string { return e.msg }
func (e *wrapErr) Unwrap() error { return e.err }

// PermError says why a spool directory is unsafe to use and how to fix it.
type PermError struct {
	Path    string
	Problem string
	Fix     string
}

func (e *PermError) Error() string {
	return fmt.Sprintf("spool %s %s; %s", e.Path, e.Problem, e.Fix)
}

// runUserBase holds the per-user runtime directories systemd-logind
// makes (/run/user/UID, a tmpfs only the user can enter).
var runUserBase = "/run/user"

// DefaultDir returns the spool directory of protocol section 2: the same
// for every process of the user on the machine, whatever its environment,
// so that an agent started without XDG_RUNTIME_DIR and a console started
// with it meet. It is $XDG_RUNTIME_DIR/sluice when that is set (on a
// systemd machine it is /run/user/UID), else /run/user/UID/sluice when
// /run/user/UID exists and is the user's (a directory owned by the user,
// not a symlink, writable by nobody else), else
// $XDG_STATE_HOME/sluice/spool, else ~/.local/state/sluice/spool.
// 'sluice doctor' reports an XDG_RUNTIME_DIR that names anything else.
func DefaultDir() (string, error) {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "sluice"), nil
	}
	if d, ok := RunUserDir(); ok {
		return filepath.Join(d, "sluice"), nil
	}
	state, err := StateDir()
	if err != nil {
		return "", fmt.Errorf("queue: no spool directory: set SLUICE_SPOOL or HOME: %w", err)
	}
	return filepath.Join(state, "spool"), nil
}

// DirFrom is the spool a program was told of: flagValue (its --spool),
// else $SLUICE_SPOOL, else DefaultDir.
func DirFrom(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if env := os.Getenv("SLUICE_SPOOL"); env != "" {
		return env, nil
	}
	return DefaultDir()
}

// StateDir returns the directory where sluice keeps what it owns between
// runs (the audit log; the spool where there is no runtime directory):
// $XDG_STATE_HOME/sluice when that is absolute, else
// ~/.local/state/sluice.
func StateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "sluice"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".local", "state", "sluice"), nil
}

// RunUserDir is /run/user/UID when it is the user's own.
func RunUserDir() (string, bool) {
	uid := os.Getuid()
	d := filepath.Join(runUserBase, strconv.Itoa(uid))
	fi, err := os.Lstat(d)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o022 != 0 {
		return "", false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) != uid {
		return "", false
	}
	return d, true
}

// Open opens the spool at dir, creating it and its layout (mode 0700) if
// missing. It refuses, with a *PermError, a spool or subdirectory that is a
// symlink, not a directory, owned by another user, or writable by group or
// others: anyone who can write there can put requests in front of the
// person, or read what ran.
func Open(dir string) (*Spool, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("queue: spool path: %w", err)
	}
	// Looked at before anything is made: a spool that is there already
	// (every writer's case) costs a stat per directory.
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
			return nil, fmt.Errorf("queue: create spool parent: %w", err)
		}
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("queue: create spool: %w", err)
		}
	}
	if err := checkDir(dir, dir); err != nil {
		return nil, err
	}
	for _, sub := range subdirs {
		p := filepath.Join(dir, sub)
		err := checkDir(p, dir)
		if errors.Is(err, fs.ErrNotExist) {
			if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return nil, fmt.Errorf("queue: create %s: %w", p, err)
			}
			err = checkDir(p, dir)
		}
		if err != nil {
			return nil, err
		}
	}
	return &Spool{dir: dir, localFIFOs: sync.OnceValue(func() bool { return localFS(dir) })}, nil
}

// checkDir applies the spool's safety rules to p.
func checkDir(p, spool string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return fmt.Errorf("queue: %w", err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return &PermError{p, "is a symlink", fmt.Sprintf("point --spool (or SLUICE_SPOOL) at the real directory, or remove the link: rm %s", p)}
	}
	if !fi.IsDir() {
		return &PermError{p, "is not a directory", fmt.Sprintf("move it away (mv %s %s.old) and let sluice create the spool", p, p)}
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return &PermError{p, fmt.Sprintf("is owned by uid %d, not by you (uid %d)", st.Uid, os.Geteuid()),
			fmt.Sprintf("use a spool of your own (--spool or SLUICE_SPOOL), or remove this one: sudo rm -r %s", spool)}
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return &PermError{p, fmt.Sprintf("is writable by group or others (mode %04o)", perm),
			fmt.Sprintf("fix it with: chmod 700 %s", p)}
	}
	return nil
}

// Dir returns the spool's absolute path.
func (s *Spool) Dir() string { return s.dir }

func (s *Spool) path(sub, name string) string { return filepath.Join(s.dir, sub, name) }

// RequestPath returns where request id waits while pending (new/<id>.json).
func (s *Spool) RequestPath(id string) string { return s.path(dirNew, id+".json") }

// ReadPending reads request id as its file in new/ is now (it waits for
// a decision, or is being judged).
func (s *Spool) ReadPending(id string) (*Request, error) {
	if !ValidID(id) {
		return nil, fmt.Errorf("%q is not a request id", id)
	}
	return readRequestPath(s.RequestPath(id), id)
}

// ResultPath returns out/<id>.json.
func (s *Spool) ResultPath(id string) string { return s.path(dirOut, id+".json") }

// LogPath returns out/<id>.log, where a running command's output goes.
func (s *Spool) LogPath(id string) string { return s.path(dirOut, id+".log") }

// LogRel returns the log path relative to the spool, as results record it.
func LogRel(id string) string { return dirOut + "/" + id + ".log" }

// WakePath returns out/<id>.wake, the optional wake-up FIFO.
func (s *Spool) WakePath(id string) string { return s.path(dirOut, id+".wake") }
