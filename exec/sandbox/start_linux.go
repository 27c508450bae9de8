package sandbox

import (
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Available reports whether this machine can confine runs, and how, or why
// not.
func Available() (string, error) {
	abi, err := abiOnce()
	if err != nil {
		return "", err
	}
	if abi < minABI {
		return "", fmt.Errorf("the kernel's Landlock ABI is %d; sluice needs %d (Linux 6.2 or later)", abi, minABI)
	}
	if _, err := filters(); err != nil {
		return "", err
	}
	return fmt.Sprintf("Landlock ABI %d and seccomp", abi), nil
}

// Confinement is a prepared Spec: a Landlock ruleset and a seccomp
// filter, ready to be applied to the thread that starts one child.
type Confinement struct {
	spec        Spec
	base        *base // shared; released by Close
	ruleset     int   // the run's own layer
	filter      *unix.SockFprog
	filterIndex int
	box         *boxPlan // nil: not boxed
	net         *netConf // nil: no proxy
}

// Boxed reports whether a run started with c gets namespaces of its own
// (a read-only view of everything it may not write), or says why not
// when its profile writes.
func (c *Confinement) Boxed() (bool, string) {
	if c == nil || !c.spec.Profile.Writes() {
		return false, ""
	}
	if c.box != nil {
		return true, ""
	}
	return false, boxWhy(&c.spec)
}

// Prepare builds the confinement for spec. It fails if the kernel cannot
// enforce it. Close releases it.
func Prepare(spec Spec) (*Confinement, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if _, err := Available(); err != nil {
		return nil, err
	}
	abi, _ := abiOnce()
	f, err := filters()
	if err != nil {
		return nil, err
	}
	b, err := acquireBase(spec.Base(), abi, spec.PlanCache)
	if err != nil {
		return nil, err
	}
	nc, err := prepareNet(&spec, abi)
	if err != nil {
		releaseBase(b)
		return nil, err
	}
	fd, err := runRuleset(&spec, abi, nc.connectPort())
	if err != nil {
		nc.close()
		releaseBase(b)
		return nil, err
	}
	idx := 0
	switch {
	case nc.connectPort() != 0:
		idx = 3
	case spec.Profile.Network():
		idx = 1
	case !spec.Profile.Writes():
		idx = 2
	}
	c := &Confinement{spec: spec, base: b, ruleset: fd, filter: f[idx], filterIndex: idx, net: nc}
	if boxWhy(&spec) == "" {
		c.box = planBox(&spec)
		if nc != nil && nc.ownNS {
			c.box.netPort = nc.port
		}
	}
	return c, nil
}

// Spec is what c confines to.
func (c *Confinement) Spec() Spec { return c.spec }

// Close releases the ruleset and closes the proxy's listener. A child
// started already stays confined.
func (c *Confinement) Close() error {
	if c == nil || c.ruleset < 0 {
		return nil
	}
	c.net.close()
	err := unix.Close(c.ruleset)
	c.ruleset = -1
	releaseBase(c.base)
	return err
}

// Start starts cmd, confined by c when c is not nil, in cgroup g when g is
// not nil. The confinement is applied to a new OS thread that starts cmd
// and is then discarded: the caller's threads are never confined.
//
// Descriptors this process inherited (above 2) never reach a confined
// child: the first confined Start marks them close-on-exec.
func Start(cmd *osexec.Cmd, c *Confinement, g *Cgroup) error {
	if c != nil {
		closeInherited()
	}
	if g != nil {
		g.prepare(cmd)
	}
	if c == nil && (g == nil || g.tasks == "") {
		return cmd.Start()
	}
	if c != nil && c.box != nil {
		err := startBox(cmd, c, g)
		if err == nil || !boxRefused(err) {
			return err
		}
		// The kernel refused the namespaces (a container's seccomp, an
		// LSM): confined as without the helper, and said so from now on.
		c.box = nil
		boxRefusedWhy.Store("the kernel refused the namespaces: " + err.Error())
	}
	if c != nil && c.net != nil && c.net.ownNS && c.box == nil {
		return errNoNamespace
	}
	errc := make(chan error, 1)
	if ch := takeWarm(c); ch != nil {
		ch <- warmJob{cmd: cmd, c: c, g: g, errc: errc}
	} else {
		go startLocked(cmd, c, g, errc)
	}
	return <-errc
}

// Prewarm readies a thread for the next run of profile p while the caller
// does other work: sluice sandbox calls it as soon as it knows the
// profile, and its one run then starts on that thread. Only a read_only
// run gets one.
// (The engine does not: readied after each start, the thread competed
// with the run it followed and saved nothing measurable.)
func Prewarm(p Profile) {
	f, err := filters()
	if err != nil {
		return
	}
	// A run that writes goes through the box helper where there is one,
	// and a networked one may need the proxy's own program: only a
	// read_only run is sure to start from here.
	if p == ReadOnly {
		prewarm(f[2])
	}
}

// A warm thread is a locked OS thread made ready ahead of time for a
// confined run that uses one seccomp program: capabilities dropped,
// no_new_privs set, the filter loaded (the kernel compiles it then, about
// 0.15 ms of a run's start here). What belongs to the run (its cgroup, its
// two Landlock layers) is applied when the run comes, and the thread ends
// with it, as a cold one does: confineThread's same steps, split.
type warmJob struct {
	cmd   *osexec.Cmd
	c     *Confinement
	g     *Cgroup
	errc  chan<- error
	leave func() // the thread leaves the run's cgroup (nil: it did not join one)
}

// warmSlot is a warm thread waiting for a run: it takes it on ch.
type warmSlot struct {
	ch  chan warmJob
	tid int
}

var warm struct {
	started atomic.Int64 // runs started from a warm thread
	mu      sync.Mutex
	ready   map[*unix.SockFprog]warmSlot // at most one thread waits per filter
	pending map[*unix.SockFprog]bool     // one is warming up
}

// prewarm starts warming a thread for filter unless one is ready or on
// its way.
func prewarm(filter *unix.SockFprog) {
	warm.mu.Lock()
	defer warm.mu.Unlock()
	if _, ok := warm.ready[filter]; ok || warm.pending[filter] {
		return
	}
	if warm.pending == nil {
		warm.pending = map[*unix.SockFprog]bool{}
		warm.ready = map[*unix.SockFprog]warmSlot{}
	}
	warm.pending[filter] = true
	go warmThread(filter)
}

// takeWarm is the warm thread waiting for a run confined by c, if any;
// it is then no longer waiting for any other.
func takeWarm(c *Confinement) chan warmJob {
	if c == nil {
		return nil
	}
	warm.mu.Lock()
	defer warm.mu.Unlock()
	s := warm.ready[c.filter]
	delete(warm.ready, c.filter)
	return s.ch
}

// warmThread locks a thread, confines it as far as no run is needed, and
// waits for one. As startLocked, it never unlocks the thread.
func warmThread(filter *unix.SockFprog) {
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		defer runtime.UnlockOSThread()
		go warmThread(filter)
		return
	}
	err := warmUp(filter)
	warm.mu.Lock()
	delete(warm.pending, filter)
	if err != nil {
		warm.mu.Unlock()
		return // the thread ends; a later run starts cold and reports the error
	}
	ch := make(chan warmJob)
	warm.ready[filter] = warmSlot{ch, unix.Gettid()}
	warm.mu.Unlock()
	job := <-ch
	if job.g != nil && job.g.tasks != "" {
		// A cgroup the thread joins: without capabilities it may not be
		// allowed to. Then a cold thread, which joins before it drops
		// them, starts the run instead.
		leave, err := job.g.enterThread()
		if err != nil {
			go startLocked(job.cmd, job.c, job.g, job.errc)
			return
		}
		job.leave = leave
	}
	job.errc <- startWarm(job)
}

// warmUp is confineThread's part that does not depend on the run:
// capabilities, no_new_privs, the seccomp filter.
func warmUp(filter *unix.SockFprog) error {
	if err := dropCapsIfAny(); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: no_new_privs: %w", err)
	}
	return loadFilter(filter)
}

// startWarm finishes confining a warm thread for job's run and starts it.
func startWarm(job warmJob) error {
	warm.started.Add(1)
	if job.leave != nil {
		defer job.leave()
	}
	c := job.c
	if c.ruleset < 0 {
		return errors.New("sandbox: confinement used after Close")
	}
	if err := restrictLayers(c.base.fd, c.ruleset); err != nil {
		return err
	}
	return job.cmd.Start()
}

// closeInherited marks every descriptor above 2 close-on-exec, once: what
// this process inherited from its parent without the flag (an agent's
// pipe, a terminal, a socket) would otherwise pass into every child. Go
// opens its own with the flag already; os/exec hands a child only what
// the Cmd names.
var closeInherited = sync.OnceFunc(func() {
	if unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	// Before Linux 5.11: one by one.
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
})

// startLocked starts cmd from the OS thread it locks, after confining that
// thread. It never unlocks it: the thread ends with the goroutine, taking
// its confinement with it. The process's main thread cannot end (the Go
// runtime parks it for good instead), and the kernel judges signals and
// /proc access against the main thread's credentials: if this goroutine
// landed there, it holds the main thread and hands the work to another.
func startLocked(cmd *osexec.Cmd, c *Confinement, g *Cgroup, errc chan<- error) {
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		defer runtime.UnlockOSThread()
		inner := make(chan error, 1)
		go startLocked(cmd, c, g, inner)
		errc <- <-inner
		return
	}
	leave := func() {}
	if g != nil {
		var err error
		if leave, err = g.enterThread(); err != nil {
			errc <- err
			return
		}
	}
	if c != nil {
		if err := c.apply(); err != nil {
			leave()
			errc <- err
			return
		}
	}
	err := cmd.Start()
	leave()
	errc <- err
}

// apply confines the calling thread: capabilities dropped (as root),
// no_new_privs, the Landlock domain, the seccomp filter.
func (c *Confinement) apply() error {
	if c.ruleset < 0 {
		return errors.New("sandbox: confinement used after Close")
	}
	return confineThread(c.base.fd, c.ruleset, c.filter)
}

// confineThread confines the calling thread: every capability it has
// dropped (root's, or the box's in its user namespace), no_new_privs, the
// seccomp filter, then the two Landlock layers (Landlock's calls pass the
// filter). A warm thread does the same in two steps: warmUp ahead of the
// run, restrictLayers when it comes.
func confineThread(base, run int, filter *unix.SockFprog) error {
	if err := warmUp(filter); err != nil {
		return err
	}
	return restrictLayers(base, run)
}

// restrictLayers puts the calling thread under the base Landlock layer
// and the run's own.
func restrictLayers(base, run int) error {
	for _, fd := range []int{base, run} {
		if err := landlockRestrict(fd); err != nil {
			return fmt.Errorf("sandbox: landlock_restrict_self: %w", err)
		}
	}
	return nil
}

// dropCapsIfAny drops the calling thread's capabilities if it has any
// (root's, or the box's in its user namespace).
func dropCapsIfAny() error {
	var caps unix.CapUserData
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	if os.Geteuid() == 0 || (unix.Capget(&hdr, &caps) == nil && caps.Permitted != 0) {
		return dropCapabilities()
	}
	return nil
}

// dropCapabilities leaves the calling thread without capabilities, for
// good: its permitted, effective and inheritable sets are emptied, and the
// locked securebits keep a child running as root from getting them back
// on exec (uid 0 otherwise gets its bounding set) or through the ambient
// set. So a confined root has no CAP_DAC_OVERRIDE past file modes, no
// module loading, no raw devices. (Two calls instead of dropping the 41
// bounding-set entries one by one.)
func dropCapabilities() error {
	// linux/securebits.h: each bit and its lock.
	const (
		noRoot, noRootLocked               = 1 << 0, 1 << 1
		noSetuidFixup, noSetuidFixupLocked = 1 << 2, 1 << 3
		keepCapsLocked                     = 1 << 5
		noAmbientRaise, noAmbientLocked    = 1 << 6, 1 << 7
	)
	const bits = noRoot | noRootLocked | noSetuidFixup | noSetuidFixupLocked | keepCapsLocked |
		noAmbientRaise | noAmbientLocked
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, bits, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: securebits: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("sandbox: drop capabilities: %w", err)
	}
	return nil
}
