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

// Layers is a spec planned as two layers whose intersection is the
// confinement (Landlock stacks rulesets: an access must be allowed by
// every layer that handles it).
//
// Base depends on the hidden paths alone: it grants every right on
// everything but them, carved (see below). It is costly to build (it reads
// the directories on the way down to each hidden path) and the same for
// every run, so it is built once and reused while the directories in
// Watch are unchanged, or brought up to date where what changed is new
// entries in them (see refresh); a process that confines once (sluice
// sandbox) may keep its plan for the next (Spec.PlanCache). Run handles
// only the write and device rights and grants the run's own: the roots
// (for a profile that writes), the caches, the temporary directory, the
// terminal.
//
// Carving: where a directory holds a hidden path, it is split into grants
// for each entry on the way down, and the directories on that way get only
// the right to be listed. So a hidden directory's entries can be listed
// but not read, and entries can be changed but not created directly in a
// directory that holds a hidden path. Symlinks are never granted: what a
// link leads to is judged by its own place. Every path is made absolute
// and has its symlinks resolved first, since the kernel grants the object
// a path names, not the name.
type Layers struct {
	Base  []Grant
	Watch []string
	Run   []Grant
}

// BaseSpec is what the base layer depends on: the hidden paths, the
// closed directories and what opens part of them.
type BaseSpec struct {
	Hidden []string
	Closed []string
	// Open are the paths inside closed directories the base grants: the
	// readable paths, the roots, the caches, the temporary directory.
	Open []string
}

// Base is the part of s the base layer depends on.
func (s *Spec) Base() BaseSpec {
	open := slices.Clone(s.Readable)
	open = append(open, s.Roots...)
	open = append(open, s.Writable...)
	if s.TmpDir != "" {
		open = append(open, s.TmpDir)
	}
	return BaseSpec{Hidden: s.Hidden, Closed: s.Closed, Open: open}
}

// key names b for the cache of built bases: the paths as given (cheap;
// two spellings of one place only cost a second base), and of the open
// paths only those inside a closed directory, the others changing nothing
// of the base: a run's private temporary directory, new for every run,
// lies outside them (a symlink that leads into one is resolved when the
// base is planned, and misses the cache at worst).
func (b BaseSpec) key() string {
	var k strings.Builder
	for _, l := range [][]string{b.Hidden, b.Closed} {
		for _, p := range l {
			k.WriteString(p)
			k.WriteByte(0)
		}
		k.WriteByte(1)
	}
	for _, o := range b.Open {
		o = filepath.Clean(o)
		if slices.ContainsFunc(b.Closed, func(c string) bool { return within(filepath.Clean(c), o) }) {
			k.WriteString(o)
			k.WriteByte(0)
		}
	}
	return k.String()
}

// PlanBase plans the base layer: every right on everything but the hidden
// paths and the closed directories, carved, plus every right on the open
// paths inside the closed directories (carved around the hidden paths in
// them); and the directories whose change (an entry added, removed or
// renamed) makes the plan stale: those it listed, the nearest existing
// parent of each hidden path, and of each open path that does not exist
// yet.
func PlanBase(b BaseSpec) (grants []Grant, watch []string) {
	p := planBase(b)
	return p.grants, p.watch
}

// planBase is PlanBase, returning the planner: what it planned for each
// entry of each directory it carved, too.
func planBase(b BaseSpec) *planner {
	p := newPlanner(b)
	p.entries = map[string][]plannedEntry{}
	p.carve("/", readAll|writeAll|Ioctl, ReadDir)
	for _, o := range p.open {
		p.carve(o, readAll|writeAll|Ioctl, ReadDir)
	}
	for _, h := range b.Hidden {
		if d := nearestDir(h); d != "" {
			p.watch = appendNew(p.watch, d)
		}
	}
	for _, o := range closedOnly(b.Open, b.Closed, p.closed) {
		if _, err := os.Lstat(o); err != nil {
			if d := nearestDir(o); d != "" {
				p.watch = appendNew(p.watch, d)
			}
		}
	}
	return p
}

// newPlanner resolves b's paths. Of the open paths it keeps those inside
// a closed directory (the rest are granted anyway) that are not inside
// another one kept, and drops any that is a closed directory or holds one:
// a root that is the home directory, or /, opens nothing.
//
// Only the open paths named inside a closed directory are resolved (those
// outside are granted anyway): a path outside that is a symlink into a
// home directory opens nothing there.
func newPlanner(b BaseSpec) *planner {
	p := &planner{hidden: resolveAll(b.Hidden), closed: resolveAll(b.Closed)}
	var open []string
	for _, o := range resolveAll(closedOnly(b.Open, b.Closed, p.closed)) {
		if slices.ContainsFunc(p.closed, func(c string) bool { return within(o, c) }) {
			continue
		}
		if slices.ContainsFunc(p.closed, func(c string) bool { return within(c, o) }) {
			open = append(open, o)
		}
	}
	slices.Sort(open)
	for _, o := range open {
		if !slices.ContainsFunc(p.open, func(q string) bool { return within(q, o) }) {
			p.open = append(p.open, o)
		}
	}
	return p
}

// closedOnly keeps the paths of open that lie, as named, inside one of
// the closed directories (as named, or as resolved).
func closedOnly(open, closed, resolved []string) []string {
	var out []string
	for _, o := range open {
		o = filepath.Clean(o)
		in := func(c string) bool { return within(filepath.Clean(c), o) }
		if slices.ContainsFunc(closed, in) || slices.ContainsFunc(resolved, in) {
			out = append(out, o)
		}
	}
	return out
}

// nearestDir is the nearest existing directory above path h: where h would
// appear (or be replaced) as an entry, changing that directory.
func nearestDir(h string) string {
	if h == "" || !filepath.IsAbs(h) {
		return ""
	}
	d := filepath.Dir(filepath.Clean(h))
	for d != "/" {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			break
		}
		d = filepath.Dir(d)
	}
	return d
}

// PlanRun plans the run's own layer: writes to the roots (for a profile
// that writes), /dev/shm (likewise), the caches and the temporary
// directory, and writes and ioctls on /dev/null, /dev/tty and the run's
// terminal.
func PlanRun(s *Spec) []Grant {
	p := planner{}
	writable := slices.Clone(s.Writable)
	if s.Profile.Writes() {
		writable = append(writable, s.Roots...)
		writable = append(writable, "/dev/shm")
	}
	if s.TmpDir != "" {
		writable = append(writable, s.TmpDir)
	}
	for _, w := range resolveAll(writable) {
		if fi, err := os.Stat(w); err == nil {
			p.emit(w, writeAll, fi.IsDir())
		}
	}
	devices := []string{"/dev/null", "/dev/tty"}
	if s.TTY != "" {
		devices = append(devices, s.TTY)
	}
	// Devices are named as they are: nothing under /dev/pts is a link,
	// and a name that is gone is skipped when it is opened.
	for _, d := range devices {
		p.emit(d, Write|Ioctl, false)
	}
	return p.grants
}

// Plan plans both layers of s.
func Plan(s *Spec) Layers {
	base, watch := PlanBase(s.Base())
	return Layers{Base: base, Watch: watch, Run: PlanRun(s)}
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

type planner struct {
	hidden []string
	closed []string // closed directories
	open   []string // what opens them, inside them, outermost only
	grants []Grant
	watch  []string // the directories carve listed
	// entries holds, for each directory carve listed (when not nil), what
	// it planned for each entry, in the order listed.
	entries map[string][]plannedEntry
}

// plannedEntry is what the planner made of one entry of a directory it
// carved.
type plannedEntry struct {
	name  string
	id    [2]uint64 // device and inode, as planned; zero if it could not be read
	grant int       // its grant's index in grants, or -1: none
	sub   bool      // carved itself
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

// isClosed reports whether path lies in a closed directory and in no open
// path.
func (p *planner) isClosed(path string) bool {
	return slices.ContainsFunc(p.closed, func(c string) bool { return within(c, path) }) &&
		!slices.ContainsFunc(p.open, func(o string) bool { return within(o, path) })
}

// holdsHidden reports whether a hidden path or a closed directory lies
// strictly inside dir.
func (p *planner) holdsHidden(dir string) bool {
	for _, list := range [][]string{p.hidden, p.closed} {
		for _, h := range list {
			if h != dir && within(dir, h) {
				return true
			}
		}
	}
	return false
}

// carve grants a on path, or, when a hidden path or a closed directory
// lies inside it, dirAccess on path itself and a on each of its entries,
// recursively. Symlinks are never granted: what a link leads to is judged
// by its own place. A closed directory gets nothing: the open paths in it
// are carved on their own. It returns the device and inode of path, if it
// could read them.
func (p *planner) carve(path string, a, dirAccess Access) [2]uint64 {
	if p.isHidden(path) || p.isClosed(path) {
		return [2]uint64{}
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return [2]uint64{}
	}
	id := fileID(fi)
	if fi.Mode()&os.ModeSymlink != 0 {
		return id
	}
	if !fi.IsDir() {
		p.emit(path, a, false)
		return id
	}
	if !p.holdsHidden(path) {
		p.emit(path, a, true)
		return id
	}
	p.emit(path, dirAccess, true)
	p.watch = appendNew(p.watch, path)
	entries, err := os.ReadDir(path)
	if err != nil {
		return id
	}
	var planned []plannedEntry
	for _, e := range entries {
		child := filepath.Join(path, e.Name())
		n := len(p.grants)
		pe := plannedEntry{name: e.Name(), id: p.carve(child, a, dirAccess), grant: -1}
		switch {
		case p.entries != nil && p.entries[child] != nil:
			pe.sub = true
		case len(p.grants) == n+1:
			pe.grant = n
		}
		planned = append(planned, pe)
	}
	if p.entries != nil {
		if planned == nil {
			planned = []plannedEntry{} // carved, and empty
		}
		p.entries[path] = planned
	}
	return id
}

// within reports whether p is dir or lies beneath it (both clean and
// absolute).
func within(dir, p string) bool {
	if dir == "/" {
		return true
	}
	// Without building dir+"/": a cached plan's check calls this some
	// ten thousand times.
	return strings.HasPrefix(p, dir) && (len(p) == len(dir) || p[len(dir)] == '/')
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
		// One lstat first: most paths of a list (the readable set's
		// toolchains) do not exist here, and resolving walks every
		// component.
		if _, err := os.Lstat(abs); err != nil {
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
