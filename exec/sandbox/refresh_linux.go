package sandbox

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"slices"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A base layer is kept for the runs that follow while the directories it
// depends on are unchanged. Those directories change all day for reasons
// of their own: a new socket in /run/user/UID, a file made in /dev/shm or
// /tmp, a shell rewriting its history in the home directory. refresh
// brings a base up to date in place where it can, so that a new entry in
// a carved directory costs one rule, not a new plan:
//
//   - A new entry is judged as the planner would judge it now and, when
//     granted, gets its rule added to the ruleset (a ruleset takes rules
//     after it was enforced; runs enforce it as it is when they start).
//     One that is or holds a hidden path or a closed directory, or one
//     for a hidden path or an open path that appeared, is a new plan.
//   - Rules cannot be taken out of a ruleset, and each holds its object
//     wherever it is moved. So an entry gone from a carved directory is
//     fine only if its object is gone for good (the descriptor kept for
//     it says it has no link left), or was renamed within the directory to
//     a name granted as a new entry (its one link). Moved or linked
//     elsewhere, or renamed to a hidden name (a lock file renamed over a
//     secret path, say), it is a new plan.
//   - Any other change (a watched directory replaced, a hidden path out of
//     reach changed) is a new plan, as before.
//
// Rules on objects since deleted still pin them (their space on a full
// disk): past maxDead of them, and past as many as are live, the base is
// planned again.
//
// Which entries changed, a base kept by a long-lived process (the engine)
// learns from inotify, watching each carved directory: a /tmp of a
// thousand entries, or a home directory, is not listed again for every
// file a program makes there (patch). A directory is listed whole (diff)
// when it may have changed before its watch was in place, when events
// were lost (the queue overflowed) or when the directory itself changed
// (its mode, say). A watch that goes away (the directory deleted, moved
// or unmounted) is a new plan. inotify queues an event before the call
// that made the change returns, so a run that starts after the change
// finds it queued; one started meanwhile ran before the change, as far
// as anyone can tell.

// maxKept bounds the descriptors a base keeps for its entries; a base
// that would need more is planned again on any change, as before.
const maxKept = 4096

// maxDead is how many rules on deleted objects a base carries before it is
// planned again (if they also outnumber the live ones).
const maxDead = 256

// close closes b's ruleset and the descriptors it kept.
func (b *base) close() {
	unix.Close(b.fd)
	if b.plan == nil {
		return
	}
	if b.plan.events != nil {
		b.plan.events.close()
		b.plan.events = nil
	}
	for i, fd := range b.plan.fds {
		if fd >= 0 {
			unix.Close(fd)
			b.plan.fds[i] = -1
		}
	}
}

// refresh brings b up to date with the directories it watches, in place,
// and reports whether it could (else b must be planned again). Called
// under basesMu.
//
// A carved directory's events say which of its entries changed (patch);
// one that changed (its ctime) with no event for it, as on a network
// file system whose other clients inotify does not see, or whose events
// were lost, is listed whole (diff). The directories are stamped before
// the events are read: a change made in between is in both, and the
// worst it costs is a listing next time.
func (b *base) refresh() bool {
	pl := b.plan
	if pl == nil || pl.fds == nil {
		return false
	}
	sts := make([]unix.Stat_t, len(b.watch))
	for i, w := range b.watch {
		st := &sts[i]
		if unix.Stat(w.path, st) != nil || st.Dev != w.dev || st.Ino != w.ino {
			return false
		}
	}
	ev := pl.events
	if ev != nil && !ev.drain() {
		return false
	}
	for i := range b.watch {
		w, st := &b.watch[i], &sts[i]
		ents, carved := pl.p.entries[w.path]
		changed := st.Ctim != w.ctime
		if carved && ev.tells(w.path) {
			names := ev.names[w.path]
			if len(names) == 0 && !changed {
				continue
			}
			if len(names) > 0 {
				if !pl.pendingUnchanged(w.path) {
					return false
				}
				fresh, ok := b.patch(w.path, ents, names)
				if !ok {
					return false
				}
				pl.p.entries[w.path] = fresh
				delete(ev.names, w.path)
				w.ctime = st.Ctim
				continue
			}
			// Changed, and no event says how: listed whole below.
		} else if !changed && (!carved || ev == nil || !ev.full[w.path]) {
			continue
		}
		if !pl.pendingUnchanged(w.path) {
			return false
		}
		if carved {
			fresh, ok := b.diff(w.path, ents)
			if !ok {
				return false
			}
			pl.p.entries[w.path] = fresh
			if ev != nil {
				// Listed whole after its watch was in place: what changes
				// from now on is in its events (those already read are
				// in the listing; those queued since are seen again,
				// harmlessly).
				delete(ev.full, w.path)
				delete(ev.names, w.path)
			}
		} else if _, ok := pl.pending[w.path]; !ok {
			return false // a hidden path out of reach itself: made readable?
		}
		// The stamp as it was before the directory was listed: a change
		// made while it was, is seen next time.
		w.ctime = st.Ctim
	}
	// Past maxKept descriptors (a build filling /tmp), planned again: a
	// base that large lists its directories instead (applyBase).
	return pl.kept <= maxKept && (pl.dead <= maxDead || pl.dead <= len(pl.grants)-pl.dead)
}

// pendingUnchanged reports whether the hidden and open paths whose
// nearest watched directory is dir are as they were when planned.
func (pl *basePlan) pendingUnchanged(dir string) bool {
	for _, pp := range pl.pending[dir] {
		var st unix.Stat_t
		err := unix.Lstat(pp.path, &st)
		switch {
		case (err == nil) != pp.exists:
			return false
		case err == nil && (st.Dev != pp.id[0] || st.Ino != pp.id[1]):
			return false
		case err != nil && nearestDir(pp.path) != dir:
			return false // a directory on the way to it was made
		}
	}
	return true
}

// diff lists the carved directory dir again against what was planned for
// its entries (ents), adds a rule for each new entry the planner would
// grant, lets go of the entries deleted, and returns the entries as they
// are now; false if the change needs a new plan.
func (b *base) diff(dir string, ents []plannedEntry) ([]plannedEntry, bool) {
	listed, ok := listDir(dir)
	if !ok {
		return nil, false
	}
	listings.Add(1)
	old := make(map[string]int, len(ents))
	for i, e := range ents {
		old[e.name] = i
	}
	same := make([]bool, len(ents))
	fresh := make([]plannedEntry, 0, len(listed))
	handled := handledFS(mustABI())
	for _, d := range listed {
		child := filepath.Join(dir, d.name)
		i, known := old[d.name]
		if known && ents[i].id[1] == d.ino {
			same[i] = true
			fresh = append(fresh, ents[i])
			continue
		}
		var st unix.Stat_t
		if unix.Lstat(child, &st) != nil {
			continue // gone already
		}
		if known && ents[i].id == [2]uint64{st.Dev, st.Ino} {
			// A mount point: listed with the inode beneath it.
			same[i] = true
			fresh = append(fresh, ents[i])
			continue
		}
		e, ok := b.judge(d.name, child, &st, handled)
		if !ok {
			return nil, false
		}
		fresh = append(fresh, e)
	}
	var gone []plannedEntry
	for i, e := range ents {
		if !same[i] {
			gone = append(gone, e)
		}
	}
	return fresh, b.letGo(gone, fresh)
}

// patch brings the entries planned for the carved directory dir (ents) up
// to date for the entries names, which its events say changed, as diff
// does for all of them: the others are as they were.
func (b *base) patch(dir string, ents []plannedEntry, names map[string]bool) ([]plannedEntry, bool) {
	fresh := make([]plannedEntry, 0, len(ents)+len(names))
	known := make(map[string]plannedEntry, len(names))
	for _, e := range ents {
		if names[e.name] {
			known[e.name] = e
		} else {
			fresh = append(fresh, e)
		}
	}
	handled := handledFS(mustABI())
	// Only an entry examined here vouches for an object renamed within
	// the directory: a rename's two names are in the same events.
	var gone, seen []plannedEntry
	for name := range names {
		old, wasThere := known[name]
		child := filepath.Join(dir, name)
		var st unix.Stat_t
		if unix.Lstat(child, &st) != nil {
			if wasThere {
				gone = append(gone, old)
			}
			continue
		}
		if wasThere && old.id == [2]uint64{st.Dev, st.Ino} {
			fresh, seen = append(fresh, old), append(seen, old)
			continue
		}
		if wasThere {
			gone = append(gone, old)
		}
		e, ok := b.judge(name, child, &st, handled)
		if !ok {
			return nil, false
		}
		fresh, seen = append(fresh, e), append(seen, e)
	}
	return fresh, b.letGo(gone, seen)
}

// judge plans a new entry name of a carved directory (child, as lstat
// found it: st) as the planner would plan it now, adding its rule to the
// ruleset when it is granted; false if it needs a new plan.
func (b *base) judge(name, child string, st *unix.Stat_t, handled uint64) (plannedEntry, bool) {
	pl := b.plan
	p := pl.p
	e := plannedEntry{name: name, id: [2]uint64{st.Dev, st.Ino}, grant: -1}
	switch {
	case p.isHidden(child) || p.isClosed(child) || slices.ContainsFunc(pl.raw, func(r string) bool { return within(r, child) }):
		// Nothing, as planned; a hidden path that appeared is
		// pending, seen above (or, made since, next time): by its
		// name as given, never granted meanwhile.
	case p.holdsHidden(child) || slices.ContainsFunc(pl.raw, func(r string) bool { return r != child && within(child, r) }):
		return e, false // to be carved
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		// Never granted.
	default:
		dirEntry := st.Mode&unix.S_IFMT == unix.S_IFDIR
		a := readAll | writeAll | Ioctl
		if !dirEntry {
			a &= fileAccess
		}
		g := Grant{Path: child, Access: a, Dir: dirEntry}
		kfd := -1
		gid, granted, err := addGrantKeep(b.fd, g, handled, pl.hidden, &kfd)
		if err != nil {
			return e, false
		}
		if granted {
			e.id = gid
			e.grant = len(pl.grants)
			pl.grants = append(pl.grants, g)
			pl.fds = append(pl.fds, kfd)
			if kfd >= 0 {
				pl.kept++
			}
		}
	}
	return e, true
}

// letGo lets go of the entries gone from a carved directory (or replaced
// there): fine only for an object gone for good, or granted under a new
// name in the directory (one of fresh, entries found there now); false if
// the base must be planned again.
func (b *base) letGo(gone, fresh []plannedEntry) bool {
	pl := b.plan
	var renamed map[[2]uint64]bool
	for _, e := range gone {
		if e.sub {
			return false
		}
		if e.grant < 0 {
			continue
		}
		fd := pl.fds[e.grant]
		var st unix.Stat_t
		if fd < 0 || unix.Fstat(fd, &st) != nil {
			return false
		}
		if st.Nlink != 0 {
			if st.Nlink != 1 {
				return false
			}
			if renamed == nil {
				// Renamed within the directory: the objects now granted
				// under a new name.
				renamed = map[[2]uint64]bool{}
				for _, f := range fresh {
					if f.grant >= 0 {
						renamed[f.id] = true
					}
				}
			}
			if !renamed[[2]uint64{st.Dev, st.Ino}] {
				return false
			}
		}
		unix.Close(fd)
		pl.fds[e.grant] = -1
		pl.kept--
		if st.Nlink == 0 {
			pl.dead++
		}
	}
	return true
}

// mustABI is the Landlock ABI, known once a base was built.
func mustABI() int {
	abi, _ := abiOnce()
	return abi
}

// dirent is one entry of a directory: its name and the inode the
// directory lists for it.
type dirent struct {
	name string
	ino  uint64
}

// listDir lists dir with getdents64, for the inode numbers os.ReadDir
// does not give.
func listDir(dir string) ([]dirent, bool) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, false
	}
	defer unix.Close(fd)
	var out []dirent
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return nil, false
		}
		if n <= 0 {
			return out, true
		}
		for off := 0; off+19 <= n; {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
			if reclen < 19 || off+reclen > n {
				return nil, false
			}
			ino := binary.NativeEndian.Uint64(buf[off:])
			name := buf[off+19 : off+reclen]
			if i := slices.Index(name, 0); i >= 0 {
				name = name[:i]
			}
			if s := string(name); s != "." && s != ".." {
				out = append(out, dirent{name: s, ino: ino})
			}
			off += reclen
		}
	}
}

// listings counts the carved directories diff listed whole (tests).
var listings atomic.Int64

// watchMask is what a carved directory's watch reports: an entry made,
// deleted or moved in or out (by name), the directory itself changed,
// deleted or moved.
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW

// dirEvents are the inotify events of a base's carved directories.
type dirEvents struct {
	fd      int
	dirs    map[int32]string           // by watch descriptor
	watched map[string]bool            // the directories watched
	full    map[string]bool            // to be listed whole
	names   map[string]map[string]bool // the entries changed, by directory, not yet patched
	lost    bool                       // a watch went away: plan again
	buf     []byte
}

// tells reports whether dir's events say which of its entries changed:
// it is watched, and nothing since it was last listed was missed.
func (ev *dirEvents) tells(dir string) bool {
	return ev != nil && ev.watched[dir] && !ev.full[dir]
}

// watchable reports whether dir's events name its entries as they are on
// disk, always: it is on a local file system (on NFS, SMB or a FUSE
// mount, another machine's changes make no event; overlayfs and ZFS can
// change a directory underneath, a layer edited or a dataset rolled back,
// without one), and its names are compared byte for byte (a
// case-insensitive directory finds "Notes" when the entry is "notes", and
// an encrypted one changes its names when it is unlocked). Such a
// directory is listed whole whenever it changed.
func watchable(dir string) bool {
	var fs unix.Statfs_t
	if unix.Statfs(dir, &fs) != nil {
		return false
	}
	switch uint32(fs.Type) {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.TMPFS_MAGIC,
		unix.F2FS_SUPER_MAGIC, unix.RAMFS_MAGIC:
	default:
		return false
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		// No flags to read (tmpfs before Linux 6.0, ramfs): nor case
		// folding, nor encryption, then, but for tmpfs since 6.13,
		// which has the flags.
		return errors.Is(err, unix.ENOTTY) || errors.Is(err, unix.EOPNOTSUPP)
	}
	return flags&(fsCasefoldFL|fsEncryptFL) == 0
}

// The inode flags of linux/fs.h that golang.org/x/sys/unix does not name.
const (
	fsEncryptFL  = 0x00000800 // FS_ENCRYPT_FL
	fsCasefoldFL = 0x40000000 // FS_CASEFOLD_FL
)

// watchCarved watches the carved directories of watch, once the base was
// planned from them; nil when inotify cannot (too many watches or
// instances: the base lists them, as before). Each watched directory is
// listed whole once, at the next refresh, after its watch is in place:
// it may have changed before, and in the same tick of a coarse clock as
// its stamp (its ctime would not tell).
func watchCarved(watch []stamp) *dirEvents {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	ev := &dirEvents{fd: fd, dirs: map[int32]string{}, watched: map[string]bool{}, full: map[string]bool{}, names: map[string]map[string]bool{}}
	for _, w := range watch {
		if !w.carved || !watchable(w.path) {
			continue // listed whole when its ctime changes, as before
		}
		wd, err := unix.InotifyAddWatch(fd, w.path, watchMask)
		if err != nil {
			ev.close()
			return nil
		}
		if _, twice := ev.dirs[int32(wd)]; twice {
			// The same directory by another path (a bind mount): its
			// events are the other's; this one goes by its ctime.
			continue
		}
		ev.dirs[int32(wd)] = w.path
		ev.watched[w.path] = true
		ev.full[w.path] = true
	}
	return ev
}

// close closes the watch on another goroutine: closing an inotify
// instance that holds watches waits for the kernel's grace period (0.2
// to 20 ms here), which no run waiting for its base should.
func (ev *dirEvents) close() { go unix.Close(ev.fd) }

// queued reports whether events wait to be read.
func (ev *dirEvents) queued() bool {
	fds := []unix.PollFd{{Fd: int32(ev.fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err != nil || n > 0
}

// drain reads the events queued, noting the entries changed by directory;
// false when a watch went away (the base must be planned again).
func (ev *dirEvents) drain() bool {
	if ev.buf == nil {
		ev.buf = make([]byte, 16<<10)
	}
	for {
		n, err := unix.Read(ev.fd, ev.buf)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			return !ev.lost // read them all
		}
		if n <= 0 || err != nil {
			// Events that could not be read are events lost.
			ev.overflow()
			return !ev.lost
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			wd := int32(binary.NativeEndian.Uint32(ev.buf[off:]))
			mask := binary.NativeEndian.Uint32(ev.buf[off+4:])
			l := int(binary.NativeEndian.Uint32(ev.buf[off+12:]))
			start := off + unix.SizeofInotifyEvent
			off = start + l
			if off > n {
				// Never split by the kernel; a queue read wrong is
				// listed whole.
				ev.overflow()
				break
			}
			if mask&unix.IN_Q_OVERFLOW != 0 {
				ev.overflow()
				continue
			}
			dir, ok := ev.dirs[wd]
			if !ok {
				continue
			}
			if mask&(unix.IN_IGNORED|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_UNMOUNT) != 0 {
				ev.lost = true
				continue
			}
			name := ev.buf[start:off]
			if i := slices.Index(name, 0); i >= 0 {
				name = name[:i]
			}
			if len(name) == 0 {
				ev.full[dir] = true // the directory itself changed
				continue
			}
			set := ev.names[dir]
			if set == nil {
				set = map[string]bool{}
				ev.names[dir] = set
			}
			set[string(name)] = true
		}
	}
}

// overflow marks every directory to be listed whole: events were lost.
func (ev *dirEvents) overflow() {
	for _, d := range ev.dirs {
		ev.full[d] = true
	}
}
