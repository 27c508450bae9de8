package exec

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluice-dev/sluice/exec/sandbox"
)

// groupAlive reports whether any live (not zombie) process has process
// group pgid. kill(-pgid, 0) is not enough: it succeeds while zombies of the
// group wait to be reaped, and a container's init may never reap them.
func groupAlive(pgid int) bool {
	d, err := os.Open("/proc")
	if err != nil {
		return killZeroAlive(pgid)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return killZeroAlive(pgid)
	}
	var buf [512]byte
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		if procInGroup("/proc/"+name+"/stat", pgid, buf[:]) {
			return true
		}
	}
	return false
}

// procInGroup reads a /proc/<pid>/stat ("pid (comm) state ppid pgrp ...")
// and reports whether the process is alive and in group pgid.
func procInGroup(path string, pgid int, buf []byte) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	n, _ := f.Read(buf)
	_ = f.Close()
	b := buf[:n]
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return false
	}
	fields := bytes.Fields(b[i+1:])
	if len(fields) < 3 {
		return false
	}
	if s := fields[0]; len(s) == 1 && (s[0] == 'Z' || s[0] == 'X') {
		return false
	}
	g, err := strconv.Atoi(string(fields[2]))
	return err == nil && g == pgid
}

// cgroup returns a cgroup for a run, or nil where none can be made (the
// kill then sweeps the process group and tree). The run gives it back
// with uncgroup.
func (r *Runner) cgroup() *sandbox.Cgroup {
	r.cgroupsOnce.Do(func() { r.cgroups.MaxProcs = maxProcs(r.now().Confine) })
	g, err := r.cgroups.Get()
	if err != nil {
		return nil
	}
	return g
}

// uncgroup takes back a run's cgroup once the run ended.
// uncgroup gives g back to the pool off the run's path: the run killed
// what it left in g before it returned (cg.Kill), and what remains is
// the pool's bookkeeping (three reads of g's files, ~50 us a run).
func (r *Runner) uncgroup(g *sandbox.Cgroup) {
	r.putting.Go(func() { r.cgroups.Put(g) })
}

// Close removes the cgroups the runner keeps for reuse and the runs'
// temporary directories. Call it when no run is left.
func (r *Runner) Close() error {
	r.tmps.close()
	r.putting.Wait()
	return r.cgroups.Close()
}

// limit caps the new child's process count (RLIMIT_NPROC counts every
// process of the user: a fork bomb stops there while the engine, whose own
// limit is untouched, still forks) and turns its core dumps off. It is
// applied right after the child started, so what the child forks before
// that keeps the engine's limits: the run's cgroup (pids.max) is what
// holds a fork bomb for sure, and sluice's engines run with core dumps off
// altogether (cmd/sluice). Root is exempt from RLIMIT_NPROC: pids.max
// alone holds it.
func (r *Runner) limit(pid int, c *Confine) {
	_ = unix.Prlimit(pid, unix.RLIMIT_CORE, &unix.Rlimit{}, nil)
	if os.Geteuid() == 0 {
		return
	}
	n := uint64(maxProcs(c)) + uint64(procCount.get())
	_ = unix.Prlimit(pid, unix.RLIMIT_NPROC, &unix.Rlimit{Cur: n, Max: n}, nil)
}

func maxProcs(c *Confine) int {
	if c != nil && c.MaxProcs > 0 {
		return c.MaxProcs
	}
	return DefaultMaxProcs
}

// procCount is userProcs, counted at most once a second: walking /proc
// costs a few hundred microseconds, too much for every run.
var procCount countCache

type countCache struct {
	mu sync.Mutex
	at time.Time
	n  int
}

func (c *countCache) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := time.Now(); now.Sub(c.at) > time.Second {
		c.n, c.at = userProcs(), now
	}
	return c.n
}

// userProcs counts this user's processes (threads count too, as the
// kernel counts them for RLIMIT_NPROC), from /proc.
func userProcs() int {
	d, err := os.Open("/proc")
	if err != nil {
		return 0
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	uid := os.Getuid()
	n := 0
	var st unix.Stat_t
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		if unix.Stat("/proc/"+name+"/task", &st) == nil && int(st.Uid) == uid {
			n += int(st.Nlink) - 2
		}
	}
	return n
}

// sweep sends SIGKILL to pid's descendants (by parent links in /proc),
// for runs without a cgroup: what left the process group is still
// reached while its parent chain leads back to the run.
func sweep(pid int) {
	d, err := os.Open("/proc")
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	children := map[int][]int{}
	var buf [512]byte
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		child, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		f, err := os.Open("/proc/" + name + "/stat")
		if err != nil {
			continue
		}
		n, _ := f.Read(buf[:])
		f.Close()
		b := buf[:n]
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		fields := bytes.Fields(b[i+1:])
		if len(fields) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(string(fields[1])); err == nil {
			children[ppid] = append(children[ppid], child)
		}
	}
	todo := []int{pid}
	for len(todo) > 0 {
		p := todo[0]
		todo = todo[1:]
		for _, c := range children[p] {
			_ = unix.Kill(c, unix.SIGKILL)
			todo = append(todo, c)
		}
	}
}
