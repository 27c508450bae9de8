package sandbox

import (
	"fmt"
	"sync"
	"syscall"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// filters are the two seccomp programs, assembled once: one for profiles
// without network, one for networked.
var filters = sync.OnceValues(func() ([2]*unix.SockFprog, error) {
	var out [2]*unix.SockFprog
	for i, net := range []bool{false, true} {
		p, err := assemble(net)
		if err != nil {
			return out, err
		}
		out[i] = p
	}
	return out, nil
})

// assemble builds the filter: any socket but AF_INET and AF_INET6 (with
// network) or any socket at all (without) fails with EACCES, as does
// io_uring_setup (io_uring can open sockets past the socket syscall's
// filter). socketpair stays: it connects a process only to itself. A
// syscall made through another architecture's entry (32-bit int 0x80 on
// x86-64) fails with EPERM, so the filter cannot be stepped around that
// way; the x32 ABI is refused by the library's own prologue.
func assemble(net bool) (*unix.SockFprog, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("sandbox: seccomp: %w", err)
	}
	deny := seccomp.ActionErrno | seccomp.Action(unix.EACCES)
	groups := []seccomp.SyscallGroup{{Names: []string{"io_uring_setup"}, Action: deny}}
	if net {
		groups = append(groups, seccomp.SyscallGroup{Action: deny, NamesWithCondtions: []seccomp.NameWithConditions{{
			Name: "socket",
			Conditions: seccomp.ArgumentConditions{
				{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_INET},
				{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_INET6},
			},
		}}})
	} else {
		groups = append(groups, seccomp.SyscallGroup{Names: []string{"socket"}, Action: deny})
	}
	pol := seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: groups}
	body, err := pol.Assemble()
	if err != nil {
		return nil, fmt.Errorf("sandbox: seccomp: %w", err)
	}
	// The library lets a foreign architecture's syscalls through to the
	// default action (allow); refuse them first.
	prog := append([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: uint32(seccomp.ActionErrno) | uint32(unix.EPERM)},
	}, body...)
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("sandbox: seccomp: %w", err)
	}
	fs := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		fs[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return &unix.SockFprog{Len: uint16(len(fs)), Filter: &fs[0]}, nil
}

// loadFilter installs prog on the calling thread only (no TSYNC).
func loadFilter(prog *unix.SockFprog) error {
	_, _, e := syscall.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(prog)))
	if e != 0 {
		return fmt.Errorf("sandbox: seccomp: %w", e)
	}
	return nil
}
