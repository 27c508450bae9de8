package sandbox

import (
	"encoding/binary"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

// walk runs a seccomp program on the seccomp_data of a syscall made from
// x86-64 (arch as given) and returns what it returns, how many
// instructions it ran, and whether it read more than the number and the
// architecture (the kernel caches the result of a syscall for which the
// program reads nothing else and allows, and then runs no filter for it).
func walk(prog []unix.SockFilter, arch, nr uint32, args [6]uint64) (ret uint32, steps int, readArgs bool, err error) {
	var data [64]byte
	binary.LittleEndian.PutUint32(data[0:], nr)
	binary.LittleEndian.PutUint32(data[4:], arch)
	for i, a := range args {
		binary.LittleEndian.PutUint64(data[16+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		steps++
		in := prog[pc]
		jump := func(cond bool) {
			if cond {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		}
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			if in.K > 60 || in.K%4 != 0 {
				return 0, steps, readArgs, fmt.Errorf("load at %d", in.K)
			}
			readArgs = readArgs || in.K >= 8
			acc = binary.LittleEndian.Uint32(data[in.K:])
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			jump(acc == in.K)
		case unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K:
			jump(acc >= in.K)
		case unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K:
			jump(acc > in.K)
		case unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			jump(acc&in.K != 0)
		case unix.BPF_ALU | unix.BPF_AND | unix.BPF_K:
			acc &= in.K
		case unix.BPF_JMP | unix.BPF_JA:
			pc += int(in.K)
		case unix.BPF_RET | unix.BPF_K:
			return in.K, steps, readArgs, nil
		default:
			return 0, steps, readArgs, fmt.Errorf("instruction %#x at %d", in.Code, pc)
		}
	}
	return 0, steps, readArgs, fmt.Errorf("ran off the end")
}

// TestSeccompFilterCost walks the programs: a syscall the filter does not
// name is allowed on its number alone (so the kernel caches it and runs
// no filter), and the named ones that are hot reach ALLOW in few
// instructions: openat (without O_CREAT) in 8, ioctl in 10.
func TestSeccompFilterCost(t *testing.T) {
	progs, err := programs()
	if err != nil {
		t.Fatal(err)
	}
	const x8664 = 0xc000003e
	named := map[uint32]bool{}
	for _, nr := range []uint32{unix.SYS_OPENAT, unix.SYS_IOCTL, unix.SYS_OPEN, unix.SYS_SOCKET, unix.SYS_IO_URING_SETUP,
		unix.SYS_OPENAT2, unix.SYS_CHMOD, unix.SYS_FCHMOD, unix.SYS_FCHMODAT, unix.SYS_FCHMODAT2, unix.SYS_CREAT,
		unix.SYS_MKDIR, unix.SYS_MKDIRAT, unix.SYS_MKNOD, unix.SYS_MKNODAT, unix.SYS_PRLIMIT64, unix.SYS_SCHED_SETAFFINITY,
		unix.SYS_SCHED_SETSCHEDULER, unix.SYS_SCHED_SETPARAM, unix.SYS_SCHED_SETATTR,
		unix.SYS_SETPRIORITY, unix.SYS_IOPRIO_SET, unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
		unix.SYS_PERF_EVENT_OPEN, unix.SYS_BPF, unix.SYS_USERFAULTFD,
		// the read-only program's
		unix.SYS_CHOWN, unix.SYS_LCHOWN, unix.SYS_FCHOWN, unix.SYS_FCHOWNAT, unix.SYS_SETXATTR, unix.SYS_LSETXATTR,
		unix.SYS_FSETXATTR, unix.SYS_REMOVEXATTR, unix.SYS_LREMOVEXATTR, unix.SYS_FREMOVEXATTR, 463, 466,
		// the proxied program's (no TCP Fast Open send)
		unix.SYS_SENDTO, unix.SYS_SENDMSG, unix.SYS_SENDMMSG, unix.SYS_LISTEN} {
		named[nr] = true
	}
	all := [6]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}
	openat := [6]uint64{uint64(unix.AT_FDCWD & (1<<64 - 1)), 0x7f0000001000, unix.O_RDONLY | unix.O_CLOEXEC}
	ioctl := [6]uint64{1, unix.TCGETS, 0x7f0000001000}
	for i, prog := range progs {
		for nr := uint32(0); nr < 500; nr++ {
			ret, _, readArgs, err := walk(prog, x8664, nr, all)
			if err != nil {
				t.Fatalf("program %d, syscall %d: %v", i, nr, err)
			}
			if named[nr] {
				continue
			}
			if ret != unix.SECCOMP_RET_ALLOW || readArgs {
				t.Errorf("program %d, syscall %d: returns %#x, reads its arguments %v; want ALLOW on the number alone", i, nr, ret, readArgs)
			}
		}
		for _, c := range []struct {
			name     string
			arch, nr uint32
			args     [6]uint64
			ret      uint32
			steps    int
		}{
			{"openat", x8664, unix.SYS_OPENAT, openat, unix.SECCOMP_RET_ALLOW, 8},
			{"ioctl TCGETS", x8664, unix.SYS_IOCTL, ioctl, unix.SECCOMP_RET_ALLOW, 10},
			{"x32 read", x8664, 0x40000000, all, unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS), 0},
			{"i386 read", 0x40000003, 3, all, unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM), 0},
		} {
			ret, steps, _, err := walk(prog, c.arch, c.nr, c.args)
			if err != nil {
				t.Fatalf("program %d, %s: %v", i, c.name, err)
			}
			if ret != c.ret || c.steps > 0 && steps > c.steps {
				t.Errorf("program %d, %s: returns %#x in %d instructions, want %#x in at most %d", i, c.name, ret, steps, c.ret, c.steps)
			}
		}
	}
}
