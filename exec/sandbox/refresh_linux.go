package sandbox

import (
	"encoding/binary"
	"path/filepath"
	"slices"

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
func (b *base) refresh() bool {
	pl := b.plan
	if pl == nil || pl.fds == nil {
		return false
	}
	for i := range b.watch {
		w := &b.watch[i]
		var st unix.Stat_t
		if unix.Stat(w.path, &st) != nil || st.Dev != w.dev || st.Ino != w.ino {
			return false
		}
		if st.Ctim == w.ctime {
			continue
		}
		if !pl.pendingUnchanged(w.path) {
			return false
		}
		if ents, carved := pl.p.entries[w.path]; carved {
			fresh, ok := b.diff(w.path, ents)
			if !ok {
				return false
			}
			pl.p.entries[w.path] = fresh
		} else if _, ok := pl.pending[w.path]; !ok {
			return false // a hidden path out of reach itself: made readable?
		}
		// The stamp as it was before the directory was listed: a change
		// made while it was, is seen next time.
		w.ctime = st.Ctim
	}
	return pl.dead <= maxDead || pl.dead <= len(pl.grants)-pl.dead
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
	pl := b.plan
	p := pl.p
	listed, ok := listDir(dir)
	if !ok {
		return nil, false
	}
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
		id := [2]uint64{st.Dev, st.Ino}
		if known && ents[i].id == id {
			// A mount point: listed with the inode beneath it.
			same[i] = true
			fresh = append(fresh, ents[i])
			continue
		}
		e := plannedEntry{name: d.name, id: id, grant: -1}
		switch {
		case p.isHidden(child) || p.isClosed(child) || slices.ContainsFunc(pl.raw, func(r string) bool { return within(r, child) }):
			// Nothing, as planned; a hidden path that appeared is
			// pending, seen above (or, made since, next time): by its
			// name as given, never granted meanwhile.
		case p.holdsHidden(child) || slices.ContainsFunc(pl.raw, func(r string) bool { return r != child && within(child, r) }):
			return nil, false // to be carved
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
				return nil, false
			}
			if granted {
				e.id = gid
				e.grant = len(pl.grants)
				pl.grants = append(pl.grants, g)
				pl.fds = append(pl.fds, kfd)
			}
		}
		fresh = append(fresh, e)
	}
	// Renamed within dir: the objects now granted under a new name.
	renamed := map[[2]uint64]bool{}
	for _, e := range fresh {
		if e.grant >= 0 {
			renamed[e.id] = true
		}
	}
	for i, e := range ents {
		if same[i] {
			continue
		}
		// Gone or replaced: fine only if its object is gone for good, or
		// granted here under its new name.
		if e.sub {
			return nil, false
		}
		if e.grant < 0 {
			continue
		}
		fd := pl.fds[e.grant]
		var st unix.Stat_t
		if fd < 0 || unix.Fstat(fd, &st) != nil {
			return nil, false
		}
		if st.Nlink != 0 && (st.Nlink != 1 || !renamed[[2]uint64{st.Dev, st.Ino}]) {
			return nil, false
		}
		unix.Close(fd)
		pl.fds[e.grant] = -1
		if st.Nlink == 0 {
			pl.dead++
		}
	}
	return fresh, true
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
