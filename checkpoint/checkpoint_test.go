package checkpoint

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func needGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
}

// gitIn runs the user's own git in dir, as the user would.
func gitIn(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=Dev", "-c", "user.email=dev@example.com"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func write(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// projectStore is a project (see project) and an empty store for its
// checkpoints.
func projectStore(t testing.TB) (context.Context, string, *Store) {
	t.Helper()
	return context.Background(), project(t), &Store{Dir: t.TempDir()}
}

// project is a git repository with tracked, untracked and ignored files,
// a staged change, a stash and a second branch: the user's state, which
// checkpoints must not touch.
func project(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q", "-b", "main")
	write(t, filepath.Join(dir, ".gitignore"), "build/\n*.log\n", 0o644)
	write(t, filepath.Join(dir, ".gitattributes"), "*.txt text eol=crlf\n", 0o644)
	write(t, filepath.Join(dir, "main.go"), "package main\n\nfunc main() {}\n", 0o644)
	write(t, filepath.Join(dir, "run.sh"), "#!/bin/sh\necho hi\n", 0o755)
	write(t, filepath.Join(dir, "notes.txt"), "line one\r\nline two\r\n", 0o644)
	gitIn(t, dir, "add", ".")
	gitIn(t, dir, "commit", "-q", "-m", "init")
	gitIn(t, dir, "branch", "feature")
	write(t, filepath.Join(dir, "main.go"), "package main\n\nfunc main() { println(1) }\n", 0o644)
	gitIn(t, dir, "stash", "-q")
	write(t, filepath.Join(dir, "staged.go"), "package main\n", 0o644)
	gitIn(t, dir, "add", "staged.go")
	write(t, filepath.Join(dir, "untracked.md"), "# draft\n", 0o644)
	write(t, filepath.Join(dir, "build", "out.bin"), "ignored\n", 0o644)
	write(t, filepath.Join(dir, "debug.log"), "ignored\n", 0o644)
	return dir
}

// gitState is everything of the user's repository a checkpoint must
// leave alone.
func gitState(t testing.TB, dir string) string {
	t.Helper()
	index, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join([]string{
		gitIn(t, dir, "rev-parse", "HEAD"),
		gitIn(t, dir, "branch", "--list"),
		gitIn(t, dir, "stash", "list"),
		string(index),
	}, "\x00")
}

// snapshot of every file under dir (but .git): path → mode and content.
func files(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = fi.Mode().String() + " " + string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCheckpointUndo: a run that creates, edits and deletes tracked and
// untracked files (and changes a mode) is listed file by file, and
// restoring the files to the checkpoint gives back every byte; the
// user's git state is untouched throughout.
func TestCheckpointUndo(t *testing.T) {
	needGit(t)
	t.Parallel()
	ctx := context.Background()
	dir := project(t)
	before := files(t, dir)
	state := gitState(t, dir)
	s := &Store{Dir: t.TempDir()}

	pre, err := s.Take(ctx, dir, "run1/pre")
	if err != nil {
		t.Fatal(err)
	}
	// What a command (sed -i, rm, a generator) does.
	write(t, filepath.Join(dir, "notes.txt"), "line one\r\nline 2\r\n", 0o644) // tracked, edited (CRLF kept)
	write(t, filepath.Join(dir, "untracked.md"), "# draft, longer\n", 0o644)   // untracked, edited
	if err := os.Remove(filepath.Join(dir, "run.sh")); err != nil {            // tracked, deleted
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "gen", "types.go"), "package gen\n", 0o644)      // created
	write(t, filepath.Join(dir, "staged.go"), "package main // edited\n", 0o600) // staged, edited
	write(t, filepath.Join(dir, "build", "out.bin"), "rebuilt\n", 0o644)         // ignored
	post, err := s.Take(ctx, dir, "run1/post")
	if err != nil {
		t.Fatal(err)
	}
	changes, err := s.Changes(ctx, pre, post)
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{
		{filepath.Join(dir, "gen/types.go"), Created},
		{filepath.Join(dir, "notes.txt"), Changed},
		{filepath.Join(dir, "run.sh"), Deleted},
		{filepath.Join(dir, "staged.go"), Changed},
		{filepath.Join(dir, "untracked.md"), Changed},
	}
	if !reflect.DeepEqual(changes, want) {
		t.Errorf("changes:\n got %v\nwant %v", changes, want)
	}
	if gitState(t, dir) != state {
		t.Error("taking checkpoints changed the user's git state")
	}
	diff, err := s.Diff(ctx, post, pre, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(diff, "-line 2\r") || !strings.Contains(diff, "+line 2") && !strings.Contains(diff, "+line two\r") {
		t.Errorf("the undo diff does not show the edit:\n%s", diff)
	}

	// Undo: every changed path back to the checkpoint.
	var paths []string
	for _, c := range changes {
		paths = append(paths, c.Path)
	}
	if err := s.Restore(ctx, pre, paths); err != nil {
		t.Fatal(err)
	}
	after := files(t, dir)
	before["build/out.bin"] = after["build/out.bin"] // ignored: not checkpointed, said so
	if !reflect.DeepEqual(after, before) {
		for k, v := range before {
			if after[k] != v {
				t.Errorf("%s: %q, want %q", k, after[k], v)
			}
		}
		for k := range after {
			if _, ok := before[k]; !ok {
				t.Errorf("%s left behind", k)
			}
		}
	}
	if gitState(t, dir) != state {
		t.Error("the undo changed the user's git state")
	}
	if _, err := os.Stat(filepath.Join(dir, "gen")); err == nil {
		// The directory a created file needed may stay; the file may not.
		if _, err := os.Stat(filepath.Join(dir, "gen", "types.go")); err == nil {
			t.Error("the created file survived the undo")
		}
	}
}

// TestCheckpointRef: a snapshot is found again by its name, and pruning
// keeps the newest runs.
func TestCheckpointPrune(t *testing.T) {
	needGit(t)
	t.Parallel()
	ctx, dir, s := projectStore(t)
	for _, run := range []string{"r1", "r2", "r3"} {
		write(t, filepath.Join(dir, "main.go"), "package main // "+run+"\n", 0o644)
		if _, err := s.Take(ctx, dir, run+"/pre"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Take(ctx, dir, run+"/post"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Ref(ctx, dir, "r1/pre"); err != nil {
		t.Fatal(err)
	}
	n, err := s.Prune(ctx, 2, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("pruned %d runs, want 1", n)
	}
	if _, err := s.Ref(ctx, dir, "r1/pre"); err == nil {
		t.Error("the oldest run's checkpoint survived pruning to 2")
	}
	if _, err := s.Ref(ctx, dir, "r3/post"); err != nil {
		t.Errorf("the newest run's checkpoint was pruned: %v", err)
	}
	n, err = s.Prune(ctx, 100, time.Nanosecond, time.Now().Add(time.Hour))
	if err != nil || n != 2 {
		t.Errorf("pruning by age dropped %d (%v), want 2", n, err)
	}
}

// TestCheckpointNoUserConfig: the user's global git configuration does
// not reach the shadow repository (a clean filter there would store
// something else than the file's bytes).
func TestCheckpointNoUserConfig(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	marker := filepath.Join(home, "filter-ran")
	write(t, filepath.Join(home, ".gitconfig"), "[filter \"x\"]\n\tclean = touch "+marker+"; cat\n\trequired = true\n", 0o644)
	dir := t.TempDir()
	write(t, filepath.Join(dir, ".gitattributes"), "* filter=x\n", 0o644)
	write(t, filepath.Join(dir, "a.txt"), "content\r\n", 0o644)
	s := &Store{Dir: t.TempDir()}
	pre, err := s.Take(ctx, dir, "x/pre")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the user's clean filter ran")
	}
	write(t, filepath.Join(dir, "a.txt"), "other\n", 0o644)
	if err := s.Restore(ctx, pre, []string{filepath.Join(dir, "a.txt")}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a.txt")); !bytes.Equal(got, []byte("content\r\n")) {
		t.Errorf("restored %q", got)
	}
}

// TestWarm: warming reads the project in without a snapshot; the first
// checkpoint after it holds the files as they are then.
func TestWarm(t *testing.T) {
	needGit(t)
	t.Parallel()
	ctx, dir, s := projectStore(t)
	if err := s.Warm(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Ref(ctx, dir, "any/pre"); err == nil {
		t.Fatal("warming took a snapshot")
	}
	write(t, filepath.Join(dir, "main.go"), "package main // after warming\n", 0o644)
	pre, err := s.Take(ctx, dir, "w/pre")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "main.go"), "package main // run\n", 0o644)
	post, err := s.Take(ctx, dir, "w/post")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Restore(ctx, pre, []string{filepath.Join(dir, "main.go")}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "main.go")); string(got) != "package main // after warming\n" {
		t.Errorf("restored %q, want the file as it was at the checkpoint", got)
	}
	if cs, err := s.Changes(ctx, pre, post); err != nil || len(cs) != 1 {
		t.Errorf("changes %v, %v", cs, err)
	}
}

// TestRestoreStaysInRoot: a directory swapped for a symlink out of the
// project, or for a file, stops the restore before anything is written.
func TestRestoreStaysInRoot(t *testing.T) {
	needGit(t)
	t.Parallel()
	ctx := context.Background()
	dir := project(t)
	outside := t.TempDir()
	write(t, filepath.Join(dir, "keys", "authorized_keys"), "ours\n", 0o644)
	s := &Store{Dir: t.TempDir()}
	pre, err := s.Take(ctx, dir, "r/pre")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "keys")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "keys")); err != nil {
		t.Fatal(err)
	}
	err = s.Restore(ctx, pre, []string{filepath.Join(dir, "main.go"), filepath.Join(dir, "keys", "authorized_keys")})
	if err == nil || !strings.Contains(err.Error(), "leads out of") {
		t.Fatalf("restore through a symlink out of the root: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "authorized_keys")); err == nil {
		t.Fatal("a file was written outside the project")
	}
}
