package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"unsafe"

	"golang.org/x/sys/unix"
)

// minABI is the oldest Landlock ABI sluice confines with: 3 adds the
// truncate right, without which a read-only run could still empty any file
// the user may write (truncate(2) is not a Landlock right before ABI 3). Older
// kernels run unconfined (or ask, with sandbox = "require").
const minABI = 3

var abiOnce = sync.OnceValues(func() (int, error) {
	v, err := landlockABI()
	if err != nil {
		if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
			return 0, errors.New("the kernel has no Landlock (or it is not enabled at boot: lsm=landlock)")
		}
		return 0, fmt.Errorf("landlock: %w", err)
	}
	return v, nil
})

// handledFS is every file system right the ABI knows that sluice uses:
// what is handled and not granted is refused.
func handledFS(abi int) uint64 {
	a := uint64(unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM)
	if abi >= 2 {
		a |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		a |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		a |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return a
}

// landlockAccess maps a grant's rights onto Landlock's, within handled.
// Creating device nodes is never granted: a block device made inside the
// project would be the whole disk.
func landlockAccess(a Access, dir bool, handled uint64) uint64 {
	var r uint64
	if a&Read != 0 {
		r |= unix.LANDLOCK_ACCESS_FS_READ_FILE
	}
	if a&ReadDir != 0 && dir {
		r |= unix.LANDLOCK_ACCESS_FS_READ_DIR
	}
	if a&Exec != 0 {
		r |= unix.LANDLOCK_ACCESS_FS_EXECUTE
	}
	if a&Write != 0 {
		r |= unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if a&Create != 0 && dir {
		r |= unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
			unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_SYM | unix.LANDLOCK_ACCESS_FS_REFER
	}
	if a&Ioctl != 0 {
		r |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return r & handled
}

// runHandled are the rights the run layer handles: writes and device
// ioctls. Reads and execution are the base layer's alone.
func runHandled(abi int) uint64 {
	return handledFS(abi) &^ (unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR | unix.LANDLOCK_ACCESS_FS_EXECUTE)
}

// runRuleset builds the run's own layer for spec and returns its
// descriptor. A proxyPort other than 0 is the one TCP port the run may
// connect to (and it binds none).
func runRuleset(spec *Spec, abi, proxyPort int) (int, error) {
	attr := unix.LandlockRulesetAttr{Handled_access_fs: runHandled(abi)}
	if abi >= 4 && (!spec.Profile.Network() || proxyPort != 0) {
		// No rule grants a port: every TCP bind and connect is refused.
		attr.Handled_access_net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	}
	if abi >= 6 {
		// No signals to, and no abstract unix sockets of, processes
		// outside the run: the engine and the agent among them.
		attr.Scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	}
	fd, err := landlockCreate(&attr)
	if err != nil {
		return -1, fmt.Errorf("sandbox: landlock_create_ruleset: %w", err)
	}
	if err := grantPort(fd, proxyPort); err != nil {
		unix.Close(fd)
		return -1, err
	}
	// The base layer refuses the hidden paths whatever this one grants.
	for _, g := range PlanRun(spec) {
		if _, _, err := addGrant(fd, g, attr.Handled_access_fs, nil); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	return fd, nil
}

// base is a built base layer, shared by the runs that use it while the
// directories it read are unchanged.
type base struct {
	fd    int
	watch []stamp
	plan  *basePlan // what refresh needs, when built here; nil: built again on any change
	refs  int       // runs holding fd (under basesMu)
	stale bool      // replaced: close fd when the last run lets go
	idle  int       // counts the times no run held it: the idle timer's generation
}

// stamp is what a watched directory looked like when the base was built.
type stamp struct {
	path  string
	dev   uint64
	ino   uint64
	ctime unix.Timespec // changes with the entries, the mode, the owner
	// carved: a directory the plan lists entry by entry (else the
	// nearest to a hidden or open path, or a hidden path itself).
	carved bool
}

var (
	basesMu sync.Mutex
	bases   = map[string]*base{} // by the hidden paths, joined
)

// acquireBase returns the base layer for bs, built now or reused, and
// holds it until releaseBase.
func acquireBase(bs BaseSpec, abi int, cache string) (*base, error) {
	key := bs.key()
	basesMu.Lock()
	defer basesMu.Unlock()
	if b := bases[key]; b != nil {
		// Changed: brought up to date in place where what changed is
		// only new entries in the directories carved, and entries gone
		// for good; else built again.
		if b.fresh() || b.refresh() {
			b.refs++
			return b, nil
		}
		b.stale = true
		delete(bases, key)
		if b.refs == 0 {
			b.close()
		}
	}
	if len(bases) >= 8 {
		// Many different hidden sets (every sluice sandbox call of a
		// test, say): start over rather than keep them all.
		for k, b := range bases {
			b.stale = true
			if b.refs == 0 {
				b.close()
			}
			delete(bases, k)
		}
	}
	b, err := buildBase(bs, abi, cache)
	if err != nil {
		return nil, err
	}
	b.refs = 1
	bases[key] = b
	return b, nil
}

// baseIdle is how long a base no run holds stays for the next run (an
// agent's commands come seconds apart, often more). Its rules hold every
// inode they grant (Landlock pins them): kept for good, a base would keep
// a large file deleted from a carved directory (a full disk's filler, a
// build's output in /tmp) taking its space. DropIdle lets them go at once.
const baseIdle = time.Minute

// DropIdle closes the bases no run holds now, letting go of the inodes
// their rules pin: what a process waiting for space (a result it cannot
// write on a full disk) calls, so that deleting a file frees it.
func DropIdle() {
	basesMu.Lock()
	defer basesMu.Unlock()
	for k, b := range bases {
		if b.refs == 0 && !b.stale {
			b.stale = true
			delete(bases, k)
			b.close()
		}
	}
}

// releaseBase lets go of b; the last run to let go of it starts its idle
// time, after which it goes unless a run took it again.
func releaseBase(b *base) {
	basesMu.Lock()
	defer basesMu.Unlock()
	b.refs--
	if b.refs > 0 {
		return
	}
	if b.stale {
		b.close()
		return
	}
	b.idle++
	gen := b.idle
	time.AfterFunc(baseIdle, func() {
		basesMu.Lock()
		defer basesMu.Unlock()
		if b.refs > 0 || b.stale || b.idle != gen {
			return
		}
		b.stale = true
		for k, c := range bases {
			if c == b {
				delete(bases, k)
			}
		}
		b.close()
	})
}

// fresh reports whether no watched directory changed since b was built,
// and no event of a carved one waits to be read.
func (b *base) fresh() bool {
	var ev *dirEvents
	if b.plan != nil {
		ev = b.plan.events
	}
	for _, w := range b.watch {
		var st unix.Stat_t
		if unix.Stat(w.path, &st) != nil || st.Dev != w.dev || st.Ino != w.ino || st.Ctim != w.ctime {
			return false
		}
		if w.carved && ev != nil && ev.watched[w.path] && ev.full[w.path] {
			return false
		}
	}
	return ev == nil || (!ev.lost && len(ev.names) == 0 && !ev.queued())
}

// buildBase builds the base layer: every file system right on everything
// but the hidden paths and the closed directories, and on the open paths
// in those. A directory that changed while it was being planned leaves the
// base stale at once, so the next run plans again. With a plan cache
// (cache not ""), a plan kept there by an earlier process is used when it
// checks out (loadBase), and one made here is kept for the next.
func buildBase(bs BaseSpec, abi int, cache string) (*base, error) {
	if cache != "" {
		b, err := loadBase(bs, abi, cache)
		if err == nil {
			return b, nil
		}
	}
	plan := planBaseLayer(bs)
	// Kept for refresh where the base may be kept (not by a process that
	// confines once: holding a descriptor per entry grows its descriptor
	// table, each time a wait for an RCU grace period).
	b, err := applyBase(plan, abi, cache == "")
	if err != nil {
		return nil, err
	}
	if cache != "" {
		saveBase(cache, bs, plan.watch, plan.applied)
	}
	return b, nil
}

// basePlan is a planned base layer: its grants, and what the directories
// it depends on looked like when it was planned.
type basePlan struct {
	grants  []Grant
	watch   []stamp
	hidden  map[[2]uint64]bool // the hidden objects: never granted
	applied []cachedGrant      // the grants applyBase added, with their objects

	// For refresh: the planner (its paths resolved, what it planned for
	// each entry of each carved directory), the paths whose appearance
	// in a watched directory makes the plan stale, the raw hidden and
	// closed paths, a descriptor kept for each grant on an entry of a
	// carved directory (by grant, -1: none), and how many grants are on
	// objects since deleted.
	p       *planner
	pending map[string][]pendingPath
	raw     []string
	fds     []int
	kept    int // the descriptors in fds still open
	dead    int
	events  *dirEvents // the carved directories' watch; nil: list them
}

// pendingPath is a hidden path, or an open one, as it was when planned,
// under the watched directory nearest to it.
type pendingPath struct {
	path   string
	exists bool
	id     [2]uint64
}

// planBaseLayer plans the base layer of bs as buildBase builds it.
func planBaseLayer(bs BaseSpec) *basePlan {
	hidden := bs.Hidden
	var start unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_REALTIME, &start)
	carved := reachable(hidden)
	p := planBase(BaseSpec{Hidden: carved, Closed: bs.Closed, Open: bs.Open})
	watch := p.watch
	plan := &basePlan{grants: p.grants, p: p, pending: map[string][]pendingPath{}}
	// Watched too: where each of the others would appear (a secret path
	// made after the base was built, ~/.aws say, makes it stale), and
	// those out of reach themselves (made readable, they must be carved).
	pend := func(path string) {
		d := nearestDir(path)
		if d == "" {
			return
		}
		watch = appendNew(watch, d)
		pp := pendingPath{path: path}
		if fi, err := os.Lstat(path); err == nil {
			pp.exists, pp.id = true, fileID(fi)
		}
		plan.pending[d] = append(plan.pending[d], pp)
	}
	for _, h := range hidden {
		pend(h)
		// Not those carved around: the audit log, hidden, changes with
		// every line.
		if _, err := os.Lstat(h); err == nil && !slices.Contains(carved, h) {
			watch = appendNew(watch, h)
		}
	}
	for _, o := range closedOnly(bs.Open, bs.Closed, p.closed) {
		if _, err := os.Lstat(o); err != nil {
			pend(o)
		}
	}
	for _, l := range [][]string{hidden, bs.Closed} {
		for _, r := range l {
			if filepath.IsAbs(r) {
				plan.raw = append(plan.raw, filepath.Clean(r))
			}
		}
	}
	plan.watch = stamps(watch, p.entries, start)
	plan.hidden = inodes(resolveAll(carved))
	return plan
}

// stamps stamps the watched paths, as planned from start: one that
// changed since is never fresh. Those in carved are the directories
// carved.
func stamps(watch []string, carved map[string][]plannedEntry, start unix.Timespec) []stamp {
	out := make([]stamp, 0, len(watch))
	for _, w := range watch {
		var st unix.Stat_t
		if unix.Stat(w, &st) != nil {
			continue
		}
		_, c := carved[w]
		s := stamp{path: w, dev: st.Dev, ino: st.Ino, ctime: st.Ctim, carved: c}
		if st.Ctim.Nano() >= start.Nano() {
			s.ctime = unix.Timespec{} // changed while planned: never fresh
		}
		out = append(out, s)
	}
	return out
}

// applyBase builds the ruleset of plan, keeping a descriptor of each
// entry of a carved directory it grants (up to maxKept) for refresh, if
// asked to.
func applyBase(plan *basePlan, abi int, keepFds bool) (*base, error) {
	handled := handledFS(abi)
	fd, err := landlockCreate(&unix.LandlockRulesetAttr{Handled_access_fs: handled})
	if err != nil {
		return nil, fmt.Errorf("sandbox: landlock_create_ruleset: %w", err)
	}
	entry := make([]bool, len(plan.grants))
	kept := 0
	for _, es := range plan.p.entries {
		for _, e := range es {
			if e.grant >= 0 {
				entry[e.grant] = true
				kept++
			}
		}
	}
	keep := keepFds && kept <= maxKept
	if keep {
		plan.fds = make([]int, len(plan.grants))
	}
	b := &base{fd: fd, watch: plan.watch, plan: plan}
	ids := make([][2]uint64, len(plan.grants))
	added := make([]bool, len(plan.grants))
	plan.applied = plan.applied[:0]
	for i, g := range plan.grants {
		var kfd *int
		if keep {
			plan.fds[i] = -1
			if entry[i] {
				kfd = &plan.fds[i]
			}
		}
		id, ok, err := addGrantKeep(fd, g, handled, plan.hidden, kfd)
		if err != nil {
			b.close()
			return nil, err
		}
		if ok {
			plan.applied = append(plan.applied, cachedGrant{Grant: g, dev: id[0], ino: id[1]})
		}
		if entry[i] {
			ids[i], added[i] = id, ok
		}
	}
	// The entries as granted: an entry gone or replaced between plan and
	// grant is what refresh sees next.
	for _, es := range plan.p.entries {
		for k := range es {
			if g := es[k].grant; g >= 0 {
				es[k].id = ids[g]
				if !added[g] {
					es[k].grant = -1
				}
			}
		}
	}
	if !keep {
		b.plan = nil // refresh cannot tell a moved entry from a deleted one
		return b, nil
	}
	for _, kfd := range plan.fds {
		if kfd >= 0 {
			plan.kept++
		}
	}
	plan.events = watchCarved(plan.watch)
	return b, nil
}

// reachable keeps the hidden paths this process's user could read or
// write: the others (root's /etc/shadow, for a user) are out of a run's
// reach already, and carving around them would only cost grants (130 for
// /etc).
func reachable(hidden []string) []string {
	out := make([]string, 0, len(hidden))
	for _, h := range hidden {
		// Most do not exist: one call says so for both.
		err := unix.Access(h, unix.R_OK)
		if err == nil || (!errors.Is(err, unix.ENOENT) && unix.Access(h, unix.W_OK) == nil) {
			out = append(out, h)
		}
	}
	return out
}

// addGrant adds one grant. The path is opened without following a final
// symlink, so an entry swapped for a link after planning grants nothing,
// and an object that is one of the hidden ones is never granted. It
// returns the device and inode of what it granted, and whether it did.
func addGrant(fd int, g Grant, handled uint64, hidden map[[2]uint64]bool) ([2]uint64, bool, error) {
	return addGrantKeep(fd, g, handled, hidden, nil)
}

// addGrantKeep is addGrant, leaving the descriptor the rule was added
// from open in *keep, if keep is not nil and a rule was added.
func addGrantKeep(fd int, g Grant, handled uint64, hidden map[[2]uint64]bool, keep *int) ([2]uint64, bool, error) {
	pfd, err := unix.Open(g.Path, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return [2]uint64{}, false, nil // gone since it was planned: nothing to grant
	}
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		unix.Close(pfd)
		return [2]uint64{}, false, nil
	}
	id := [2]uint64{st.Dev, st.Ino}
	mode := st.Mode & unix.S_IFMT
	access := landlockAccess(g.Access, mode == unix.S_IFDIR, handled)
	if mode == unix.S_IFLNK || hidden[id] || access == 0 {
		unix.Close(pfd)
		return id, false, nil
	}
	attr := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(pfd)}
	if err := landlockAddPath(fd, &attr); err != nil {
		unix.Close(pfd)
		return id, false, fmt.Errorf("sandbox: grant %s: %w", g.Path, err)
	}
	if keep != nil {
		*keep = pfd
	} else {
		unix.Close(pfd)
	}
	return id, true, nil
}

// inodes returns the device and inode numbers of paths.
func inodes(paths []string) map[[2]uint64]bool {
	m := make(map[[2]uint64]bool, len(paths))
	for _, p := range paths {
		var st unix.Stat_t
		if unix.Stat(p, &st) == nil {
			m[[2]uint64{st.Dev, st.Ino}] = true
		}
	}
	return m
}

// The three Landlock system calls, on the calling thread. (go-landlock's
// API confines every thread of the process, the engine included, and its
// syscall package links libcap's psx; x/sys/unix has what is needed.)

func landlockABI() (int, error) {
	r, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

func landlockCreate(attr *unix.LandlockRulesetAttr) (int, error) {
	r, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(attr)), unsafe.Sizeof(*attr), 0)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

func landlockAddPath(fd int, attr *unix.LandlockPathBeneathAttr) error {
	_, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(fd), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(attr)), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// landlockRestrict enforces ruleset fd on the calling thread only.
func landlockRestrict(fd int) error {
	_, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(fd), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
