// Package checkpoint takes snapshots of a project's files before and
// after sluice changes them, so that what a run changed can be listed and
// undone.
//
// Each project root gets a shadow git repository of its own under the
// store's directory, driven with git plumbing: the user's repository, its
// index, HEAD, branches and stash are never read or written. A snapshot
// is every file under the root that is not ignored (the project's
// .gitignore files apply; nested repositories are recorded as git records
// them, as a commit id, not their files). Files are stored byte for byte:
// attributes that would rewrite them (text, eol, filters) are turned off,
// and neither system nor global git configuration is read.
package checkpoint

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// ErrNoGit: there is no git program here; nothing can be checkpointed.
var ErrNoGit = errors.New("checkpoint: git is not installed, so runs are not checkpointed")

// Store keeps the shadow repositories, one per project root, under Dir.
type Store struct {
	Dir string
	// Git is the git program; "" looks it up in PATH.
	Git string

	mu    sync.Mutex
	locks map[string]*sync.Mutex // per shadow repository, in this process
	git   string                 // Git, or found in PATH (under mu)
	warm  map[string]bool        // roots warmed, or being warmed, by this process
}

// Snapshot is the state of one root's files at one moment.
type Snapshot struct {
	Root   string `json:"root"`
	Commit string `json:"commit"` // in the root's shadow repository
}

// Change is one file a run created, changed or deleted.
type Change struct {
	Path   string `json:"path"`   // absolute
	Change string `json:"change"` // created, changed or deleted
}

// The kinds of Change.
const (
	Created = "created"
	Changed = "changed"
	Deleted = "deleted"
)

// attributes keep a snapshot byte for byte: no end-of-line conversion, no
// filters (git-lfs and the like), no ident expansion, whatever the
// project's .gitattributes say. $GIT_DIR/info/attributes wins over them.
const attributes = "* -text -filter -ident -working-tree-encoding\n"

// repo is one root's shadow repository.
type repo struct {
	s    *Store
	root string
	dir  string // the bare repository
	prog string // the git program
}

// shadow opens (creating it on first use) the shadow repository of root.
func (s *Store) shadow(ctx context.Context, root string) (*repo, error) {
	s.mu.Lock()
	if s.git == "" {
		s.git = s.Git
		if s.git == "" {
			p, err := exec.LookPath("git")
			if err != nil {
				s.mu.Unlock()
				return nil, ErrNoGit
			}
			s.git = p
		}
	}
	git := s.git
	s.mu.Unlock()
	sum := sha256.Sum256([]byte(root))
	r := &repo{s: s, root: root, prog: git, dir: filepath.Join(s.Dir, hex.EncodeToString(sum[:8])+".git")}
	if _, err := os.Stat(filepath.Join(r.dir, "sluice-root")); err == nil {
		return r, nil
	}
	// First use: one process at a time makes it (the lock file lives
	// beside the repository, which does not exist yet).
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	unlock, err := s.lockPath(r.dir + ".init")
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(r.dir, "sluice-root")); err == nil {
		return r, nil
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if _, err := r.git(ctx, nil, "init", "--bare", "--quiet", r.dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(r.dir, "info"), 0o700); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if err := os.WriteFile(filepath.Join(r.dir, "info", "attributes"), []byte(attributes), 0o600); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	// Written last: its presence says the repository is ready, and names
	// the root it is for.
	if err := os.WriteFile(filepath.Join(r.dir, "sluice-root"), []byte(root+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return r, nil
}

// git runs git on the shadow repository, with the root as its work tree
// and the shadow's own index, and returns its standard output.
func (r *repo) git(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, r.prog, append([]string{
		"-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false", "-c", "core.autocrlf=false",
		"-c", "core.quotePath=false", "-c", "gc.auto=0", "-c", "maintenance.auto=false",
	}, args...)...)
	cmd.Dir = r.root
	cmd.Env = os.Environ()
	if args[0] != "init" {
		cmd.Env = append(cmd.Env, "GIT_DIR="+r.dir, "GIT_WORK_TREE="+r.root,
			"GIT_INDEX_FILE="+filepath.Join(r.dir, "sluice-index"))
	}
	cmd.Env = append(cmd.Env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=sluice", "GIT_AUTHOR_EMAIL=sluice@localhost",
		"GIT_COMMITTER_NAME=sluice", "GIT_COMMITTER_EMAIL=sluice@localhost",
		"GIT_OPTIONAL_LOCKS=0", "LC_ALL=C")
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("checkpoint: git %s: %v: %s", args[0], err, strings.TrimSpace(errb.String()))
	}
	return out.Bytes(), nil
}

// lock serialises the use of one shadow repository: in this process with
// a mutex, across processes (a console and sluice serve) with a flock.
func (s *Store) lock(r *repo) (unlock func(), err error) {
	return s.lockPath(filepath.Join(r.dir, "sluice-lock"))
}

// lockPath holds the mutex for path in this process and a flock on it.
func (s *Store) lockPath(path string) (unlock func(), err error) {
	s.mu.Lock()
	if s.locks == nil {
		s.locks = map[string]*sync.Mutex{}
	}
	m := s.locks[path]
	if m == nil {
		m = &sync.Mutex{}
		s.locks[path] = m
	}
	s.mu.Unlock()
	m.Lock()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		m.Unlock()
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		m.Unlock()
		return nil, fmt.Errorf("checkpoint: lock: %w", err)
	}
	return func() { f.Close(); m.Unlock() }, nil
}

// Take snapshots root's files and names the snapshot ref (for example
// "01JD…/pre"), so that it is kept until pruned.
func (s *Store) Take(ctx context.Context, root, ref string) (Snapshot, error) {
	r, err := s.shadow(ctx, root)
	if err != nil {
		return Snapshot{}, err
	}
	unlock, err := s.lock(r)
	if err != nil {
		return Snapshot{}, err
	}
	defer unlock()
	// --ignore-errors: a file that cannot be read (permissions, a socket)
	// is left out rather than failing the snapshot.
	if _, err := r.git(ctx, nil, "add", "--all", "--ignore-errors", "--", "."); err != nil {
		return Snapshot{}, err
	}
	tree, err := r.git(ctx, nil, "write-tree")
	if err != nil {
		return Snapshot{}, err
	}
	commit, err := r.git(ctx, []byte("sluice checkpoint "+ref+"\n"), "commit-tree", strings.TrimSpace(string(tree)))
	if err != nil {
		return Snapshot{}, err
	}
	c := strings.TrimSpace(string(commit))
	if _, err := r.git(ctx, nil, "update-ref", "refs/sluice/"+ref, c); err != nil {
		return Snapshot{}, err
	}
	return Snapshot{Root: root, Commit: c}, nil
}

// Warm reads root's files into its shadow repository without taking a
// snapshot, so that the first checkpoint of a project (which copies every
// file) is paid while a person reads the request, not when the run starts.
func (s *Store) Warm(ctx context.Context, root string) error {
	// A burst of requests for one project warms it once.
	s.mu.Lock()
	if s.warm[root] {
		s.mu.Unlock()
		return nil
	}
	if s.warm == nil {
		s.warm = map[string]bool{}
	}
	s.warm[root] = true
	s.mu.Unlock()
	r, err := s.shadow(ctx, root)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(r.dir, "sluice-index")); err == nil {
		return nil // warm already: later snapshots only look at what changed
	}
	unlock, err := s.lock(r)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(r.dir, "sluice-index")); err == nil {
		return nil // another process warmed it meanwhile
	}
	_, err = r.git(ctx, nil, "add", "--all", "--ignore-errors", "--", ".")
	return err
}

// Changes lists the files that differ between two snapshots of one root,
// sorted by path.
func (s *Store) Changes(ctx context.Context, from, to Snapshot) ([]Change, error) {
	if from.Root != to.Root {
		return nil, fmt.Errorf("checkpoint: snapshots of %s and %s", from.Root, to.Root)
	}
	r, err := s.shadow(ctx, from.Root)
	if err != nil {
		return nil, err
	}
	out, err := r.git(ctx, nil, "diff-tree", "-r", "-z", "--no-renames", "--name-status", from.Commit, to.Commit)
	if err != nil {
		return nil, err
	}
	var cs []Change
	fields := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		kind := Changed
		switch fields[i] {
		case "A":
			kind = Created
		case "D":
			kind = Deleted
		}
		cs = append(cs, Change{Path: filepath.Join(from.Root, filepath.FromSlash(fields[i+1])), Change: kind})
	}
	return cs, nil
}

// Diff is the unified diff between two snapshots of one root, limited to
// paths (absolute, under the root) when any are given.
func (s *Store) Diff(ctx context.Context, from, to Snapshot, paths []string) (string, error) {
	r, err := s.shadow(ctx, from.Root)
	if err != nil {
		return "", err
	}
	args := []string{"diff", "--no-color", "--no-ext-diff", "--no-renames", from.Commit, to.Commit, "--"}
	rel, err := relPaths(from.Root, paths)
	if err != nil {
		return "", err
	}
	out, err := r.git(ctx, nil, append(args, rel...)...)
	return string(out), err
}

// Restore makes the files at paths (absolute, under the snapshot's root)
// what they were in snap: their content and mode, or absent if they did
// not exist then.
func (s *Store) Restore(ctx context.Context, snap Snapshot, paths []string) error {
	r, err := s.shadow(ctx, snap.Root)
	if err != nil {
		return err
	}
	unlock, err := s.lock(r)
	if err != nil {
		return err
	}
	defer unlock()
	rel, err := relPaths(snap.Root, paths)
	if err != nil {
		return err
	}
	// Every path is checked before any is touched: nothing is restored
	// through a directory that became a symlink out of the root, and a
	// path that became a directory (or whose parent became a file) stops
	// the undo before it starts, not half way.
	root, err := filepath.EvalSymlinks(snap.Root)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	for _, abs := range paths {
		if err := beneath(root, abs); err != nil {
			return err
		}
	}
	for i, p := range rel {
		out, err := r.git(ctx, nil, "ls-tree", "-z", snap.Commit, "--", p)
		if err != nil {
			return err
		}
		abs := paths[i]
		if len(out) == 0 { // absent then: remove it now
			if err := os.Remove(abs); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("checkpoint: restore %s: %w", abs, err)
			}
			continue
		}
		// "<mode> blob <sha>\t<path>\x00"
		meta, _, _ := strings.Cut(string(out), "\t")
		f := strings.Fields(meta)
		if len(f) != 3 || f[1] != "blob" {
			return fmt.Errorf("checkpoint: restore %s: not a file in the snapshot (%s)", abs, meta)
		}
		data, err := r.git(ctx, nil, "cat-file", "blob", f[2])
		if err != nil {
			return err
		}
		if err := writeFile(abs, data, f[0]); err != nil {
			return fmt.Errorf("checkpoint: restore %s: %w", abs, err)
		}
	}
	return nil
}

// beneath checks that path can be written or removed without leaving
// root: its nearest existing parent resolves under root, and it is not a
// directory now.
func beneath(root, path string) error {
	if fi, err := os.Lstat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("checkpoint: %s is a directory now; undo it by hand", path)
	}
	dir := filepath.Dir(path)
	for {
		fi, err := os.Lstat(dir)
		if err == nil {
			if fi.Mode()&os.ModeSymlink == 0 && !fi.IsDir() {
				return fmt.Errorf("checkpoint: %s is a file now, where a directory was; undo it by hand", dir)
			}
			break
		}
		if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("checkpoint: %w", err)
		}
		dir = filepath.Dir(dir)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if real != root && !strings.HasPrefix(real, root+string(filepath.Separator)) {
		return fmt.Errorf("checkpoint: %s leads out of %s (through a symbolic link); nothing was restored", path, root)
	}
	return nil
}

// writeFile puts data at path atomically with git's mode (100644, 100755
// or 120000 for a symlink).
func writeFile(path string, data []byte, mode string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".sluice-undo")
	_ = os.Remove(tmp)
	if mode == "120000" {
		if err := os.Symlink(string(data), tmp); err != nil {
			return err
		}
	} else {
		perm := os.FileMode(0o644)
		if mode == "100755" {
			perm = 0o755
		}
		if err := os.WriteFile(tmp, data, perm); err != nil {
			return err
		}
		if err := os.Chmod(tmp, perm); err != nil { // the umask does not decide
			return err
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// relPaths turns absolute paths under root into root-relative slash paths.
func relPaths(root string, paths []string) ([]string, error) {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || rel == ".." {
			return nil, fmt.Errorf("checkpoint: %s is not under %s", p, root)
		}
		out = append(out, filepath.ToSlash(rel))
	}
	return out, nil
}

// Ref is a snapshot named by ref in root's shadow repository (Take's
// name), for undoing what a past run did.
func (s *Store) Ref(ctx context.Context, root, ref string) (Snapshot, error) {
	r, err := s.shadow(ctx, root)
	if err != nil {
		return Snapshot{}, err
	}
	out, err := r.git(ctx, nil, "rev-parse", "--verify", "--quiet", "refs/sluice/"+ref)
	if err != nil {
		return Snapshot{}, fmt.Errorf("checkpoint: no checkpoint %s for %s (pruned, or never taken)", ref, root)
	}
	return Snapshot{Root: root, Commit: strings.TrimSpace(string(out))}, nil
}

// Prune drops, in every shadow repository, the checkpoints beyond the
// newest keep and those older than maxAge (0: no age limit), then lets
// git reclaim their space. It returns how many it dropped.
func (s *Store) Prune(ctx context.Context, keep int, maxAge time.Duration, now time.Time) (int, error) {
	dirs, err := filepath.Glob(filepath.Join(s.Dir, "*.git"))
	if err != nil {
		return 0, err
	}
	dropped := 0
	for _, d := range dirs {
		root, err := os.ReadFile(filepath.Join(d, "sluice-root"))
		if err != nil {
			continue
		}
		r, err := s.shadow(ctx, strings.TrimSuffix(string(root), "\n"))
		if err != nil {
			return dropped, err
		}
		n, err := s.pruneRepo(ctx, r, keep, maxAge, now)
		dropped += n
		if err != nil {
			return dropped, err
		}
	}
	return dropped, nil
}

func (s *Store) pruneRepo(ctx context.Context, r *repo, keep int, maxAge time.Duration, now time.Time) (int, error) {
	unlock, err := s.lock(r)
	if err != nil {
		return 0, err
	}
	defer unlock()
	// Newest first: refs are named by request id, a ULID, which sorts by
	// time (the commit dates only have seconds).
	out, err := r.git(ctx, nil, "for-each-ref", "--sort=-refname", "--format=%(creatordate:unix) %(refname)", "refs/sluice/")
	if err != nil {
		return 0, err
	}
	// A run's checkpoints (pre, post) count as one.
	var stdin bytes.Buffer
	runs := map[string]int{}
	order := 0
	dropped := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		ts, ref, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		run := strings.TrimPrefix(ref, "refs/sluice/")
		run, _, _ = strings.Cut(run, "/")
		idx, seen := runs[run]
		if !seen {
			idx = order
			runs[run] = idx
			order++
		}
		var sec int64
		fmt.Sscan(ts, &sec)
		old := maxAge > 0 && now.Sub(time.Unix(sec, 0)) > maxAge
		if idx >= keep || old {
			stdin.WriteString("delete " + ref + "\n")
			if !seen {
				dropped++
			}
		}
	}
	if stdin.Len() == 0 {
		return 0, nil
	}
	if _, err := r.git(ctx, stdin.Bytes(), "update-ref", "--stdin"); err != nil {
		return 0, err
	}
	if _, err := r.git(ctx, nil, "reflog", "expire", "--expire=now", "--all"); err != nil {
		return dropped, err
	}
	if _, err := r.git(ctx, nil, "gc", "--prune=now", "--quiet"); err != nil {
		return dropped, err
	}
	return dropped, nil
}

// Time is when snap was taken (to the second).
func (s *Store) Time(ctx context.Context, snap Snapshot) (time.Time, error) {
	r, err := s.shadow(ctx, snap.Root)
	if err != nil {
		return time.Time{}, err
	}
	out, err := r.git(ctx, nil, "show", "-s", "--format=%ct", snap.Commit)
	if err != nil {
		return time.Time{}, err
	}
	var sec int64
	if _, err := fmt.Sscan(strings.TrimSpace(string(out)), &sec); err != nil {
		return time.Time{}, fmt.Errorf("checkpoint: the time of %s: %w", snap.Commit, err)
	}
	return time.Unix(sec, 0), nil
}
