package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Access is a set of rights a grant gives on a path and everything
// beneath it.
type Access uint32

// The rights a grant can give. They map onto Landlock's access rights
// (and, on macOS, onto Seatbelt operations).
const (
	Read    Access = 1 << iota // read files
	ReadDir                    // list directories
	Exec                       // execute files
	Write                      // write and truncate existing files
	Create                     // create, remove, rename and link entries (no device nodes)
	Ioctl                      // ioctl on device files
)

// fileAccess is what applies to a file that is not a directory.
const fileAccess = Read | Exec | Write | Ioctl

const (
	readAll  = Read | ReadDir | Exec
	writeAll = Write | Create
)

// Grant is one rule: Access on Path and, for a directory, on everything
// beneath it.
type Grant struct {
	Path   string
	Access Access
	Dir    bool
}

// Plan turns a spec into grants. Every path is made absolute and has its
// symlinks resolved first, since the kernel grants the object a path
// names, not the name. Hidden paths are carved out: where a grant's
// directory holds a hidden path, it is split into grants for each entry
// on the way down, and the directories on that way get only the right to
// be listed (read grants) or nothing (write grants). So files directly in
// a directory that holds a hidden path can be changed but not created
// there, and a hidden directory's entries can be listed but not read.
func Plan(s *Spec) []Grant {
	hidden := resolveAll(s.Hidden)
	p := planner{hidden: hidden}
	p.carve("/", readAll, ReadDir)
	writable := slices.Clone(s.Writable)
	if s.Profile.Writes() {
		writable = append(writable, s.Roots...)
		writable = append(writable, "/dev/shm")
	}
	if s.TmpDir != "" {
		writable = append(writable, s.TmpDir)
	}
	for _, w := range resolveAll(writable) {
		p.carve(w, readAll|writeAll, 0)
	}
	devices := []string{"/dev/null", "/dev/tty"}
	if s.TTY != "" {
		devices = append(devices, s.TTY)
	}
	for _, d := range resolveAll(devices) {
		if !p.isHidden(d) {
			p.emit(d, Read|Write|Ioctl, false)
		}
	}
	for _, r := range resolveAll(s.Readable) {
		p.emit(r, Read, false)
	}
	return p.grants
}

type planner struct {
	hidden []string
	grants []Grant
}

func (p *planner) emit(path string, a Access, dir bool) {
	if !dir {
		a &= fileAccess
	}
	if a != 0 {
		p.grants = append(p.grants, Grant{Path: path, Access: a, Dir: dir})
	}
}

// isHidden reports whether path is a hidden path or lies inside one.
func (p *planner) isHidden(path string) bool {
	for _, h := range p.hidden {
		if within(h, path) {
			return true
		}
	}
	return false
}

// holdsHidden reports whether a hidden path lies strictly inside dir.
func (p *planner) holdsHidden(dir string) bool {
	for _, h := range p.hidden {
		if h != dir && within(dir, h) {
			return true
		}
	}
	return false
}

// carve grants a on path, or, when a hidden path lies inside it, dirAccess
// on path itself and a on each of its entries, recursively. Symlinks are
// never granted: what a link leads to is judged by its own place.
func (p *planner) carve(path string, a, dirAccess Access) {
	if p.isHidden(path) {
		return
	}
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&os.ModeSymlink != 0 {
		return
	}
	if !fi.IsDir() {
		p.emit(path, a, false)
		return
	}
	if !p.holdsHidden(path) {
		p.emit(path, a, true)
		return
	}
	p.emit(path, dirAccess, true)
	entries, err := os.ReadDir(path)
	if err != nil {
		return
	}
	for _, e := range entries {
		p.carve(filepath.Join(path, e.Name()), a, dirAccess)
	}
}

// within reports whether p is dir or lies beneath it (both clean and
// absolute).
func within(dir, p string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// resolveAll makes each path absolute and resolves its symlinks, dropping
// paths that do not exist and duplicates.
func resolveAll(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			continue
		}
		r, err := filepath.EvalSymlinks(abs)
		if err != nil {
			continue
		}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}
