package sandbox

import (
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"runtime"
	"strconv"
	"sync"

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
	spec    Spec
	base    *base // shared; released by Close
	ruleset int   // the run's own layer
	filter  *unix.SockFprog
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
	b, err := acquireBase(spec.Base(), abi)
	if err != nil {
		return nil, err
	}
	fd, err := runRuleset(&spec, abi)
	if err != nil {
		releaseBase(b)
		return nil, err
	}
	filter := f[0]
	switch {
	case spec.Profile.Network():
		filter = f[1]
	case !spec.Profile.Writes():
		filter = f[2]
	}
	return &Confinement{spec: spec, base: b, ruleset: fd, filter: filter}, nil
}

// Spec is what c confines to.
func (c *Confinement) Spec() Spec { return c.spec }

// Close releases the ruleset. A child started already stays confined.
func (c *Confinement) Close() error {
	if c == nil || c.ruleset < 0 {
		return nil
	}
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
	errc := make(chan error, 1)
	go startLocked(cmd, c, g, errc)
	return <-errc
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
	if os.Geteuid() == 0 {
		if err := dropCapabilities(); err != nil {
			return err
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: no_new_privs: %w", err)
	}
	if err := landlockRestrict(c.base.fd); err != nil {
		return fmt.Errorf("sandbox: landlock_restrict_self: %w", err)
	}
	if err := landlockRestrict(c.ruleset); err != nil {
		return fmt.Errorf("sandbox: landlock_restrict_self: %w", err)
	}
	return loadFilter(c.filter)
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
