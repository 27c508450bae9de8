package sandbox

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The plan cache keeps a base layer's plan for the next process that
// confines the same way: sluice sandbox is a new process for every command
// an agent runs, and planning (listing and statting every directory on the
// way to a hidden path) is most of its cost.
//
// The agent runs unconfined as the same user: it can write any file the
// cache is kept in. So nothing read from it is trusted. A plan is used only
// if every watched directory is as it was when it was planned (else it is
// stale), and every grant is one the planner would make now: its path is
// absolute, clean and reached without a symlink (openat2 with
// RESOLVE_NO_SYMLINKS, the descriptor the rule is added from), names the
// object (device and inode) it named when planned, is not hidden nor in a
// closed directory, holds no hidden path or closed directory unless it
// grants only the listing, and is not a hidden object under another name.
// Anything else, and the plan is made again from scratch. The file itself
// must be this user's, a regular file, not readable or writable by others,
// in a directory of this user's that others cannot write.

// planVersion names the format of a plan file.
const planVersion = "sluice-plan 1"

// maxPlanFile bounds what is read of a plan file.
const maxPlanFile = 8 << 20

// planFile is where the plan of bs is kept under dir.
func planFile(dir string, bs BaseSpec) (path, sum string) {
	h := sha256.Sum256([]byte(bs.key()))
	sum = hex.EncodeToString(h[:])
	return filepath.Join(dir, sum[:32]+".plan"), sum
}

// errPlanRefused is what a plan that does not check out is refused with.
var errPlanRefused = errors.New("sandbox: cached plan refused")

func refused(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errPlanRefused}, args...)...)
}

// ownDir checks that dir is a directory of this user's that no one else
// may write.
func ownDir(dir string) error {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return err
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return refused("%s is not a directory", dir)
	case int(st.Uid) != os.Geteuid():
		return refused("%s is owned by uid %d", dir, st.Uid)
	case st.Mode&0o022 != 0:
		return refused("%s is writable by others (mode %o)", dir, st.Mode&0o7777)
	}
	return nil
}

// readPlanFile reads the plan file at path, refusing one that is not a
// regular file of this user's, private to it.
func readPlanFile(path string) ([]byte, error) {
	if err := ownDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	// O_NONBLOCK: a FIFO put there opens at once (and is refused below).
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, refused("%s is not a regular file", path)
	case int(st.Uid) != os.Geteuid():
		return nil, refused("%s is owned by uid %d", path, st.Uid)
	case st.Mode&0o077 != 0:
		return nil, refused("%s is open to others (mode %o)", path, st.Mode&0o7777)
	case st.Size > maxPlanFile:
		return nil, refused("%s is too large", path)
	}
	buf := make([]byte, st.Size+1)
	n, err := f.ReadAt(buf, 0)
	if n == len(buf) {
		return nil, refused("%s grew while read", path)
	}
	if n < int(st.Size) {
		return nil, fmt.Errorf("sandbox: read %s: %w", path, err)
	}
	return buf[:n], nil
}

// cachedGrant is a grant as a plan file holds it: with the object it
// named.
type cachedGrant struct {
	Grant
	dev, ino uint64
}

// parsePlan decodes a plan file for the key whose hash is sum.
func parsePlan(data []byte, sum string) (watch []stamp, grants []cachedGrant, err error) {
	head, rest, _ := bytes.Cut(data, []byte{'\n'})
	if string(head) != planVersion+" "+sum {
		return nil, nil, refused("not a plan of this spec")
	}
	for len(rest) > 0 {
		var line []byte
		var ok bool
		line, rest, ok = bytes.Cut(rest, []byte{'\n'})
		if !ok {
			return nil, nil, refused("truncated")
		}
		// The path is the last field, spaces and all.
		fields := 6
		if bytes.HasPrefix(line, []byte("G ")) {
			fields = 5
		}
		f := strings.SplitN(string(line), " ", fields)
		num := func(i int) uint64 {
			if err != nil {
				return 0
			}
			n, e := strconv.ParseUint(f[i], 10, 64)
			if e != nil {
				err = refused("malformed line %q", line)
			}
			return n
		}
		switch {
		case (f[0] == "W" || f[0] == "D") && len(f) == 6:
			s := stamp{path: f[5], dev: num(1), ino: num(2), carved: f[0] == "D"}
			s.ctime = unix.Timespec{Sec: int64(num(3)), Nsec: int64(num(4))}
			watch = append(watch, s)
		case f[0] == "G" && len(f) == 5:
			a := num(1)
			if err == nil && a&^uint64(readAll|writeAll|Ioctl) != 0 {
				err = refused("unknown rights in %q", line)
			}
			grants = append(grants, cachedGrant{Grant: Grant{Path: f[4], Access: Access(a)}, dev: num(2), ino: num(3)})
		default:
			err = refused("malformed line %q", line)
		}
		if err != nil {
			return nil, nil, err
		}
	}
	return watch, grants, nil
}

// loadBase builds the base layer of bs from the plan kept in dir, if
// there is one and it checks out (see above); else it says why not. A
// carved directory that changed since is carved again (and the plan kept
// again): a new entry in /tmp costs a listing of /tmp, not a new plan.
func loadBase(bs BaseSpec, abi int, dir string) (*base, error) {
	path, sum := planFile(dir, bs)
	data, err := readPlanFile(path)
	if err != nil {
		return nil, err
	}
	watch, grants, err := parsePlan(data, sum)
	if err != nil {
		return nil, err
	}
	var stale []string // carved directories to carve again, outermost first
	for _, w := range watch {
		if (&base{watch: []stamp{w}}).fresh() {
			continue
		}
		if !w.carved {
			return nil, errors.New("sandbox: cached plan is stale")
		}
		stale = append(stale, w.path)
	}
	var start unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_REALTIME, &start)
	// What the planner would judge by now.
	carved := reachable(bs.Hidden)
	p := newPlanner(BaseSpec{Hidden: carved, Closed: bs.Closed, Open: bs.Open})
	hidden := inodes(p.hidden)
	if len(stale) > 0 {
		slices.Sort(stale)
		stale = slices.CompactFunc(stale, func(a, b string) bool { return within(a, b) })
		under := func(path string) bool {
			return slices.ContainsFunc(stale, func(s string) bool { return within(s, path) })
		}
		grants = slices.DeleteFunc(grants, func(g cachedGrant) bool { return under(g.Path) })
		watch = slices.DeleteFunc(watch, func(w stamp) bool { return under(w.path) })
		p.entries = map[string][]plannedEntry{}
		for _, s := range stale {
			if filepath.IsAbs(s) && filepath.Clean(s) == s {
				p.carve(s, readAll|writeAll|Ioctl, ReadDir)
			}
		}
		watch = append(watch, stamps(p.watch, p.entries, start)...)
	}
	b := &base{watch: watch}
	handled := handledFS(abi)
	fd, err := landlockCreate(&unix.LandlockRulesetAttr{Handled_access_fs: handled})
	if err != nil {
		return nil, fmt.Errorf("sandbox: landlock_create_ruleset: %w", err)
	}
	if err := addCachedGrants(fd, p, grants, handled, hidden); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if len(stale) > 0 {
		// Those carved now, from the planner: applied as a new plan's.
		for _, g := range p.grants {
			id, ok, err := addGrant(fd, g, handled, hidden)
			if err != nil {
				unix.Close(fd)
				return nil, err
			}
			if ok {
				grants = append(grants, cachedGrant{Grant: g, dev: id[0], ino: id[1]})
			}
		}
		saveBase(dir, bs, watch, grants)
	}
	b.fd = fd
	return b, nil
}

// allows checks that g is a grant the planner could make now: what it
// grants on is no hidden path, lies in no closed directory (but in an open
// path in one), and holds neither unless g grants only the listing.
func (p *planner) allows(g Grant) error {
	path := g.Path
	switch {
	case !filepath.IsAbs(path) || filepath.Clean(path) != path || strings.IndexByte(path, 0) >= 0:
		return refused("%q is not a clean absolute path", path)
	case p.isHidden(path):
		return refused("%s is hidden", path)
	case p.isClosed(path):
		return refused("%s is in a closed directory", path)
	case g.Access&^ReadDir != 0 && p.holdsHidden(path):
		return refused("%s holds a hidden path", path)
	}
	return nil
}

// addCachedGrants checks each of grants with p and adds it to the ruleset
// fd. Each is a few system calls (open, stat, add, close) and a plan holds
// a few hundred: a long one is split in two halves, the second checked and
// added on another goroutine (another CPU, where there is one). Landlock
// takes rules on one ruleset from several threads, in any order.
func addCachedGrants(fd int, p *planner, grants []cachedGrant, handled uint64, hidden map[[2]uint64]bool) error {
	add := func(gs []cachedGrant) error {
		for _, g := range gs {
			if err := p.allows(g.Grant); err != nil {
				return err
			}
			if err := addCachedGrant(fd, g, handled, hidden); err != nil {
				return err
			}
		}
		return nil
	}
	if len(grants) < 64 || runtime.GOMAXPROCS(0) < 2 {
		return add(grants)
	}
	half := len(grants) / 2
	errc := make(chan error, 1)
	go func() { errc <- add(grants[half:]) }()
	err := add(grants[:half])
	if err2 := <-errc; err == nil {
		err = err2
	}
	return err
}

// addCachedGrant adds g from a plan file, refusing it unless its path
// leads through no symlink to the very object it named when planned, and
// that object is not a hidden one.
func addCachedGrant(fd int, g cachedGrant, handled uint64, hidden map[[2]uint64]bool) error {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC | unix.O_NOFOLLOW, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	pfd, err := unix.Openat2(unix.AT_FDCWD, g.Path, &how)
	if err != nil {
		return refused("%s: %v", g.Path, err)
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return refused("%s: %v", g.Path, err)
	}
	switch {
	case st.Dev != g.dev || st.Ino != g.ino:
		return refused("%s is another object than planned", g.Path)
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return refused("%s is a symlink", g.Path)
	case hidden[[2]uint64{st.Dev, st.Ino}]:
		return refused("%s is a hidden object", g.Path)
	}
	access := landlockAccess(g.Access, st.Mode&unix.S_IFMT == unix.S_IFDIR, handled)
	if access == 0 {
		return nil
	}
	attr := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(pfd)}
	if err := landlockAddPath(fd, &attr); err != nil {
		return fmt.Errorf("sandbox: grant %s: %w", g.Path, err)
	}
	return nil
}

// saveBase keeps plan for bs in dir, for the next process; a plan that
// cannot be kept is simply made again next time.
func saveBase(dir string, bs BaseSpec, watch []stamp, grants []cachedGrant) {
	path, sum := planFile(dir, bs)
	var out strings.Builder
	out.WriteString(planVersion + " " + sum + "\n")
	ok := func(p string) bool { return strings.IndexByte(p, '\n') < 0 }
	for _, w := range watch {
		if !ok(w.path) {
			return
		}
		kind := "W"
		if w.carved {
			kind = "D"
		}
		fmt.Fprintf(&out, "%s %d %d %d %d %s\n", kind, w.dev, w.ino, w.ctime.Sec, w.ctime.Nsec, w.path)
	}
	for _, g := range grants {
		if !ok(g.Path) {
			return
		}
		fmt.Fprintf(&out, "G %d %d %d %s\n", g.Access, g.dev, g.ino, g.Path)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil || ownDir(dir) != nil {
		return
	}
	f, err := os.CreateTemp(dir, ".plan-*")
	if err != nil {
		return
	}
	_, err = f.WriteString(out.String())
	if cerr := f.Close(); err != nil || cerr != nil || os.Rename(f.Name(), path) != nil {
		_ = os.Remove(f.Name())
	}
	prunePlans(dir, path, time.Now())
}

// A plan not written for planIdle, or beyond the maxPlans most recently
// written, is removed when another is kept: each project's roots make a
// plan of their own, and projects come and go. A plan still in use is
// only read, not written, so it goes after planIdle too and is made again
// once, by the next command that needs it.
const (
	planIdle = 30 * 24 * time.Hour
	maxPlans = 64
)

// prunePlans removes from dir the plans (and the temporary files of
// writers that died) that are idle or too many, keeping keep.
func prunePlans(dir, keep string, now time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type plan struct {
		path string
		mod  time.Time
	}
	var plans []plan
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(dir, name)
		if !e.Type().IsRegular() || path == keep || !strings.HasSuffix(name, ".plan") && !strings.HasPrefix(name, ".plan-") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		idle := now.Sub(fi.ModTime())
		switch {
		case strings.HasPrefix(name, ".plan-") && idle > time.Hour, idle > planIdle:
			_ = os.Remove(path)
		case strings.HasSuffix(name, ".plan"):
			plans = append(plans, plan{path, fi.ModTime()})
		}
	}
	if len(plans) < maxPlans {
		return
	}
	slices.SortFunc(plans, func(a, b plan) int { return b.mod.Compare(a.mod) })
	for _, p := range plans[maxPlans-1:] {
		_ = os.Remove(p.path)
	}
}
