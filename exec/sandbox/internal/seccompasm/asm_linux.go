// Package seccompasm assembles sluice's four seccomp programs, with
// golang.org/x/net/bpf, for the architecture it runs on, taking the
// system call numbers from github.com/elastic/go-seccomp-bpf's tables.
// The sandbox links it only where no program was generated ahead of time:
// those tables cost every process that links them ~0.2 ms to build at
// start, and every agent's hook is such a process.
package seccompasm

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The returns.
const (
	allow  = unix.SECCOMP_RET_ALLOW
	eperm  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	eacces = unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)
	enosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)

// Argument values the rules compare with.
const (
	setid            = unix.S_ISUID | unix.S_ISGID                     // 06000
	creates          = unix.O_CREAT | unix.O_TMPFILE&^unix.O_DIRECTORY // O_CREAT|__O_TMPFILE: the open takes a mode
	ioprioWhoProcess = 1                                               // linux/ioprio.h
	x32Bit           = 0x40000000                                      // __X32_SYSCALL_BIT
)

// The programs, by what they are for.
const (
	Mutating  = iota // no network
	Networked        // inet sockets
	ReadOnly         // no network, no mode, owner or xattr change
	ProxyOnly        // plain TCP stream sockets only (a proxied run without namespaces)
	Programs         // how many
)

// Assemble builds the filter. Anything it does not name is allowed:
// Landlock governs the file system and TCP ports; this closes what
// Landlock does not.
//
//   - socket: with network, only AF_INET and AF_INET6, and neither with
//     IPPROTO_MPTCP (an MPTCP socket's connections get past Landlock's TCP
//     port rules on the kernels sluice supports); without network, none.
//     For a proxied run without namespaces (ProxyOnly) only a plain TCP
//     stream: AF_INET or AF_INET6, SOCK_STREAM (whatever SOCK_NONBLOCK
//     and SOCK_CLOEXEC), protocol 0 or IPPROTO_TCP; no UDP, no raw, no
//     MPTCP, since Landlock governs TCP alone. EACCES. socketpair stays:
//     it connects a process only to itself.
//   - ProxyOnly only: sendto, sendmsg and sendmmsg with MSG_FASTOPEN:
//     EACCES. A TCP Fast Open send connects without the connect system
//     call, and so without asking Landlock's port rule. listen: EACCES.
//     A socket that listens unbound is bound by the kernel to a port on
//     every address without asking Landlock's bind rule, and would take
//     connections from anywhere; the only sockets such a run can open
//     are TCP (socketpair's are connected already).
//   - io_uring_setup: EACCES (io_uring can open sockets past the socket
//     syscall's filter).
//   - keyctl, add_key, request_key: EPERM; a confined process would
//     otherwise read the secrets in the user's keyrings.
//   - perf_event_open, bpf, userfaultfd: EPERM; kernel attack surface and
//     other processes' events that no build or test needs.
//   - prlimit64, sched_setaffinity, sched_setscheduler, sched_setparam,
//     sched_setattr: only on pid 0 (the caller; bash's ulimit, taskset
//     CMD and chrt CMD pass 0), else EPERM. setrlimit has no pid and
//     stays. (The kernel keeps a process from changing the scheduling of
//     one with capabilities it lacks, which shields an engine run as
//     root, but not one run as the user.)
//   - setpriority: only PRIO_PROCESS with who 0 (what nice passes), and
//     ioprio_set only IOPRIO_WHO_PROCESS with who 0 (ionice CMD), else
//     EPERM: a process group or a whole uid, the engine's included, is
//     not the run's to renice.
//   - ioctl TIOCSTI and TIOCLINUX: EPERM. TIOCSTI types into the
//     terminal the run inherited, whose shell would run it unconfined.
//   - chmod, fchmod, fchmodat, fchmodat2 with a mode that has S_ISUID or
//     S_ISGID, and creat, mkdir, mkdirat, mknod, mknodat with such a mode,
//     and open and openat with such a mode when O_CREAT or O_TMPFILE is
//     set (the mode is ignored otherwise): EPERM. Landlock does not govern
//     modes; a set-id file is a way out for whoever runs it later.
//     openat2 takes its mode in a struct the filter cannot read: ENOSYS,
//     on which its callers fall back to openat (glibc's open never calls
//     it).
//   - read-only (program ReadOnly) only: every change of a file's mode,
//     owner or extended attributes, by path or by descriptor (chmod,
//     fchmod, fchmodat, fchmodat2, chown, lchown, fchown, fchownat,
//     setxattr, lsetxattr, fsetxattr, removexattr, lremovexattr,
//     fremovexattr, setxattrat, removexattrat): EPERM. Landlock governs
//     none of them, and a read-only run may write nothing, so a mode it
//     could change would be someone else's (chmod 644 ~/.ssh/id_ed25519).
//     Timestamps stay (the Go build cache marks entries used with them).
//
// Every argument compared is an int or narrower in the kernel (pid_t,
// umode_t, ioctl's unsigned int command), which truncates the register
// to its low 32 bits, so the filter compares those bits only:
// 0xffffffff00005412 is TIOCSTI to the kernel and to the filter alike.
//
// A syscall made through another architecture's entry (32-bit int 0x80
// on x86-64) fails with EPERM, and one through the x32 ABI with ENOSYS,
// so the filter cannot be stepped around that way.
//
// The checks are a chain of comparisons on the syscall number, openat's
// and ioctl's first: every syscall not named returns ALLOW looking at
// nothing but its number and architecture, which the kernel caches, so
// those run no filter at all; openat, which must look at its arguments,
// reaches ALLOW in eight instructions.
func Assemble(program int) ([]unix.SockFilter, error) {
	net, readOnly, proxy := program == Networked, program == ReadOnly, program == ProxyOnly
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("sandbox: seccomp: %w", err)
	}
	refuse := func(ret uint32) []bpf.Instruction { return []bpf.Instruction{bpf.RetConstant{Val: ret}} }
	deny, denySocket, noOpenat2 := refuse(eperm), refuse(eacces), refuse(enosys)
	socket := denySocket
	if net {
		socket = inetSocket()
	}
	if proxy {
		socket = tcpSocket()
	}
	type rule struct {
		name   string
		legacy bool // absent on newer architectures (arm64), or older tables
		check  []bpf.Instruction
	}
	rules := []rule{
		{"openat", false, createMode(2, 3)},
		{"ioctl", false, lowNot(1, eperm, unix.TIOCSTI, unix.TIOCLINUX)},
		{"open", true, createMode(1, 2)},
		{"socket", false, socket},
		{"io_uring_setup", false, denySocket},
		{"openat2", false, noOpenat2},
		{"chmod", true, modeBits(1)},
		{"fchmod", false, modeBits(1)},
		{"fchmodat", false, modeBits(2)},
		{"fchmodat2", false, modeBits(2)},
		{"creat", true, modeBits(1)},
		{"mkdir", true, modeBits(1)},
		{"mkdirat", false, modeBits(2)},
		{"mknod", true, modeBits(1)},
		{"mknodat", false, modeBits(2)},
		{"prlimit64", false, lowAre(lowIs{0, 0})},
		{"sched_setaffinity", false, lowAre(lowIs{0, 0})},
		{"sched_setscheduler", false, lowAre(lowIs{0, 0})},
		{"sched_setparam", false, lowAre(lowIs{0, 0})},
		{"sched_setattr", false, lowAre(lowIs{0, 0})},
		{"setpriority", false, lowAre(lowIs{0, unix.PRIO_PROCESS}, lowIs{1, 0})},
		{"ioprio_set", false, lowAre(lowIs{0, ioprioWhoProcess}, lowIs{1, 0})},
		{"keyctl", false, deny},
		{"add_key", false, deny},
		{"request_key", false, deny},
		{"perf_event_open", false, deny},
		{"bpf", false, deny},
		{"userfaultfd", false, deny},
	}
	if proxy {
		flags3 := noFastOpen(3) // sendto's and sendmmsg's flags; sendmsg's are the third
		rules = append(rules, rule{"sendto", false, flags3}, rule{"sendmsg", false, noFastOpen(2)}, rule{"sendmmsg", false, flags3},
			rule{"listen", false, denySocket})
	}
	if readOnly {
		// Every mode change refused, whatever the mode: these come
		// after the hot openat and ioctl, before the mode checks (the
		// first rule for a name decides).
		var ro []rule
		for _, n := range []string{"chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "lchown", "fchown", "fchownat",
			"setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr", "setxattrat", "removexattrat"} {
			legacy := n == "chmod" || n == "chown" || n == "lchown" || n == "setxattrat" || n == "removexattrat"
			ro = append(ro, rule{n, legacy, deny})
		}
		rules = slices.Concat(rules[:3], ro, rules[3:])
	}
	seen := map[string]bool{}

	// The chain: one comparison per rule, falling through to ALLOW; then
	// each distinct check once (the refusals are shared), in rule order.
	type entry struct {
		nr    uint32
		block int
	}
	var entries []entry
	var blocks [][]bpf.Instruction
	for _, r := range rules {
		if seen[r.name] {
			continue
		}
		seen[r.name] = true
		nr, ok := info.SyscallNames[r.name]
		if !ok {
			if r.legacy {
				continue
			}
			return nil, fmt.Errorf("sandbox: seccomp: no syscall %s on %s", r.name, info.Name)
		}
		b := -1
		for i, c := range blocks {
			if &c[0] == &r.check[0] {
				b = i
			}
		}
		if b < 0 {
			b = len(blocks)
			blocks = append(blocks, r.check)
		}
		entries = append(entries, entry{uint32(nr | info.SeccompMask), b})
	}
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: eperm},
		bpf.LoadAbsolute{Off: 0, Size: 4}, // seccomp_data.nr
	}
	if info.ID == arch.X86_64.ID {
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32Bit, SkipFalse: 1},
			bpf.RetConstant{Val: enosys})
	}
	offset := make([]int, len(blocks)) // of each block, from the first
	for i := 1; i < len(blocks); i++ {
		offset[i] = offset[i-1] + len(blocks[i-1])
	}
	for i, e := range entries {
		skip := len(entries) - 1 - i + 1 + offset[e.block] // the rest of the chain, ALLOW, the blocks before
		if skip > 255 {
			return nil, fmt.Errorf("sandbox: seccomp: program too long for its jumps")
		}
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: e.nr, SkipTrue: uint8(skip)})
	}
	prog = append(prog, bpf.RetConstant{Val: allow})
	for _, b := range blocks {
		prog = append(prog, b...)
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("sandbox: seccomp: %w", err)
	}
	fs := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		fs[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return fs, nil
}

// loadLow loads the low 32 bits of argument n (seccomp_data.args[n]).
func loadLow(n uint32) bpf.Instruction {
	off := 16 + 8*n
	if binary.NativeEndian.Uint16([]byte{0, 1}) == 1 { // big-endian
		off += 4
	}
	return bpf.LoadAbsolute{Off: off, Size: 4}
}

// modeBits refuses (EPERM) when the mode in argument n has S_ISUID or
// S_ISGID.
func modeBits(n uint32) []bpf.Instruction {
	return []bpf.Instruction{
		loadLow(n),
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: setid, SkipFalse: 1},
		bpf.RetConstant{Val: eperm},
		bpf.RetConstant{Val: allow},
	}
}

// createMode is modeBits(mode) for an open whose flags (argument flags)
// create a file, ALLOW for any other.
func createMode(flags, mode uint32) []bpf.Instruction {
	return append([]bpf.Instruction{
		loadLow(flags),
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: creates, SkipFalse: 3},
	}, modeBits(mode)...)
}

// lowIs says argument arg's low 32 bits equal val.
type lowIs struct{ arg, val uint32 }

// lowAre allows when every condition holds, else refuses with EPERM.
func lowAre(conds ...lowIs) []bpf.Instruction {
	var p []bpf.Instruction
	n := len(conds)
	for i, c := range conds {
		// [ld, jeq]... ALLOW, EPERM: a mismatch skips to EPERM.
		p = append(p, loadLow(c.arg), bpf.JumpIf{Cond: bpf.JumpEqual, Val: c.val, SkipFalse: uint8(2*(n-i) - 1)})
	}
	return append(p, bpf.RetConstant{Val: allow}, bpf.RetConstant{Val: eperm})
}

// lowNot refuses with ret when argument arg's low 32 bits are one of
// vals, else allows.
func lowNot(arg uint32, ret uint32, vals ...uint32) []bpf.Instruction {
	p := []bpf.Instruction{loadLow(arg)}
	m := len(vals)
	for k, v := range vals {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: uint8(m - k)})
	}
	return append(p, bpf.RetConstant{Val: allow}, bpf.RetConstant{Val: ret})
}

// inetSocket allows socket(AF_INET or AF_INET6, any type, any protocol
// but IPPROTO_MPTCP) and refuses any other with EACCES.
func inetSocket() []bpf.Instruction {
	return []bpf.Instruction{
		loadLow(0), // family
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_INET, SkipTrue: 1},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_INET6, SkipFalse: 3},
		loadLow(2), // protocol
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.IPPROTO_MPTCP, SkipTrue: 1},
		bpf.RetConstant{Val: allow},
		bpf.RetConstant{Val: eacces},
	}
}

// tcpSocket allows socket(AF_INET or AF_INET6, SOCK_STREAM with any of
// SOCK_NONBLOCK and SOCK_CLOEXEC, 0 or IPPROTO_TCP) and refuses any other
// with EACCES: UDP, raw, SCTP and MPTCP sockets are not Landlock's to
// govern, so a run whose one way out is a TCP port may not open them.
func tcpSocket() []bpf.Instruction {
	const typeMask = 0xf // SOCK_TYPE_MASK: the flags live above it
	return []bpf.Instruction{
		loadLow(0), // family
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_INET, SkipTrue: 1},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_INET6, SkipFalse: 7},
		loadLow(1), // type
		bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: typeMask},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SOCK_STREAM, SkipFalse: 4},
		loadLow(2), // protocol
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipTrue: 1},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.IPPROTO_TCP, SkipFalse: 1},
		bpf.RetConstant{Val: allow},
		bpf.RetConstant{Val: eacces},
	}
}

// noFastOpen refuses (EACCES) a send whose flags (argument n) ask for
// MSG_FASTOPEN, and allows any other.
func noFastOpen(n uint32) []bpf.Instruction {
	return []bpf.Instruction{
		loadLow(n),
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: unix.MSG_FASTOPEN, SkipFalse: 1},
		bpf.RetConstant{Val: eacces},
		bpf.RetConstant{Val: allow},
	}
}

// Render writes the programs as the Go source of package sandbox's
// generated file for goarch (the architecture it runs on).
func Render(goarch string) (string, error) {
	var progs [Programs][]unix.SockFilter
	for i := range progs {
		p, err := Assemble(i)
		if err != nil {
			return "", err
		}
		progs[i] = p
	}
	s := "// Code generated by go generate (exec/sandbox/internal/genseccomp); DO NOT EDIT.\n\n" +
		"package sandbox\n\nimport \"golang.org/x/sys/unix\"\n\n" +
		"// The seccomp programs for " + goarch + ", assembled ahead of time by\n" +
		"// internal/seccompasm: [0] without network, [1] with, [2] read-only,\n" +
		"// [3] plain TCP only (a proxied run without namespaces).\n" +
		"func programs() ([4][]unix.SockFilter, error) {\n\treturn [4][]unix.SockFilter{\n"
	for _, p := range progs {
		s += "\t\t{\n"
		for _, f := range p {
			s += fmt.Sprintf("\t\t\t{Code: 0x%02x, Jt: %d, Jf: %d, K: 0x%x},\n", f.Code, f.Jt, f.Jf, f.K)
		}
		s += "\t\t},\n"
	}
	s += "\t}, nil\n}\n"
	return s, nil
}
