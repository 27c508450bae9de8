package change

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/sluice-dev/sluice/queue"
)

// Change is a planned file change: what a write/edit/patch request would
// do, computed from the files as they are now.
type Change struct {
	Files []FileChange

	cwd   string      // the request's cwd; Diff labels paths relative to it
	hooks *applyHooks // test hooks; nil outside tests
}

// FileChange is the planned change to one file.
type FileChange struct {
	Path   string      // absolute, cleaned, symlinks resolved
	Old    []byte      // the file's content now (nil if it does not exist)
	New    []byte      // the content after the change (nil if Delete)
	Exists bool        // the file exists now
	Mode   os.FileMode // the mode to keep (0644 for a new file)
	Delete bool        // the change removes the file (a patch to /dev/null)
}

// ErrChanged says a file changed between the preview and the apply: show
// the new preview and ask again.
var ErrChanged = errors.New("exec: file changed since it was previewed")

// defaultMode is the mode of a file a change creates.
const defaultMode os.FileMode = 0o644

// keptModeBits are the mode bits a change preserves.
const keptModeBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// Plan computes the change a write, edit or patch request makes, against
// the files on disk now. Relative paths resolve against req.Cwd, and
// symlinks are resolved so that FileChange.Path names the real file.
//
// Plan refuses, with a reason a person can read: a path outside the jail
// after resolving symlinks (an empty jail allows every path); an edit whose
// old_string occurs zero times, or more than once without replace_all; a
// patch that does not apply exactly (naming the file and hunk); a target
// that is not a regular file.
func Plan(req *queue.Request, jail []string) (*Change, error) {
	if req == nil {
		return nil, errors.New("exec: plan: nil request")
	}
	j, err := newFileJail(jail)
	if err != nil {
		return nil, err
	}
	c := &Change{cwd: req.Cwd}
	switch req.Kind {
	case queue.KindWrite:
		fc, err := planWrite(j, req)
		if err != nil {
			return nil, err
		}
		c.Files = []FileChange{fc}
	case queue.KindEdit:
		fc, err := planEdit(j, req)
		if err != nil {
			return nil, err
		}
		c.Files = []FileChange{fc}
	case queue.KindPatch:
		if c.Files, err = planPatch(j, req); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("exec: plan: kind %q is not a file change", req.Kind)
	}
	return c, nil
}

// current is the file req.Path names, resolved in j, as it is now: its
// Path, Old, Exists and Mode, with New still empty.
func current(j fileJail, req *queue.Request) (FileChange, error) {
	p, err := resolveTarget(j, req.Cwd, req.Path)
	if err != nil {
		return FileChange{}, err
	}
	old, exists, mode, err := readCurrent(p)
	if err != nil {
		return FileChange{}, err
	}
	return FileChange{Path: p, Old: old, Exists: exists, Mode: mode}, nil
}

func planWrite(j fileJail, req *queue.Request) (FileChange, error) {
	fc, err := current(j, req)
	if err != nil {
		return FileChange{}, err
	}
	fc.New = []byte(req.Content)
	return fc, nil
}

func planEdit(j fileJail, req *queue.Request) (FileChange, error) {
	fc, err := current(j, req)
	if err != nil {
		return FileChange{}, err
	}
	old := fc.Old
	switch n := strings.Count(string(old), req.OldString); {
	case !fc.Exists:
		return FileChange{}, fmt.Errorf("exec: edit %s: the file does not exist", req.Path)
	case req.OldString == "":
		return FileChange{}, fmt.Errorf("exec: edit %s: old_string is empty", req.Path)
	case req.OldString == req.NewString:
		return FileChange{}, fmt.Errorf("exec: edit %s: old_string and new_string are the same; nothing to change", req.Path)
	case n == 0:
		return FileChange{}, fmt.Errorf("exec: edit %s: old_string not found in the file", req.Path)
	case n > 1 && !req.ReplaceAll:
		return FileChange{}, fmt.Errorf("exec: edit %s: old_string occurs %d times; set replace_all or give more context", req.Path, n)
	}
	if req.ReplaceAll {
		fc.New = bytes.ReplaceAll(old, []byte(req.OldString), []byte(req.NewString))
	} else {
		fc.New = bytes.Replace(old, []byte(req.OldString), []byte(req.NewString), 1)
	}
	return fc, nil
}

// readCurrent reads the regular file at the resolved path p. A missing file
// is not an error: it returns exists false and the default mode.
func readCurrent(p string) (data []byte, exists bool, mode os.FileMode, err error) {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, defaultMode, nil
	}
	if err != nil {
		return nil, false, 0, fmt.Errorf("exec: %w", err)
	}
	if err := checkRegular(p, fi); err != nil {
		return nil, false, 0, err
	}
	// O_NOFOLLOW and O_NONBLOCK: if p was swapped for a link or a FIFO since
	// the Lstat, fail (or return at once) instead of following or hanging.
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false, 0, fmt.Errorf("exec: %w", err)
	}
	defer f.Close()
	data, fi, err = readRegular(p, f)
	if err != nil {
		return nil, false, 0, err
	}
	return data, true, fi.Mode() & keptModeBits, nil
}

// readRegular checks that the open f is a regular file and reads it.
func readRegular(p string, f *os.File) ([]byte, os.FileInfo, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("exec: %w", err)
	}
	if err := checkRegular(p, fi); err != nil {
		return nil, nil, err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, nil, fmt.Errorf("exec: read %s: %w", p, err)
	}
	if data == nil {
		data = []byte{}
	}
	return data, fi, nil
}

func checkRegular(p string, fi os.FileInfo) error {
	m := fi.Mode()
	if m.IsRegular() {
		return nil
	}
	what := "not a regular file"
	switch {
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeSymlink != 0:
		what = "a symlink"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&fs.ModeDevice != 0:
		what = "a device"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	}
	return fmt.Errorf("exec: %s is %s, not a regular file", p, what)
}
