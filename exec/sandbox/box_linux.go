package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// The box: a run that writes (mutating, networked) starts in namespaces
// of its own (user, mount, IPC), where the whole file system is
// mounted read-only but for the places the run may write. What Landlock
// cannot refuse there is then refused by the kernel's mount flags: a mode,
// owner, time or xattr change outside the writable set (EROFS), a write to
// a file that later runs with the person's rights inside a writable root
// (it is bound read-only over itself), a read of a project secret (an
// empty file is bound over it). SysV IPC is the run's own, and so, for a
// run held to its proxy (Spec.Proxy), is the network (network_linux.go).
//
// Go starts a child with no code of the caller's between fork and exec,
// so the namespaces are set up by a helper, sluice-box, that the child
// execs first: it makes the mounts, confines itself with the Landlock
// rulesets and the seccomp filter the caller prepared (passed as
// descriptors), drops every capability and execs the command. Without
// the helper beside sluice, or where user namespaces are refused, runs
// are confined by Landlock and seccomp alone (Confinement.Box says).

// boxName is the helper's file name, beside the sluice executable.
const boxName = "sluice-box"

// BoxPath is the helper's path for Spec.Box: sluice-box beside this
// executable (never looked for on $PATH: an agent's environment would
// choose it), or "" when there is none.
var BoxPath = sync.OnceValue(func() string {
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	p := filepath.Join(filepath.Dir(self), boxName)
	if unix.Access(p, unix.X_OK) != nil {
		return ""
	}
	return p
})

// usernsRefused says why unprivileged user namespaces are refused here,
// from what the kernel publishes, or "".
func usernsRefused() string {
	if os.Geteuid() == 0 {
		return ""
	}
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	switch {
	case read("/proc/sys/user/max_user_namespaces") == "0":
		return "user namespaces are off (user.max_user_namespaces = 0)"
	case read("/proc/sys/kernel/unprivileged_userns_clone") == "0":
		return "unprivileged user namespaces are off (kernel.unprivileged_userns_clone = 0)"
	case read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1":
		return "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1)"
	}
	return ""
}

// BoxRefused says why runs that write are not boxed here with the helper
// box (BoxPath), or "" when they are.
func BoxRefused(box string) string { return boxWhy(&Spec{Box: box}) }

// boxWhy says why a run of spec that writes is not boxed here, or "" when
// it is.
func boxWhy(spec *Spec) string {
	if spec.Box == "" {
		return boxName + " is not installed beside sluice"
	}
	if why, _ := boxRefusedWhy.Load().(string); why != "" {
		return why
	}
	return usernsWhy()
}

var usernsWhy = sync.OnceValue(usernsRefused)

// boxRefusedWhy is set once a start found the namespaces refused.
var boxRefusedWhy atomic.Value

// boxRefused reports whether err is the kernel refusing a start's
// namespaces (rather than the program failing to start).
func boxRefused(err error) bool {
	return errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOSPC) ||
		errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EUSERS)
}

// boxPlan is what the helper mounts for one run.
type boxPlan struct {
	writable []string // bound read-write over themselves; the rest is read-only
	protect  []string // bound read-only over themselves, inside a writable one
	masked   []string // an empty file bound over each
	fallback []string // what runs when the program cannot start: path, argv
	netPort  int      // a network namespace of its own, its proxy listening on this port; 0: the caller's network
}

// planBox makes the plan for spec, or nil when the spec's profile writes
// nothing (read_only runs need no box: nothing of theirs is writable).
func planBox(spec *Spec) *boxPlan {
	if !spec.Profile.Writes() {
		return nil
	}
	b := &boxPlan{}
	w := append([]string{}, spec.Roots...)
	w = append(w, spec.Writable...)
	w = append(w, spec.TmpDir, "/dev/shm")
	b.writable = resolveAll(w)
	b.protect = resolveAll(spec.Protect)
	b.masked = resolveAll(spec.Masked)
	return b
}

// encode writes the plan for the helper: records of a kind letter and a
// path, each ended by NUL (a path holds no NUL; it may hold a newline).
func (b *boxPlan) encode() []byte {
	var buf bytes.Buffer
	for _, l := range []struct {
		kind  byte
		paths []string
	}{{'W', b.writable}, {'P', b.protect}, {'M', b.masked}, {'F', b.fallback}, {'N', netRecord(b.netPort)}} {
		for _, p := range l.paths {
			buf.WriteByte(l.kind)
			buf.WriteString(p)
			buf.WriteByte(0)
		}
	}
	return buf.Bytes()
}

func decodeBox(data []byte) (*boxPlan, error) {
	b := &boxPlan{}
	for _, rec := range bytes.Split(data, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		p := string(rec[1:])
		if rec[0] == 'F' {
			b.fallback = append(b.fallback, p)
			continue
		}
		if rec[0] == 'N' {
			port, err := strconv.Atoi(p)
			if err != nil || port <= 0 || port > 65535 {
				return nil, fmt.Errorf("proxy port %q", p)
			}
			b.netPort = port
			continue
		}
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("path %q is not absolute", p)
		}
		switch rec[0] {
		case 'W':
			b.writable = append(b.writable, p)
		case 'P':
			b.protect = append(b.protect, p)
		case 'M':
			b.masked = append(b.masked, p)
		default:
			return nil, fmt.Errorf("unknown record %q", rec[0])
		}
	}
	return b, nil
}

// Fallback names the program and argv a boxed start execs where the
// command's own program cannot start (a script without #!, a program
// gone): what the caller would start after a failed Start, which, boxed,
// the helper sees instead of the caller.
func (c *Confinement) Fallback(path string, argv []string) {
	if c != nil && c.box != nil {
		c.box.fallback = append([]string{path}, argv...)
	}
}

// The descriptors the helper gets, after stdin, stdout and stderr.
const (
	boxPlanFD = 3 // the plan
	boxBaseFD = 4 // the base Landlock ruleset
	boxRunFD  = 5 // the run's own
	boxNetFD  = 6 // with a network namespace: where its proxy's listener goes
)

// startBox starts cmd through the helper, in namespaces of its own. The
// caller's thread is not confined: the helper confines itself before it
// execs the command. It fails, and starts nothing, where the kernel
// refuses the namespaces.
func startBox(cmd *osexec.Cmd, c *Confinement, g *Cgroup) error {
	if c.box.netPort != 0 && c.net.boxEnd == nil {
		return errStartedOnce
	}
	plan, err := unix.MemfdCreate("sluice-box-plan", unix.MFD_CLOEXEC)
	if err != nil {
		return err
	}
	planFile := os.NewFile(uintptr(plan), "sluice-box-plan")
	defer planFile.Close()
	if _, err := planFile.Write(c.box.encode()); err != nil {
		return err
	}
	if _, err := planFile.Seek(0, io.SeekStart); err != nil {
		return err
	}
	var files []*os.File
	for _, fd := range []int{c.base.fd, c.ruleset} {
		d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3)
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return err
		}
		files = append(files, os.NewFile(uintptr(d), "landlock-ruleset"))
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()

	// The command becomes the helper's arguments (which filter, the
	// program, its argv) for the start, and is put back as it was after:
	// the caller waits on it as usual.
	path, args, extra, attr := cmd.Path, cmd.Args, cmd.ExtraFiles, cmd.SysProcAttr
	defer func() { cmd.Path, cmd.Args, cmd.ExtraFiles, cmd.SysProcAttr = path, args, extra, attr }()
	cmd.Path = c.spec.Box
	cmd.Args = append([]string{boxName, strconv.Itoa(c.filterIndex), path}, args...)
	cmd.ExtraFiles = append([]*os.File{planFile, files[0], files[1]}, extra...)
	if c.box.netPort != 0 {
		cmd.ExtraFiles = append([]*os.File{planFile, files[0], files[1], c.net.boxEnd}, extra...)
	}
	a := &syscall.SysProcAttr{}
	if attr != nil {
		*a = *attr
	}
	// No PID namespace: /proc would have to be mounted again for it, as
	// new inodes the Landlock rulesets (made before) do not grant, and
	// without that ps refuses to run (its pid is not /proc/self's). The
	// run's cgroup takes what it leaves behind.
	a.Cloneflags |= unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWIPC
	if c.box.netPort != 0 {
		a.Cloneflags |= unix.CLONE_NEWNET
	}
	uid, gid := os.Geteuid(), os.Getegid()
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	a.GidMappingsEnableSetgroups = false
	// The helper's capabilities, in its own user namespace only: to
	// mount, and to lock the securebits as it drops every capability
	// before it execs the command (which, run by a user other than root,
	// it could not do without CAP_SETPCAP).
	a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP}
	if c.box.netPort != 0 {
		// And to bring its loopback up.
		a.AmbientCaps = append(a.AmbientCaps, unix.CAP_NET_ADMIN)
	}
	cmd.SysProcAttr = a
	if g != nil {
		g.prepare(cmd)
	}
	errc := make(chan error, 1)
	go startLocked(cmd, nil, g, errc)
	err = <-errc
	if err == nil {
		c.net.started()
	}
	return err
}

// BoxMain is sluice-box: it runs in the namespaces startBox made, as
// their first process, with the plan and the rulesets on descriptors 3 to
// 5 and "FILTER PROGRAM ARGV..." as arguments. It mounts the plan,
// confines itself and execs PROGRAM; it returns only to say why it could
// not (the caller exits 125).
func BoxMain(args []string) error {
	runtime.LockOSThread() // confined, then exec'd, on one thread
	if len(args) < 3 {
		return errors.New("usage: sluice-box FILTER PROGRAM ARGV0 [ARG]... (started by sluice, not by hand)")
	}
	idx, err := strconv.Atoi(args[0])
	if err != nil {
		return fmt.Errorf("filter %q: %v", args[0], err)
	}
	data, err := io.ReadAll(os.NewFile(boxPlanFD, "plan"))
	if err != nil {
		return fmt.Errorf("read the plan: %v", err)
	}
	plan, err := decodeBox(data)
	if err != nil {
		return fmt.Errorf("the plan: %v", err)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	if err := plan.mount(); err != nil {
		return err
	}
	// The working directory again, through the mounts just made: the old
	// one is the read-only mount under a writable root's bind.
	if err := unix.Chdir(cwd); err != nil {
		return fmt.Errorf("chdir %s: %v", cwd, err)
	}
	f, err := filters()
	if err != nil {
		return err
	}
	if idx < 0 || idx >= len(f) {
		return fmt.Errorf("no filter %d", idx)
	}
	if plan.netPort != 0 {
		if err := boxNetwork(boxNetFD, plan.netPort); err != nil {
			return err
		}
	}
	if err := confineThread(boxBaseFD, boxRunFD, f[idx]); err != nil {
		return err
	}
	for fd := boxPlanFD; fd <= boxRunFD; fd++ {
		unix.Close(fd)
	}
	err = unix.Exec(args[1], args[2:], os.Environ())
	if len(plan.fallback) >= 2 && (errors.Is(err, unix.ENOEXEC) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOENT)) {
		// As the caller would have on a failed start: the shell runs the
		// line, and says why as it would have.
		err = unix.Exec(plan.fallback[0], plan.fallback[1:], os.Environ())
		return &ExecError{Path: plan.fallback[0], Err: err}
	}
	return &ExecError{Path: args[1], Err: err}
}

// BoxExit is sluice-box's main: BoxMain, and, where it returns, why on
// stderr and the exit status a shell would give (125 when the box itself
// failed).
func BoxExit(args []string) {
	err := BoxMain(args)
	fmt.Fprintf(os.Stderr, "sluice-box: %v\n", err)
	var ee *ExecError
	if errors.As(err, &ee) {
		os.Exit(ee.Status())
	}
	os.Exit(125)
}

// ExecError is BoxMain's failure to exec the command; the helper exits
// as a shell would (126, or 127 for a program that is not there).
type ExecError struct {
	Path string
	Err  error
}

func (e *ExecError) Error() string { return e.Path + ": " + e.Err.Error() }

// Status is the exit status a shell gives this failure.
func (e *ExecError) Status() int {
	if errors.Is(e.Err, unix.ENOENT) {
		return 127
	}
	return 126
}

// mount makes the plan's mounts in this (new) mount namespace.
func (b *boxPlan) mount() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the mounts private: %v", err)
	}
	bind := func(src, dst string) error {
		if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %v", dst, err)
		}
		return nil
	}
	setattr := func(p string, flags uint, set, clr uint64) error {
		if err := unix.MountSetattr(-1, p, flags, &unix.MountAttr{Attr_set: set, Attr_clr: clr}); err != nil {
			return fmt.Errorf("mount_setattr %s: %v", p, err)
		}
		return nil
	}
	for _, w := range b.writable {
		if _, err := os.Lstat(w); err != nil {
			continue
		}
		if err := bind(w, w); err != nil {
			return err
		}
	}
	if err := setattr("/", unix.AT_RECURSIVE, unix.MOUNT_ATTR_RDONLY, 0); err != nil {
		return err
	}
	for _, w := range b.writable {
		if _, err := os.Lstat(w); err != nil {
			continue
		}
		if err := setattr(w, unix.AT_RECURSIVE, 0, unix.MOUNT_ATTR_RDONLY); err != nil {
			return err
		}
	}
	for _, p := range b.protect {
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if err := bind(p, p); err != nil {
			return err
		}
		if err := setattr(p, unix.AT_RECURSIVE, unix.MOUNT_ATTR_RDONLY, 0); err != nil {
			return err
		}
	}
	for _, m := range b.masked {
		if fi, err := os.Lstat(m); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if err := unix.Mount("/dev/null", m, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("mask %s: %v", m, err)
		}
	}
	return nil
}
