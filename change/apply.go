package change

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// applyHooks lets tests watch and break Apply; nil outside tests.
type applyHooks struct {
	afterTemp    func(tmp string) // after a temp file is written and closed
	beforeCommit func(i int) error
}

// applyStep is the state of one file while a Change is applied.
type applyStep struct {
	fc      *FileChange
	root    *os.Root
	rel     string   // path inside root
	tmp     string   // temp file inside root, "" once renamed or for Delete
	madeDir []string // directories created for a new file, outermost first
}

// Apply writes the change, all files or none. It first re-reads every file
// and returns ErrChanged, writing nothing, if one is not Old anymore (or a
// path now resolves elsewhere). It then writes each file to a temp file in
// the same directory (fsync, mode kept) and renames it over the target; a
// Delete removes the file. If a later file fails, the files already done
// are restored from Old. Every access goes through an os.Root at the jail
// directory, so no symlink leads out of the jail even if one appears after
// the check. Directories for new files are created (0755) inside the jail.
func (c *Change) Apply(jail []string) error {
	j, err := newFileJail(jail)
	if err != nil {
		return err
	}
	roots := map[string]*os.Root{}
	defer func() {
		for _, r := range roots {
			r.Close()
		}
	}()
	steps := make([]*applyStep, len(c.Files))
	seen := map[string]bool{}
	for i := range c.Files {
		st, err := c.check(j, roots, &c.Files[i])
		if err != nil {
			return err
		}
		if seen[st.fc.Path] {
			return fmt.Errorf("exec: apply: %s is changed twice", st.fc.Path)
		}
		seen[st.fc.Path] = true
		steps[i] = st
	}
	for _, st := range steps {
		if err := c.prepare(st); err != nil {
			cleanup(steps)
			return err
		}
	}
	for i, st := range steps {
		err := c.commit(i, st)
		if err != nil {
			rerr := rollback(steps[:i])
			cleanup(steps)
			return errors.Join(err, rerr)
		}
	}
	for _, st := range steps {
		syncDir(st.root, filepath.Dir(st.rel))
	}
	return nil
}

// check re-resolves and re-reads one file and compares it with the plan.
func (c *Change) check(j fileJail, roots map[string]*os.Root, fc *FileChange) (*applyStep, error) {
	if !filepath.IsAbs(fc.Path) || filepath.Clean(fc.Path) != fc.Path {
		return nil, fmt.Errorf("exec: apply: path %q is not absolute and clean", fc.Path)
	}
	res, err := resolveSymlinks(fc.Path)
	if err != nil {
		return nil, fmt.Errorf("exec: apply: resolve %s: %w", fc.Path, err)
	}
	if _, ok := j.rootFor(res); !ok {
		return nil, fmt.Errorf("exec: apply: %s resolves to %s, outside the jail", fc.Path, res)
	}
	if res != fc.Path {
		return nil, fmt.Errorf("%w: %s now resolves to %s", ErrChanged, fc.Path, res)
	}
	rootDir, _ := j.rootFor(res)
	root := roots[rootDir]
	if root == nil {
		if root, err = os.OpenRoot(rootDir); err != nil {
			return nil, fmt.Errorf("exec: apply: %w", err)
		}
		roots[rootDir] = root
	}
	rel, err := filepath.Rel(rootDir, fc.Path)
	if err != nil || rel == "." {
		return nil, fmt.Errorf("exec: apply: %s is not a file inside %s", fc.Path, rootDir)
	}
	cur, exists, err := readInRoot(root, rel, fc.Path)
	if err != nil {
		return nil, err
	}
	if exists != fc.Exists || !bytes.Equal(cur, fc.Old) {
		return nil, fmt.Errorf("%w: %s", ErrChanged, fc.Path)
	}
	return &applyStep{fc: fc, root: root, rel: rel}, nil
}

func readInRoot(root *os.Root, rel, p string) ([]byte, bool, error) {
	fi, err := root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("exec: apply: %w", err)
	}
	if err := checkRegular(p, fi); err != nil {
		return nil, false, err
	}
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false, fmt.Errorf("exec: apply: %w", err)
	}
	defer f.Close()
	data, _, err := readRegular(p, f)
	return data, err == nil, err
}

// prepare creates missing directories and writes the temp file.
func (c *Change) prepare(st *applyStep) error {
	if st.fc.Delete {
		return nil
	}
	dir := filepath.Dir(st.rel)
	if !st.fc.Exists {
		made, err := mkdirs(st.root, dir)
		st.madeDir = made
		if err != nil {
			return fmt.Errorf("exec: apply: create directory for %s: %w", st.fc.Path, err)
		}
	}
	mode := st.fc.Mode
	if mode == 0 && !st.fc.Exists {
		mode = defaultMode
	}
	tmp, err := writeTemp(st.root, st.rel, st.fc.New, mode)
	if err != nil {
		return fmt.Errorf("exec: apply: %s: %w", st.fc.Path, err)
	}
	st.tmp = tmp
	if c.hooks != nil && c.hooks.afterTemp != nil {
		c.hooks.afterTemp(filepath.Join(st.root.Name(), tmp))
	}
	return nil
}

func (c *Change) commit(i int, st *applyStep) error {
	if c.hooks != nil && c.hooks.beforeCommit != nil {
		if err := c.hooks.beforeCommit(i); err != nil {
			return err
		}
	}
	if st.fc.Delete {
		if err := st.root.Remove(st.rel); err != nil {
			return fmt.Errorf("exec: apply: delete %s: %w", st.fc.Path, err)
		}
		return nil
	}
	if err := st.root.Rename(st.tmp, st.rel); err != nil {
		return fmt.Errorf("exec: apply: rename into %s: %w", st.fc.Path, err)
	}
	st.tmp = ""
	return nil
}

// rollback restores the files of done steps from Old, last first.
func rollback(done []*applyStep) error {
	var errs []error
	for i := len(done) - 1; i >= 0; i-- {
		st := done[i]
		if !st.fc.Exists {
			if err := st.root.Remove(st.rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		tmp, err := writeTemp(st.root, st.rel, st.fc.Old, st.fc.Mode)
		if err == nil {
			if err = st.root.Rename(tmp, st.rel); err != nil {
				st.root.Remove(tmp)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("exec: restore %s: %w", st.fc.Path, err))
		}
	}
	return errors.Join(errs...)
}

// cleanup removes leftover temp files and the directories Apply created.
func cleanup(steps []*applyStep) {
	for i := len(steps) - 1; i >= 0; i-- {
		st := steps[i]
		if st == nil {
			continue
		}
		if st.tmp != "" {
			st.root.Remove(st.tmp)
			st.tmp = ""
		}
		for k := len(st.madeDir) - 1; k >= 0; k-- {
			st.root.Remove(st.madeDir[k]) // fails, harmlessly, if not empty
		}
	}
}

// mkdirs creates dir and its missing parents (0755) and returns the ones it
// created, outermost first.
func mkdirs(root *os.Root, dir string) ([]string, error) {
	var missing []string
	for d := dir; d != "." && d != string(filepath.Separator); d = filepath.Dir(d) {
		if _, err := root.Lstat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		missing = append(missing, d)
	}
	var made []string
	for k := len(missing) - 1; k >= 0; k-- {
		if err := root.Mkdir(missing[k], 0o755); err != nil {
			return made, err
		}
		made = append(made, missing[k])
	}
	return made, nil
}

// writeTemp writes data to a new temp file next to rel, fsyncs it, sets
// mode and returns its name inside root.
func writeTemp(root *os.Root, rel string, data []byte, mode os.FileMode) (string, error) {
	var rnd [6]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(filepath.Dir(rel), "."+filepath.Base(rel)+".sluice-"+hex.EncodeToString(rnd[:])+".tmp")
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode & keptModeBits) // fchmod: exact mode, no umask
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		root.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// syncDir fsyncs a directory so that renames in it survive a crash; best
// effort, as some file systems refuse it.
func syncDir(root *os.Root, dir string) {
	if d, err := root.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
