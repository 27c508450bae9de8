package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Cgroup is the cgroup of one run: its processes, and all they start,
// land there at fork, whatever session or group they move to, so Kill
// reaches every one of them.
type Cgroup struct {
	v2    string // the run's cgroup v2 directory, or ""
	v2fd  int    // its descriptor, for CLONE_INTO_CGROUP; -1 when none
	v1    string // the run's v1 pids cgroup directory, or ""
	tasks string // v1: the tasks file the starting thread joins
	// Limited reports whether pids.max bounds the run's processes.
	Limited bool
	killed  bool // cgroup.kill was written: not to be reused
}

// hierarchy is where this process sits in the mounted cgroup trees.
type hierarchy struct {
	v2 string // this process's cgroup v2 directory, or ""
	v1 string // this process's cgroup in the v1 pids hierarchy, or ""
}

var ownHierarchy = sync.OnceValue(func() hierarchy {
	var h hierarchy
	v2mnt, v1mnt := cgroupMounts()
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return h
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "" && v2mnt != "":
			h.v2 = filepath.Join(v2mnt, parts[2])
		case v1mnt != "" && hasWord(parts[1], "pids"):
			h.v1 = filepath.Join(v1mnt, parts[2])
		}
	}
	return h
})

func hasWord(list, w string) bool {
	for f := range strings.SplitSeq(list, ",") {
		if f == w {
			return true
		}
	}
	return false
}

// cgroupMounts finds the cgroup2 mount and the v1 mount of the pids
// controller in /proc/self/mountinfo. Every sluice process that confines
// reads it once: lines that are no cgroup mount are passed over before
// they are split.
func cgroupMounts() (v2, v1pids string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", ""
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		// id parent maj:min root mountpoint opts [optional...] - fstype source superopts
		_, after, ok := strings.Cut(line, " - cgroup")
		if !ok || after != "" && after[0] != ' ' && after[0] != '2' {
			continue
		}
		fields := strings.Fields(line)
		sep := slices.Index(fields, "-")
		if sep < 5 || sep+2 >= len(fields) {
			continue
		}
		mnt, fstype, super := fields[4], fields[sep+1], ""
		if sep+3 < len(fields) {
			super = fields[sep+3]
		}
		switch {
		case fstype == "cgroup2" && v2 == "":
			v2 = mnt
		case fstype == "cgroup" && hasWord(super, "pids") && v1pids == "":
			v1pids = mnt
		}
	}
	return v2, v1pids
}

// Cgroups hands out run cgroups and takes them back, reusing those left
// empty: making and removing a cgroup costs a few hundred microseconds,
// more than the rest of starting a confined run. Its zero value is ready;
// MaxProcs must be set before the first Get.
type Cgroups struct {
	MaxProcs int // pids.max of each; 0 means no limit

	mu      sync.Mutex
	free    []*Cgroup
	swept   bool
	closed  bool
	closing sync.WaitGroup // cgroups removed once their zombies are gone
}

// cgroupSeq numbers the cgroups this process makes.
var cgroupSeq atomic.Int64

// maxFree bounds the empty cgroups kept for reuse.
const maxFree = 16

// Get returns an empty cgroup for a run, or an error where none can be
// made (the caller then kills by process group and tree).
func (p *Cgroups) Get() (*Cgroup, error) {
	p.mu.Lock()
	if !p.swept {
		p.swept = true
		sweepOnce()
	}
	if n := len(p.free); n > 0 {
		g := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return g, nil
	}
	p.mu.Unlock()
	// Numbered for the whole process: two pools (two runners) must not
	// ask for the same name.
	name := fmt.Sprintf("%d-%d", os.Getpid(), cgroupSeq.Add(1))
	return NewCgroup(name, p.MaxProcs)
}

// Put takes back g once its run ended: what is left in it is killed, and
// an empty g is kept for the next run (or removed, past maxFree).
func (p *Cgroups) Put(g *Cgroup) {
	if g == nil {
		return
	}
	if !g.Kill(time.Second) || g.killed || !g.idle() {
		// Zombies nobody reaped yet (a fork bomb's, waiting for init)
		// still count against pids.max: reusing the cgroup would refuse
		// the next run's fork. It goes once they are gone.
		p.closing.Add(1)
		go func() {
			defer p.closing.Done()
			g.closeWhenIdle()
		}()
		return
	}
	p.mu.Lock()
	if !p.closed && len(p.free) < maxFree {
		p.free = append(p.free, g)
		g = nil
	}
	p.mu.Unlock()
	if g != nil {
		_ = g.Close()
	}
}

// closeWait bounds how long Close waits for cgroups that still hold
// zombies; those left then are removed by a later sluice (removeStale).
const closeWait = 2 * time.Second

// Close removes the cgroups kept for reuse, and waits a little for those
// being removed.
func (p *Cgroups) Close() error {
	done := make(chan struct{})
	go func() {
		p.closing.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(closeWait):
	}
	p.mu.Lock()
	free := p.free
	p.free, p.closed = nil, true
	p.mu.Unlock()
	var errs []error
	for _, g := range free {
		errs = append(errs, g.Close())
	}
	return errors.Join(errs...)
}

var sweepOnce = sync.OnceFunc(removeStale)

// SweepStale kills what still runs in the cgroups of sluice processes
// that are gone (an engine, sluice approve or a wrapper killed with
// SIGKILL mid-run: their runs' processes live on there) and removes those
// cgroups, once per process. An engine calls it as it starts, before it
// answers the claims the dead one left (stopped, when their runs had
// started).
func SweepStale() { sweepOnce() }

// KillOrphans is SweepStale each time it is called: a recovery calls it
// before it answers a claim whose run started "stopped" (queue.Spool's
// StopOrphans), since the actor that died (a sluice approve, a box's
// bridge's child) may have had no successor that started since to sweep
// its runs. It finds only the cgroups below this process's own.
func KillOrphans() { removeStale() }

// removeStale removes the run cgroups of sluice processes that are gone
// (a crash or a SIGKILL leaves them behind): sluice-PID-N where PID is
// not alive. What still runs in one, a process the run started that left
// its session, is killed first: no process of a confined run outlives
// the engine or wrapper that started it past the next start.
func removeStale() {
	h := ownHierarchy()
	for _, parent := range []string{h.v2, h.v1} {
		if parent == "" {
			continue
		}
		entries, err := os.ReadDir(parent)
		if err != nil {
			continue
		}
		for _, e := range entries {
			rest, ok := strings.CutPrefix(e.Name(), "sluice-")
			if !ok || !e.IsDir() {
				continue
			}
			pidText, _, ok := strings.Cut(rest, "-")
			pid, err := strconv.Atoi(pidText)
			if !ok || err != nil || pid <= 0 {
				continue
			}
			// A zombie is gone too: a sluice approve killed with the
			// bridge that ran it waits, unreaped, for whatever adopts it.
			if err := unix.Kill(pid, 0); (err == nil || errors.Is(err, unix.EPERM)) && !zombie(pidText) {
				continue
			}
			dir := filepath.Join(parent, e.Name())
			g := &Cgroup{v2fd: -1}
			if parent == h.v2 {
				g.v2 = dir
			} else {
				g.v1 = dir
			}
			g.Kill(time.Second)
			_ = os.Remove(dir) // fails, harmlessly, if not empty
		}
	}
}

// NewCgroup makes a cgroup named name for one run below this process's
// own, with at most maxProcs processes where a pids controller allows a
// limit (maxProcs <= 0: no limit). It fails when no cgroup can be made
// here (no delegation): the caller then kills by process group and tree.
//
// Named PID-anything (this process's pid first), it is swept, with what
// still runs in it, by the first NewCgroup of a later process under the
// same cgroup once this one is gone (removeStale).
func NewCgroup(name string, maxProcs int) (*Cgroup, error) {
	sweepOnce()
	h := ownHierarchy()
	g := &Cgroup{v2fd: -1}
	leaf := "sluice-" + name
	if h.v2 != "" {
		dir := filepath.Join(h.v2, leaf)
		if err := os.Mkdir(dir, 0o755); err == nil {
			fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err == nil {
				g.v2, g.v2fd = dir, fd
				if maxProcs > 0 && writeFile(filepath.Join(dir, "pids.max"), strconv.Itoa(maxProcs)) == nil {
					g.Limited = true
				}
			} else {
				_ = os.Remove(dir)
			}
		}
	}
	if !g.Limited && h.v1 != "" {
		dir := filepath.Join(h.v1, leaf)
		if err := os.Mkdir(dir, 0o755); err == nil {
			g.v1, g.tasks = dir, filepath.Join(dir, "tasks")
			if maxProcs > 0 && writeFile(filepath.Join(dir, "pids.max"), strconv.Itoa(maxProcs)) == nil {
				g.Limited = true
			}
		}
	}
	if g.v2 == "" && g.v1 == "" {
		return nil, errors.New("sandbox: no cgroup can be made here (no cgroup v2 delegated to this user, no v1 pids hierarchy)")
	}
	return g, nil
}

func writeFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// prepare makes cmd start inside the v2 cgroup (clone3 with
// CLONE_INTO_CGROUP: the child is in it before it runs a single
// instruction).
func (g *Cgroup) prepare(cmd *osexec.Cmd) {
	if g.v2fd < 0 {
		return
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = g.v2fd
}

// enterThread moves the calling thread into the v1 pids cgroup, so the
// child it forks starts there (v1 has no CLONE_INTO_CGROUP). The returned
// func moves it back to this process's own cgroup once the child started,
// so the run's cgroup holds only the run's processes; the file that takes
// it back is opened now, while the thread may still open it (confined, it
// could not).
//
// Both moves write "0", the calling thread, never its id: the kernel
// (cgroup_procs_write_start) takes the global threadgroup lock for any
// other task, and that lock waits for an RCU grace period when no
// migration happened in the last few milliseconds: ~7 ms a move on this
// kind of machine, twice a run, for every command that comes after a
// pause (BENCHMARKS.md, "Third session").
func (g *Cgroup) enterThread() (leave func(), err error) {
	leave = func() {}
	if g.tasks == "" {
		return leave, nil
	}
	if own := ownHierarchy().v1; own != "" {
		if f, err := os.OpenFile(filepath.Join(own, "tasks"), os.O_WRONLY, 0); err == nil {
			leave = func() {
				_, _ = f.WriteString("0")
				_ = f.Close()
			}
		}
	}
	if err := writeFile(g.tasks, "0"); err != nil {
		leave()
		return func() {}, fmt.Errorf("sandbox: join cgroup %s: %w", g.v1, err)
	}
	return leave, nil
}

// Kill sends SIGKILL to every process in the cgroup, and to those they
// fork meanwhile, until none is left or wait has passed. It reports
// whether the cgroup is empty. An empty cgroup is left alone.
func (g *Cgroup) Kill(wait time.Duration) bool {
	if g == nil {
		return true
	}
	if g.Empty() {
		return true
	}
	deadline := time.Now().Add(wait)
	for {
		if g.v2 != "" {
			// Once killed this way, a cgroup cannot take new processes
			// through CLONE_INTO_CGROUP (this kernel kills them as they
			// start), so it is never reused.
			g.killed = true
			if writeFile(filepath.Join(g.v2, "cgroup.kill"), "1") != nil {
				g.signalAll(filepath.Join(g.v2, "cgroup.procs"))
			}
		}
		if g.v1 != "" {
			g.signalAll(filepath.Join(g.v1, "cgroup.procs"))
		}
		if g.Empty() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// signalAll sends SIGKILL to every pid listed in a cgroup.procs file.
func (g *Cgroup) signalAll(procs string) {
	data, err := os.ReadFile(procs)
	if err != nil {
		return
	}
	for f := range bytes.FieldsSeq(data) {
		if pid, err := strconv.Atoi(string(f)); err == nil && pid > 1 && pid != os.Getpid() {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
}

// Empty reports whether no live process is left in the cgroup. Zombies
// waiting for their parent to reap them count as gone.
func (g *Cgroup) Empty() bool {
	if g == nil {
		return true
	}
	for _, dir := range []string{g.v2, g.v1} {
		if dir == "" || vacant(dir) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			continue
		}
		self := strconv.Itoa(os.Getpid())
		for f := range bytes.FieldsSeq(data) {
			if string(f) != self && live(string(f)) {
				return false
			}
		}
	}
	return true
}

// live reports whether /proc/PID is a process that is not a zombie.
func live(pid string) bool {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return false
	}
	s := data[i+2]
	return s != 'Z' && s != 'X'
}

// zombie reports whether /proc/PID says the process is a zombie (dead,
// not yet reaped); false when it cannot be read.
func zombie(pid string) bool {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(data, ')')
	return i >= 0 && i+2 < len(data) && (data[i+2] == 'Z' || data[i+2] == 'X')
}

// vacant reports whether the pids controller of the cgroup at dir
// counts no task at all: a task is counted from its fork until it is
// reaped, so zombies count, and one that a list of cgroup.procs would
// show counts. It is the cheap answer after every run (one small read,
// where listing cgroup.procs makes a v1 hierarchy build, sort and keep
// a list of pids); false when dir has no pids.current or it says more.
func vacant(dir string) bool {
	fd, err := unix.Open(filepath.Join(dir, "pids.current"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	var buf [24]byte
	n, err := unix.Read(fd, buf[:])
	_ = unix.Close(fd)
	return err == nil && n > 0 && string(bytes.TrimSpace(buf[:n])) == "0"
}

// idle reports whether the cgroup holds no task at all, zombies
// included.
func (g *Cgroup) idle() bool {
	for _, dir := range []string{g.v2, g.v1} {
		if dir == "" || vacant(dir) {
			continue
		}
		if data, err := os.ReadFile(filepath.Join(dir, "pids.current")); err == nil && strings.TrimSpace(string(data)) != "0" {
			return false
		}
		if data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err != nil || len(bytes.TrimSpace(data)) > 0 {
			return false
		}
	}
	return true
}

// closeWhenIdle removes the cgroup once its last task is gone (zombies
// are reaped by whoever inherited them, init at worst), giving up after a
// minute: a cgroup left behind then is removed by the next pool of a
// later sluice (removeStale) or never matters.
func (g *Cgroup) closeWhenIdle() {
	g.Kill(time.Second)
	for deadline := time.Now().Add(time.Minute); !g.idle() && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	_ = g.Close()
}

// Close kills what is left and removes the cgroup.
func (g *Cgroup) Close() error {
	if g == nil {
		return nil
	}
	g.Kill(time.Second)
	var errs []error
	if g.v2fd >= 0 {
		_ = unix.Close(g.v2fd)
		g.v2fd = -1
	}
	for _, dir := range []string{g.v2, g.v1} {
		if dir == "" {
			continue
		}
		// rmdir fails while exiting processes are still counted; they go
		// within moments of SIGKILL.
		var err error
		for range 100 {
			if err = os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
				err = nil
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("sandbox: remove cgroup: %w", err))
		}
	}
	return errors.Join(errs...)
}
