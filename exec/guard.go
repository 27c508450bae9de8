package exec

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The guard: what a confined run must not change because a person's
// ordinary action runs it later with all their rights. git runs its hooks
// on commit, and what its config names (core.fsmonitor, core.hooksPath,
// core.sshCommand, diff and merge drivers, include.path) on status, diff
// or fetch; direnv runs .envrc on cd; an editor runs .vscode/tasks.json;
// the agents read their project settings (hooks, allowed commands, MCP
// servers). Landlock cannot refuse writes to these names inside a
// writable root without refusing new entries beside them, so a confined
// run that writes in its roots has them taken before it starts and put
// back after it, and the run's output says so: only a person's unconfined
// approval may change them.

// guardedFiles are the files, relative to a root, a run may not change.
var guardedFiles = []string{
	".envrc", ".env.local.sh",
	".vscode/tasks.json", ".vscode/settings.json", ".vscode/launch.json",
	".claude/settings.json", ".claude/settings.local.json", ".mcp.json",
	".gemini/settings.json", ".codex/config.toml",
	".gitmodules",
}

// guardedGitFiles and guardedGitDirs are relative to a repository's git
// directory (.git, or a submodule's under .git/modules).
var (
	guardedGitFiles = []string{"config", "config.worktree", "commondir", "gitdir"}
	guardedGitDirs  = []string{"hooks", "info"}
)

// guardMaxFile bounds what is kept of one file: hooks and configs are
// small, and a larger file is restored by removing what the run made of
// it (see restore).
const guardMaxFile = 1 << 20

// guardEntry is what one guarded path was before the run.
type guardEntry struct {
	exists bool
	mode   fs.FileMode
	link   string // a symlink's target
	data   []byte
	big    bool  // larger than guardMaxFile, or a hook sample: data not kept
	size   int64 // for an entry whose data is not kept: how it is told changed
	mtime  int64
}

// Guard holds the guarded paths of a run's roots as they were.
type Guard struct {
	files map[string]guardEntry // path → before
	dirs  map[string]bool       // guarded directories → existed
}

// TakeGuard records the guarded paths of roots.
func TakeGuard(roots []string) *Guard {
	g := &Guard{files: map[string]guardEntry{}, dirs: map[string]bool{}}
	for _, root := range roots {
		for _, f := range guardedFiles {
			g.file(filepath.Join(root, f))
		}
		gitDir := filepath.Join(root, ".git")
		if fi, err := os.Lstat(gitDir); err != nil || !fi.IsDir() {
			// A worktree's or submodule's .git file names a git directory
			// elsewhere: the file itself is guarded (a run could point it
			// at a directory of its own).
			g.file(gitDir)
			continue
		}
		g.gitDir(gitDir)
		if mods, err := os.ReadDir(filepath.Join(gitDir, "modules")); err == nil {
			for _, m := range mods {
				if m.IsDir() {
					g.gitDir(filepath.Join(gitDir, "modules", m.Name()))
				}
			}
		}
	}
	return g
}

// gitDir records the guarded paths of one git directory, and what its
// config names: the hooks directory and the included files.
func (g *Guard) gitDir(dir string) {
	for _, f := range guardedGitFiles {
		g.file(filepath.Join(dir, f))
	}
	for _, d := range guardedGitDirs {
		g.dir(filepath.Join(dir, d))
	}
	data, err := os.ReadFile(filepath.Join(dir, "config"))
	if err != nil {
		return
	}
	hooks, includes := gitConfigPaths(data)
	for _, h := range hooks {
		// Relative to where git runs its hooks: the work tree.
		g.dir(gitPath(filepath.Dir(dir), h))
	}
	for _, i := range includes {
		// Relative to the file that includes it.
		g.file(gitPath(dir, i))
	}
}

// gitPath resolves a path from a git config: ~ is the home directory, a
// relative one is relative to base.
func gitPath(base, p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		home, _ := os.UserHomeDir()
		return filepath.Join(home, rest)
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(base, p)
}

// gitConfigPaths returns the core.hooksPath values and the include.path
// and includeIf.*.path values of a git config file. It reads the format
// loosely (section headers, key = value, quotes dropped): it only needs
// to find the names, and a name it misreads guards a path too many.
func gitConfigPaths(data []byte) (hooks, includes []string) {
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimSpace(line[1:end]), " ")
			section = strings.ToLower(name)
			line = strings.TrimSpace(line[end+1:])
			if line == "" {
				continue
			}
		}
		key, val, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		key = strings.ToLower(strings.TrimSpace(key))
		val = strings.Trim(strings.TrimSpace(val), `"`)
		if val == "" {
			continue
		}
		switch {
		case section == "core" && key == "hookspath":
			hooks = append(hooks, val)
		case (section == "include" || section == "includeif") && key == "path":
			includes = append(includes, val)
		}
	}
	return hooks, includes
}

// Existing lists the guarded paths that exist: each guarded file, and
// each guarded directory as a whole (a boxed run gets them read-only).
func (g *Guard) Existing() []string {
	var out []string
	for d, existed := range g.dirs {
		if existed {
			out = append(out, d)
		}
	}
	for p, e := range g.files {
		if e.exists && !slices.ContainsFunc(out, func(d string) bool { return strings.HasPrefix(p, d+"/") }) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// file records path as it is.
func (g *Guard) file(path string) {
	if _, ok := g.files[path]; ok {
		return
	}
	g.files[path] = readGuarded(path)
}

// dir records a guarded directory and every entry beneath it.
func (g *Guard) dir(path string) {
	if _, ok := g.dirs[path]; ok {
		return
	}
	fi, err := os.Lstat(path)
	g.dirs[path] = err == nil && fi.IsDir()
	if !g.dirs[path] {
		g.file(path) // a file or link where a directory is expected
		return
	}
	_ = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			g.file(p)
		}
		return nil
	})
}

func readGuarded(path string) guardEntry {
	fi, err := os.Lstat(path)
	if err != nil {
		return guardEntry{}
	}
	e := guardEntry{exists: true, mode: fi.Mode(), size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		e.link, _ = os.Readlink(path)
	case fi.Mode().IsRegular() && strings.HasSuffix(path, ".sample"):
		// git never runs a hook sample: its content is not kept (a
		// dozen reads a run), only that it is there; one the run
		// changed is removed (restore), a sample being optional.
		e.big = true
	case fi.Mode().IsRegular() && fi.Size() <= guardMaxFile:
		if e.data, err = os.ReadFile(path); err != nil {
			e.big = true
		}
	default:
		e.big = true
	}
	return e
}

// same reports whether a and b are the same content, mode and kind.
func (e guardEntry) same(o guardEntry) bool {
	if e.exists != o.exists || e.mode != o.mode || e.link != o.link || e.big != o.big {
		return false
	}
	if e.big {
		return e.size == o.size && e.mtime == o.mtime
	}
	return bytes.Equal(e.data, o.data)
}

// Restore puts every guarded path back as it was and returns those the
// run had changed, sorted.
func (g *Guard) Restore() []string {
	var changed []string
	// What the run added inside a guarded directory, or the directory
	// itself where there was none.
	for d, existed := range g.dirs {
		if !existed {
			if fi, err := os.Lstat(d); err == nil && fi.IsDir() {
				changed = append(changed, d)
				_ = os.RemoveAll(d)
			}
			continue
		}
		_ = filepath.WalkDir(d, func(p string, de fs.DirEntry, err error) error {
			if err != nil || de.IsDir() {
				return nil
			}
			if _, known := g.files[p]; !known {
				changed = append(changed, p)
				_ = os.Remove(p)
			}
			return nil
		})
	}
	for p, before := range g.files {
		now := readGuarded(p)
		if before.same(now) {
			continue
		}
		changed = append(changed, p)
		putBack(p, before)
		if before.big {
			g.files[p] = guardEntry{} // removed, not put back: gone from now on
		}
	}
	slices.Sort(changed)
	return slices.Compact(changed)
}

// putBack makes path what before says it was.
func putBack(path string, before guardEntry) {
	if fi, err := os.Lstat(path); err == nil && fi.IsDir() {
		_ = os.RemoveAll(path)
	} else {
		_ = os.Remove(path)
	}
	switch {
	case !before.exists, before.big:
		// Gone, or too large to have been kept: what the run left is
		// removed, not trusted.
	case before.link != "":
		_ = os.Symlink(before.link, path)
	default:
		_ = os.MkdirAll(filepath.Dir(path), 0o755)
		tmp := path + ".sluice-restore"
		if err := os.WriteFile(tmp, before.data, before.mode.Perm()); err == nil {
			_ = os.Chmod(tmp, before.mode.Perm())
			_ = os.Rename(tmp, path)
		}
	}
}

// GuardNote is the line a run's output ends with when it changed guarded
// paths, which were put back.
func GuardNote(changed []string) string {
	if len(changed) == 0 {
		return ""
	}
	shown := changed
	if len(shown) > 5 {
		shown = shown[:5]
	}
	more := ""
	if len(changed) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(changed)-len(shown))
	}
	back := "them back as they were"
	if len(changed) == 1 {
		back = "it back as it was"
	}
	return fmt.Sprintf("sluice: WARNING: the run changed %s%s, which git, direnv, an editor or an agent runs later with your rights; sluice put %s. Only a person's unconfined approval (console key U) may change them.\n",
		strings.Join(shown, ", "), more, back)
}
