//go:build linux

package main

// The Landlock and seccomp steps of the confined floors, on the calling
// thread only. exec/sandbox keeps its own versions of these unexported;
// the plan (what is granted where, carved around the hidden paths) comes
// from its exported PlanBase, so the floor carves as sluice carves.

import (
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sluice-dev/sluice/exec/sandbox"
)

// abi is the kernel's Landlock ABI version, or an error without Landlock.
func abi() (int, error) {
	r, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		return 0, fmt.Errorf("landlock: %w", e)
	}
	return int(r), nil
}

// handledFS is every file system right the ABI knows.
func handledFS(abi int) uint64 {
	a := uint64(unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
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

const (
	readRights = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR | unix.LANDLOCK_ACCESS_FS_EXECUTE
	// writeRights: write, truncate, and make and remove entries (no
	// device nodes).
	writeRights = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE |
		unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM | unix.LANDLOCK_ACCESS_FS_REFER
)

// rights maps a planned grant's rights onto Landlock's, within handled
// (the rights that apply to a file only, for a file).
func rights(a sandbox.Access, dir bool, handled uint64) uint64 {
	var r uint64
	if a&sandbox.Read != 0 {
		r |= unix.LANDLOCK_ACCESS_FS_READ_FILE
	}
	if a&sandbox.ReadDir != 0 && dir {
		r |= unix.LANDLOCK_ACCESS_FS_READ_DIR
	}
	if a&sandbox.Exec != 0 {
		r |= unix.LANDLOCK_ACCESS_FS_EXECUTE
	}
	if a&sandbox.Write != 0 {
		r |= unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if a&sandbox.Create != 0 && dir {
		r |= writeRights &^ (unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE)
	}
	if a&sandbox.Ioctl != 0 {
		r |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return r & handled
}

// ruleset makes a Landlock ruleset handling fs (and, as sluice's run
// layer does where the ABI has them, TCP bind and connect, and the
// signal and abstract-socket scopes).
func ruleset(abi int, fs uint64, scoped bool) (int, error) {
	attr := unix.LandlockRulesetAttr{Handled_access_fs: fs}
	if scoped && abi >= 4 {
		attr.Handled_access_net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	}
	if scoped && abi >= 6 {
		attr.Scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	}
	r, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if e != 0 {
		return -1, fmt.Errorf("landlock_create_ruleset: %w", e)
	}
	return int(r), nil
}

// allow grants on path (beneath it, for a directory) the rights access
// gives it, a directory or not. The path is opened without following a
// final symlink, and a symlink or one of the hidden objects is granted
// nothing, as sluice does.
func allow(fd int, path string, access func(dir bool) uint64, hidden map[[2]uint64]bool) error {
	pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil // gone since it was planned
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil
	}
	mode := st.Mode & unix.S_IFMT
	if mode == unix.S_IFLNK || hidden[[2]uint64{st.Dev, st.Ino}] {
		return nil
	}
	a := access(mode == unix.S_IFDIR)
	if a == 0 {
		return nil
	}
	attr := unix.LandlockPathBeneathAttr{Allowed_access: a, Parent_fd: int32(pfd)}
	if _, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(fd), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&attr)), 0, 0, 0); e != 0 {
		return fmt.Errorf("landlock_add_rule %s: %w", path, e)
	}
	return nil
}

// fixed is access for a directory, and what of it applies to a file for
// anything else.
func fixed(access uint64) func(dir bool) uint64 {
	return func(dir bool) uint64 {
		if dir {
			return access
		}
		return access & (unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_EXECUTE |
			unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV)
	}
}

// baseRuleset builds the confined floor's base layer once: every right on
// everything but the hidden paths and the closed directories (with what
// opens those), carved by sandbox.PlanBase. Hidden paths out of this
// user's reach are left uncarved, as sluice leaves them.
func baseRuleset(abi int, bs sandbox.BaseSpec) (fd, rules int, err error) {
	var reach []string
	for _, h := range bs.Hidden {
		if unix.Access(h, unix.R_OK) == nil || unix.Access(h, unix.W_OK) == nil {
			reach = append(reach, h)
		}
	}
	bs.Hidden = reach
	grants, _ := sandbox.PlanBase(bs)
	hidden := map[[2]uint64]bool{}
	for _, h := range reach {
		var st unix.Stat_t
		if unix.Stat(h, &st) == nil {
			hidden[[2]uint64{st.Dev, st.Ino}] = true
		}
	}
	handled := handledFS(abi)
	if fd, err = ruleset(abi, handled, false); err != nil {
		return -1, 0, err
	}
	for _, g := range grants {
		if err := allow(fd, g.Path, func(dir bool) uint64 { return rights(g.Access, dir, handled) }, hidden); err != nil {
			unix.Close(fd)
			return -1, 0, err
		}
	}
	return fd, len(grants), nil
}

// restrict enforces ruleset fd on the calling thread.
func restrict(fd int) error {
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(fd), 0, 0); e != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", e)
	}
	return nil
}

// The seccomp filter of the floors: socket(2) refused with EACCES, a call
// through another architecture's entry with EPERM (and, on x86-64, one
// through the x32 ABI with ENOSYS); everything else allowed on its number
// and architecture alone, so the kernel's action cache skips the filter.
// sluice's filter refuses more (exec/sandbox/internal/seccompasm); these
// are the calls the issue names.
var filter = func() *unix.SockFprog {
	const (
		archOff = 4 // offsetof(struct seccomp_data, arch)
		nrOff   = 0
		x32Bit  = 0x40000000
	)
	arch := map[string]uint32{"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64,
		"riscv64": unix.AUDIT_ARCH_RISCV64, "ppc64le": unix.AUDIT_ARCH_PPC64LE, "s390x": unix.AUDIT_ARCH_S390X,
		"loong64": unix.AUDIT_ARCH_LOONGARCH64}[runtime.GOARCH]
	if arch == 0 {
		return nil
	}
	ld := func(off uint32) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}
	}
	jeq := func(k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k, Jt: jt, Jf: jf}
	}
	ret := func(k uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k} }
	x32 := unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, K: x32Bit, Jt: 4, Jf: 0} // to ENOSYS
	if runtime.GOARCH != "amd64" {
		x32 = jeq(^uint32(0), 4, 0) // no x32 ABI: a jump never taken
	}
	prog := []unix.SockFilter{
		ld(archOff),
		jeq(arch, 0, 5), // else EPERM
		ld(nrOff),
		x32,
		jeq(unix.SYS_SOCKET, 1, 0),
		ret(unix.SECCOMP_RET_ALLOW),
		ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)),
		ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)),
		ret(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)),
	}
	return &unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
}()

// confineThread is the steps on the calling thread: no_new_privs, each
// ruleset, the seccomp filter.
func confineThread(rulesets ...int) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	for _, fd := range rulesets {
		if err := restrict(fd); err != nil {
			return err
		}
	}
	if filter == nil {
		return fmt.Errorf("seccomp: no filter for %s", runtime.GOARCH)
	}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(filter))); e != 0 {
		return fmt.Errorf("seccomp: %w", e)
	}
	return nil
}

// onOwnThread runs f on a fresh OS thread locked to it, never unlocked:
// the thread ends with f, taking whatever f confined it to. The main
// thread is never used (the runtime parks a locked main thread for good,
// and the kernel judges signals and /proc access against it).
func onOwnThread(f func() error) error {
	errc := make(chan error, 1)
	go ownThread(f, errc)
	return <-errc
}

func ownThread(f func() error, errc chan<- error) {
	runtime.LockOSThread()
	if unix.Gettid() == os.Getpid() {
		// Hold the main thread until the work is done elsewhere.
		defer runtime.UnlockOSThread()
		inner := make(chan error, 1)
		go ownThread(f, inner)
		errc <- <-inner
		return
	}
	errc <- f()
}
