//go:build linux

package main

// The confined floor's run cgroups: made as exec/sandbox's NewCgroup
// makes them here (cgroup v2 where this process's cgroup can have
// children, with pids.max where v2 has the pids controller; else, or also,
// the v1 pids hierarchy), entered as sluice enters them (v2: the child
// starts in it, CLONE_INTO_CGROUP; v1: the starting thread writes "0" to
// its tasks file and back), and reused once empty, as its Cgroups pool
// reuses them. The exported sandbox.Cgroup has no way to join a thread the
// floor confines itself, so this is the floor's own.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// maxProcs is pids.max of each run's cgroup: sluice's default.
const maxProcs = 1024

type cgroup struct {
	v2   string // the run's v2 directory, or ""
	v2fd int    // its descriptor for CLONE_INTO_CGROUP, or -1
	v1   string // the run's v1 pids directory, or ""
}

type cgroups struct {
	v2, v1 string // this process's own cgroup in each hierarchy, or ""
	mu     sync.Mutex
	free   []*cgroup
	all    map[*cgroup]bool
	seq    int
}

// newCgroups finds this process's cgroups in the mounted hierarchies.
func newCgroups() (*cgroups, error) {
	p := &cgroups{all: map[*cgroup]bool{}}
	var v2mnt, v1mnt string
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent maj:min root mountpoint opts [optional...] - fstype source superopts
		before, after, ok := strings.Cut(sc.Text(), " - ")
		fb, fa := strings.Fields(before), strings.Fields(after)
		if !ok || len(fb) < 5 || len(fa) < 3 {
			continue
		}
		switch {
		case fa[0] == "cgroup2" && v2mnt == "":
			v2mnt = fb[4]
		case fa[0] == "cgroup" && v1mnt == "" && hasWord(fa[2], "pids"):
			v1mnt = fb[4]
		}
	}
	f.Close()
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "" && v2mnt != "":
			p.v2 = filepath.Join(v2mnt, parts[2])
		case v1mnt != "" && hasWord(parts[1], "pids"):
			p.v1 = filepath.Join(v1mnt, parts[2])
		}
	}
	g, err := p.make()
	if err != nil {
		return nil, err
	}
	p.free = append(p.free, g)
	return p, nil
}

func hasWord(list, w string) bool {
	for f := range strings.SplitSeq(list, ",") {
		if f == w {
			return true
		}
	}
	return false
}

// describe says which hierarchies a run's cgroup is in.
func (p *cgroups) describe() string {
	g := p.free[0]
	var s []string
	if g.v2 != "" {
		s = append(s, "v2 (CLONE_INTO_CGROUP)")
	}
	if g.v1 != "" {
		s = append(s, "v1 pids (the thread joins)")
	}
	return strings.Join(s, " + ")
}

func (p *cgroups) make() (*cgroup, error) {
	p.mu.Lock()
	p.seq++
	leaf := fmt.Sprintf("floor-%d-%d", os.Getpid(), p.seq)
	p.mu.Unlock()
	g := &cgroup{v2fd: -1}
	limited := false
	if p.v2 != "" {
		dir := filepath.Join(p.v2, leaf)
		if os.Mkdir(dir, 0o755) == nil {
			if fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
				g.v2, g.v2fd = dir, fd
				limited = os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(maxProcs)), 0) == nil
			} else {
				os.Remove(dir)
			}
		}
	}
	if !limited && p.v1 != "" {
		dir := filepath.Join(p.v1, leaf)
		if os.Mkdir(dir, 0o755) == nil {
			g.v1 = dir
			_ = os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(maxProcs)), 0)
		}
	}
	if g.v2 == "" && g.v1 == "" {
		return nil, errors.New("no cgroup can be made here")
	}
	p.mu.Lock()
	p.all[g] = true
	p.mu.Unlock()
	return g, nil
}

// get returns an empty cgroup for a run.
func (p *cgroups) get() (*cgroup, error) {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		g := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return g, nil
	}
	p.mu.Unlock()
	return p.make()
}

// put takes g back after its run: kept when nothing is left in it, else
// what is left is killed and the cgroup removed.
func (p *cgroups) put(g *cgroup) {
	if g.empty() {
		p.mu.Lock()
		p.free = append(p.free, g)
		p.mu.Unlock()
		return
	}
	go p.remove(g)
}

// empty reports whether the cgroup holds no task: one read per
// hierarchy.
func (g *cgroup) empty() bool {
	if g.v1 != "" {
		if data, err := os.ReadFile(filepath.Join(g.v1, "pids.current")); err != nil || string(bytes.TrimSpace(data)) != "0" {
			return false
		}
	}
	if g.v2 != "" {
		if data, err := os.ReadFile(filepath.Join(g.v2, "cgroup.procs")); err != nil || len(bytes.TrimSpace(data)) > 0 {
			return false
		}
	}
	return true
}

// enter moves the calling thread into g's v1 cgroup, and returns what
// moves it back (opened now, while the thread may still open it).
func (p *cgroups) enter(g *cgroup) (leave func(), err error) {
	leave = func() {}
	if g.v1 == "" {
		return leave, nil
	}
	if own, err := os.OpenFile(filepath.Join(p.v1, "tasks"), os.O_WRONLY, 0); err == nil {
		leave = func() {
			_, _ = own.WriteString("0")
			own.Close()
		}
	}
	f, err := os.OpenFile(filepath.Join(g.v1, "tasks"), os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString("0")
		f.Close()
	}
	if err != nil {
		leave()
		return func() {}, fmt.Errorf("join cgroup %s: %w", g.v1, err)
	}
	return leave, nil
}

// remove kills what is in g and removes it.
func (p *cgroups) remove(g *cgroup) {
	for _, dir := range []string{g.v1, g.v2} {
		if dir == "" {
			continue
		}
		if data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err == nil {
			for f := range bytes.FieldsSeq(data) {
				if pid, err := strconv.Atoi(string(f)); err == nil && pid > 1 && pid != os.Getpid() {
					_ = unix.Kill(pid, unix.SIGKILL)
				}
			}
		}
	}
	if g.v2fd >= 0 {
		unix.Close(g.v2fd)
	}
	for _, dir := range []string{g.v1, g.v2} {
		for i := 0; dir != "" && i < 100; i++ {
			if err := os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	p.mu.Lock()
	delete(p.all, g)
	p.mu.Unlock()
}

// close removes every cgroup made.
func (p *cgroups) close() {
	p.mu.Lock()
	var all []*cgroup
	for g := range p.all {
		all = append(all, g)
	}
	p.free = nil
	p.mu.Unlock()
	for _, g := range all {
		p.remove(g)
	}
}
