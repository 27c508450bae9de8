//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// The tests here check what each rule of the seccomp filter keeps a
// confined child from doing, by its effect, and run the same child as a
// control with everything but the filter (Landlock, no_new_privs and, as
// root, no capabilities: unfiltered), which shows the effect happens
// without the filter, so a refusal is the filter's and not a missing
// capability's. Where the effect needs a capability a confined root has
// dropped, the control is the child run unconfined, and the check that
// the call reaches the kernel without the filter is made with arguments
// the kernel refuses for its own reason (another errno).

// effectEnv makes the test binary act as the effect helper.
const effectEnv = "SLUICE_SECCOMP_EFFECT_HELPER"

// TestSeccompEffectHelper is not a test: run as a child with effectEnv
// set, it makes the raw system call of each op after "--" and prints
// "op<TAB>ok[ detail]" or "op<TAB>err ENAME".
func TestSeccompEffectHelper(t *testing.T) {
	if os.Getenv(effectEnv) != "1" {
		return
	}
	if os.Getenv("SLUICE_SECCOMP_VICTIM") == "1" { // until stdin closes
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	args := os.Args
	for len(args) > 0 && args[0] != "--" {
		args = args[1:]
	}
	if len(args) > 0 {
		args = args[1:]
	}
	w := bufio.NewWriter(os.Stdout)
	for _, op := range args {
		fmt.Fprintf(w, "%s\t%s\n", op, effectOp(op))
	}
	w.Flush()
	os.Exit(0)
}

// num parses a number as Go spells it (0x, 0o, decimal); 0 if it cannot.
func num(s string) uint64 {
	n, _ := strconv.ParseUint(s, 0, 64)
	return n
}

// errnoResult is "ok" with detail, or the errno's name.
func errnoResult(e syscall.Errno, detail string) string {
	if e != 0 {
		return "err " + unix.ErrnoName(e)
	}
	if detail != "" {
		return "ok " + detail
	}
	return "ok"
}

// fdMode closes fd and says its file's mode.
func fdMode(fd uintptr) string {
	var st unix.Stat_t
	err := unix.Fstat(int(fd), &st)
	unix.Close(int(fd))
	if err != nil {
		return "fstat " + err.Error()
	}
	return fmt.Sprintf("mode=%o", st.Mode&0o7777)
}

// effectOp makes the call op names, "name:arg:arg"; numbers are in Go's
// syntax (0o4755, 0x5412).
func effectOp(op string) string {
	f := strings.Split(op, ":")
	arg := func(i int) string {
		if i < len(f) {
			return f[i]
		}
		return ""
	}
	n := func(i int) uintptr { return uintptr(num(arg(i))) }
	path := func(i int) uintptr {
		p, err := unix.BytePtrFromString(arg(i))
		if err != nil {
			return 0
		}
		return uintptr(unsafe.Pointer(p))
	}
	fdcwd := unix.AT_FDCWD
	cwd := uintptr(fdcwd) // as the register holds it
	if !have(op) {
		return "err ENOSYS"
	}
	var e syscall.Errno
	switch f[0] {
	case "keyread": // keyctl(KEYCTL_READ, id): the payload
		buf := make([]byte, 256)
		m, err := unix.KeyctlBuffer(unix.KEYCTL_READ, int(num(arg(1))), buf, 0)
		if err != nil {
			return result(err)
		}
		return "ok " + string(buf[:min(m, len(buf))])
	case "addkey": // add_key to the user keyring
		_, err := unix.AddKey("user", arg(1), []byte("planted"), unix.KEY_SPEC_USER_KEYRING)
		return result(err)
	case "requestkey":
		_, err := unix.RequestKey("user", arg(1), "", unix.KEY_SPEC_USER_KEYRING)
		return result(err)
	case "perf": // a software clock on itself, user space only
		attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_TASK_CLOCK,
			Bits: unix.PerfBitDisabled | unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv}
		attr.Size = uint32(unsafe.Sizeof(attr))
		fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err == nil {
			unix.Close(fd)
		}
		return result(err)
	case "bpf": // bpf(cmd, attr): BPF_MAP_CREATE (0) an array, or cmd as given
		var attr [128]byte
		fields := []uint32{unix.BPF_MAP_TYPE_ARRAY, 4, 4, 1} // type, key and value sizes, entries
		for i, v := range fields {
			*(*uint32)(unsafe.Pointer(&attr[4*i])) = v
		}
		fd, _, e := unix.Syscall(unix.SYS_BPF, n(1), uintptr(unsafe.Pointer(&attr[0])), uintptr(len(attr)))
		if e == 0 {
			unix.Close(int(fd))
		}
		return errnoResult(e, "")
	case "uffd": // userfaultfd(UFFD_USER_MODE_ONLY): what needs no capability
		fd, _, e := unix.Syscall(unix.SYS_USERFAULTFD, unix.O_CLOEXEC|1, 0, 0)
		if e == 0 {
			unix.Close(int(fd))
		}
		return errnoResult(e, "")
	case "prlimit": // prlimit64(pid, RLIMIT_NOFILE, {cur, max}); pid 0 reads it back
		lim := unix.Rlimit{Cur: num(arg(2)), Max: num(arg(3))}
		_, _, e = unix.RawSyscall6(unix.SYS_PRLIMIT64, n(1), unix.RLIMIT_NOFILE, uintptr(unsafe.Pointer(&lim)), 0, 0, 0)
		if e == 0 && num(arg(1)) == 0 {
			var got unix.Rlimit
			unix.Getrlimit(unix.RLIMIT_NOFILE, &got)
			return errnoResult(e, strconv.FormatUint(got.Cur, 10))
		}
	case "setpriority": // setpriority(which, who, prio)
		_, _, e = unix.RawSyscall(unix.SYS_SETPRIORITY, n(1), n(2), n(3))
	case "ioprio": // ioprio_set(which, who, ioprio)
		_, _, e = unix.RawSyscall(unix.SYS_IOPRIO_SET, n(1), n(2), n(3))
	case "affinity": // sched_setaffinity(pid, {cpu})
		var set unix.CPUSet
		set.Set(int(num(arg(2))))
		_, _, e = unix.RawSyscall(unix.SYS_SCHED_SETAFFINITY, n(1), unsafe.Sizeof(set), uintptr(unsafe.Pointer(&set)))
	case "sched": // sched_setscheduler(pid, policy, {0})
		var param [1]int32
		_, _, e = unix.RawSyscall(unix.SYS_SCHED_SETSCHEDULER, n(1), n(2), uintptr(unsafe.Pointer(&param[0])))
	case "ioctl": // ioctl(0, cmd, &'x'): TIOCSTI types 'x' into stdin's terminal
		ch := byte('x')
		_, _, e = unix.Syscall(unix.SYS_IOCTL, 0, n(1), uintptr(unsafe.Pointer(&ch)))
	case "chmod":
		_, _, e = unix.Syscall(legacy["chmod"], path(1), n(2), 0)
	case "chown": // fchownat(AT_FDCWD, path, own uid, own gid): a change to nothing, still refused
		_, _, e = unix.Syscall6(unix.SYS_FCHOWNAT, cwd, path(1), uintptr(os.Getuid()), uintptr(os.Getgid()), 0, 0)
	case "setxattr": // user.sluice = "x"
		if err := unix.Setxattr(arg(1), "user.sluice", []byte("x"), 0); err != nil {
			return result(err)
		}
	case "utimes": // utimensat(AT_FDCWD, path, now)
		if err := unix.UtimesNano(arg(1), []unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_NOW}}); err != nil {
			return result(err)
		}
	case "fchmod", "fchmodat", "fchmodat2":
		fd, err := unix.Open(arg(1), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return "open " + result(err)
		}
		defer unix.Close(fd)
		switch f[0] {
		case "fchmod":
			_, _, e = unix.Syscall(unix.SYS_FCHMOD, uintptr(fd), n(2), 0)
		case "fchmodat":
			_, _, e = unix.Syscall6(unix.SYS_FCHMODAT, cwd, path(1), n(2), 0, 0, 0)
		default:
			_, _, e = unix.Syscall6(unix.SYS_FCHMODAT2, cwd, path(1), n(2), 0, 0, 0)
		}
	case "creat", "open", "openat", "openat2":
		var fd uintptr
		switch f[0] {
		case "creat":
			fd, _, e = unix.Syscall(legacy["creat"], path(1), n(2), 0)
		case "open": // open(path, flags, mode)
			fd, _, e = unix.Syscall(legacy["open"], path(1), n(2)|unix.O_CLOEXEC, n(3))
		case "openat":
			fd, _, e = unix.Syscall6(unix.SYS_OPENAT, cwd, path(1), n(2)|unix.O_CLOEXEC, n(3), 0, 0)
		default:
			how := unix.OpenHow{Flags: uint64(num(arg(2)) | unix.O_CLOEXEC), Mode: num(arg(3))}
			fd, _, e = unix.Syscall6(unix.SYS_OPENAT2, cwd, path(1), uintptr(unsafe.Pointer(&how)), unsafe.Sizeof(how), 0, 0)
		}
		if e == 0 {
			return "ok " + fdMode(fd)
		}
	case "mkdir":
		_, _, e = unix.Syscall(legacy["mkdir"], path(1), n(2), 0)
	case "mkdirat":
		_, _, e = unix.Syscall(unix.SYS_MKDIRAT, cwd, path(1), n(2))
	case "mknod": // a regular file
		_, _, e = unix.Syscall(legacy["mknod"], path(1), unix.S_IFREG|n(2), 0)
	case "mknodat":
		_, _, e = unix.Syscall6(unix.SYS_MKNODAT, cwd, path(1), unix.S_IFREG|n(2), 0, 0, 0)
	case "socket": // socket(family, SOCK_STREAM, protocol)
		fd, _, e := unix.RawSyscall(unix.SYS_SOCKET, n(1), unix.SOCK_STREAM|unix.SOCK_CLOEXEC, n(2))
		if e == 0 {
			unix.Close(int(fd))
		}
		return errnoResult(e, "")
	case "loop": // loop:openat|ioctl:N, for BenchmarkSeccompFilter: the ns N calls took
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return result(err)
		}
		null, _ := unix.BytePtrFromString("/dev/null")
		var tio unix.Termios
		m := int(num(arg(2)))
		start := time.Now()
		for range m {
			if arg(1) == "openat" {
				r, _, _ := unix.Syscall6(unix.SYS_OPENAT, cwd, uintptr(unsafe.Pointer(null)), unix.O_RDONLY|unix.O_CLOEXEC, 0, 0, 0)
				unix.Syscall(unix.SYS_CLOSE, r, 0, 0)
			} else {
				unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TCGETS, uintptr(unsafe.Pointer(&tio)))
			}
		}
		return "ok " + strconv.FormatInt(int64(time.Since(start)), 10)
	default:
		return "unknown op"
	}
	return errnoResult(e, "")
}

// have reports whether op's system call exists on this architecture.
func have(op string) bool {
	name, _, _ := strings.Cut(op, ":")
	switch name {
	case "chmod", "creat", "open", "mkdir", "mknod":
		return legacy[name] != 0
	}
	return true
}

// existing is the ops that have their system call here.
func existing(ops []string) []string {
	var out []string
	for _, op := range ops {
		if have(op) {
			out = append(out, op)
		}
	}
	return out
}

// unfiltered is c without its seccomp filter: a control that keeps
// everything else (Landlock, no_new_privs, no capabilities).
func unfiltered(c *Confinement) *Confinement {
	allowAll := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}}
	d := *c
	d.filter = &unix.SockFprog{Len: 1, Filter: &allowAll[0]}
	return &d
}

// runEffect runs the effect helper's ops, confined by c (nil: not at
// all), with stdin (nil: none) and attr, and returns what it printed for
// each op.
func runEffect(t *testing.T, c *Confinement, stdin *os.File, attr *syscall.SysProcAttr, ops ...string) map[string]string {
	t.Helper()
	cmd := osexec.Command(os.Args[0], append([]string{"-test.run=^TestSeccompEffectHelper$", "--"}, ops...)...)
	cmd.Env = append(os.Environ(), effectEnv+"=1")
	cmd.Stdin, cmd.SysProcAttr = stdin, attr
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := Start(cmd, c, nil); err != nil {
		t.Fatalf("Start: %v", err)
	}
	waitCmd(t, cmd)
	if !cmd.ProcessState.Success() {
		t.Fatalf("helper: %v\nstdout:\n%s\nstderr:\n%s", cmd.ProcessState, out.String(), errb.String())
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if op, res, ok := strings.Cut(line, "\t"); ok {
			got[op] = res
		}
	}
	for _, op := range ops {
		if _, ok := got[op]; !ok {
			t.Fatalf("helper printed nothing for %q:\n%s\nstderr:\n%s", op, out.String(), errb.String())
		}
	}
	return got
}

// expect checks each op's result.
func expect(t *testing.T, who string, got map[string]string, want map[string]string) {
	t.Helper()
	for op, w := range want {
		if have(op) && got[op] != w {
			t.Errorf("%s: %s = %q, want %q", who, op, got[op], w)
		}
	}
}

// TestSeccompKeyrings: a key in the user keyring, readable by its uid,
// is read by the child without the filter and not with it; add_key and
// request_key are refused too (a key the confined child adds is not
// there afterwards).
func TestSeccompKeyrings(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	name := fmt.Sprintf("sluice-test-%d", os.Getpid())
	id, err := unix.AddKey("user", name, []byte("the secret"), unix.KEY_SPEC_USER_KEYRING)
	if err != nil {
		t.Skipf("no keyring here: %v", err)
	}
	unlink := func(id int) { unix.KeyctlInt(unix.KEYCTL_UNLINK, id, unix.KEY_SPEC_USER_KEYRING, 0, 0) }
	t.Cleanup(func() { unlink(id) })
	// Possessor and user (the uid) may do everything.
	if err := unix.KeyctlSetperm(id, 0x3f3f0000); err != nil {
		t.Fatal(err)
	}
	planted := func(desc string) bool {
		pid, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", desc, 0)
		if err == nil {
			unlink(pid)
		}
		return err == nil
	}
	f := newFixture(t)
	c := prepare(t, f.spec(Mutating))
	read := "keyread:" + strconv.Itoa(id)

	got := runEffect(t, unfiltered(c), nil, nil, read, "addkey:"+name+"-u", "requestkey:"+name)
	expect(t, "unfiltered", got, map[string]string{read: "ok the secret", "addkey:" + name + "-u": "ok", "requestkey:" + name: "ok"})
	if !planted(name + "-u") {
		t.Error("unfiltered: the key the child added is not in the user keyring")
	}

	got = runEffect(t, c, nil, nil, read, "addkey:"+name+"-c", "requestkey:"+name)
	expect(t, "confined", got, map[string]string{read: "err EPERM", "addkey:" + name + "-c": "err EPERM", "requestkey:" + name: "err EPERM"})
	if planted(name + "-c") {
		t.Error("confined: the child added a key to the user keyring")
	}
}

// TestSeccompPerfBPFUserfaultfd: perf_event_open on itself and a
// user-mode userfaultfd succeed without the filter and capabilities, and
// are refused with it. bpf needs a capability for anything here
// (unprivileged_bpf_disabled), so its controls are: an unconfined child
// creates a map, and an unfiltered one reaches the kernel (EINVAL for an
// unknown command), where the filter answers EPERM before it.
func TestSeccompPerfBPFUserfaultfd(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	f := newFixture(t)
	c := prepare(t, f.spec(Mutating))
	const mapCreate, badCmd = "bpf:0", "bpf:0xffff"

	got := runEffect(t, unfiltered(c), nil, nil, "perf", "uffd", badCmd)
	expect(t, "unfiltered", got, map[string]string{"perf": "ok", "uffd": "ok", badCmd: "err EINVAL"})
	if os.Geteuid() == 0 {
		got = runEffect(t, nil, nil, nil, mapCreate)
		expect(t, "unconfined", got, map[string]string{mapCreate: "ok"})
	}

	got = runEffect(t, c, nil, nil, "perf", "uffd", badCmd, mapCreate)
	expect(t, "confined", got, map[string]string{"perf": "err EPERM", "uffd": "err EPERM", badCmd: "err EPERM", mapCreate: "err EPERM"})
}

// victim is a process outside the child's sandbox, sharing the test's
// uid, whose limits, priority, I/O priority and affinity a child tries to
// change. It runs without capabilities, as an engine run by a user does
// (started with c unfiltered): the kernel keeps a process from changing
// the priority or affinity of one with capabilities it lacks
// (cap_safe_nice), which shields an engine run as root from a confined
// child, but not a user's.
type victim struct {
	cmd *osexec.Cmd
	pid int
}

func newVictim(t *testing.T, c *Confinement) *victim {
	t.Helper()
	cmd := osexec.Command(os.Args[0], "-test.run=^TestSeccompEffectHelper$", "--")
	cmd.Env = append(os.Environ(), effectEnv+"=1", "SLUICE_SECCOMP_VICTIM=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := Start(cmd, unfiltered(c), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		waitCmd(t, cmd)
	})
	return &victim{cmd: cmd, pid: cmd.Process.Pid}
}

// state is what the children try to change, as text.
func (v *victim) state(t *testing.T) string {
	t.Helper()
	var lim unix.Rlimit
	if err := unix.Prlimit(v.pid, unix.RLIMIT_NOFILE, nil, &lim); err != nil {
		t.Fatal(err)
	}
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, v.pid)
	if err != nil {
		t.Fatal(err)
	}
	io, _, e := unix.RawSyscall(unix.SYS_IOPRIO_GET, 1, uintptr(v.pid), 0)
	if e != 0 {
		t.Fatal(e)
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(v.pid, &set); err != nil {
		t.Fatal(err)
	}
	policy, _, e := unix.RawSyscall(unix.SYS_SCHED_GETSCHEDULER, uintptr(v.pid), 0, 0)
	if e != 0 {
		t.Fatal(e)
	}
	return fmt.Sprintf("nofile=%d:%d prio=%d ioprio=%#x policy=%d cpus=%d", lim.Cur, lim.Max, prio, io, policy, set.Count())
}

// TestSeccompOthersLimits: a child changes the resource limits,
// priority, I/O priority, scheduling policy and CPU affinity of a process
// outside the sandbox without the filter, and of none but itself with it
// (pid or who 0, PRIO_PROCESS, IOPRIO_WHO_PROCESS), where bash's ulimit,
// nice, ionice, taskset and chrt keep working.
func TestSeccompOthersLimits(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	f := newFixture(t)
	c := prepare(t, f.spec(Mutating))
	v := newVictim(t, c)
	var lim unix.Rlimit
	if err := unix.Prlimit(v.pid, unix.RLIMIT_NOFILE, nil, &lim); err != nil {
		t.Fatal(err)
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(v.pid, &set); err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(v.pid)
	idle := strconv.Itoa(3 << 13) // IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0)
	ops := []string{
		fmt.Sprintf("prlimit:%s:%d:%d", pid, lim.Cur-1, lim.Max),
		"setpriority:0:" + pid + ":5",
		"ioprio:1:" + pid + ":" + idle,
		"sched:" + pid + ":5", // SCHED_IDLE
	}
	if set.Count() > 1 {
		ops = append(ops, "affinity:"+pid+":0")
	} else {
		t.Log("one CPU: affinity not tried")
	}
	// The process group's and the uid's: the child gets a group of its own
	// (the unfiltered control would renice the test otherwise).
	own := []string{"setpriority:1:0:6", "ioprio:2:0:" + idle}
	attr := &syscall.SysProcAttr{Setpgid: true}
	before := v.state(t)

	got := runEffect(t, c, nil, attr, append(ops, own...)...)
	for _, op := range append(ops, own...) {
		if got[op] != "err EPERM" {
			t.Errorf("confined: %s = %q, want err EPERM", op, got[op])
		}
	}
	if after := v.state(t); after != before {
		t.Errorf("confined: the victim changed: %s -> %s", before, after)
	}
	// What tools pass: the caller's own.
	self := []string{"prlimit:0:100:" + strconv.FormatUint(lim.Max, 10), "setpriority:0:0:3", "ioprio:1:0:" + idle, "affinity:0:0", "sched:0:5"}
	got = runEffect(t, c, nil, attr, self...)
	expect(t, "confined", got, map[string]string{self[0]: "ok 100", self[1]: "ok", self[2]: "ok", self[3]: "ok", self[4]: "ok"})
	for _, line := range [][]string{
		{"bash", "-c", "ulimit -n 100 && test $(ulimit -n) = 100"},
		{"nice", "-n", "5", "true"},
		{"ionice", "-c3", "true"},
		{"taskset", "-c", "0", "true"},
		{"chrt", "-i", "0", "true"},
		{"prlimit", "--nofile=50:50", "true"},
	} {
		if _, err := osexec.LookPath(line[0]); err != nil {
			t.Logf("no %s here", line[0])
			continue
		}
		if out, err := confinedRun(t, c, line...); err != nil {
			t.Errorf("confined %q: %v\n%s", line, err, out)
		}
	}
	if _, err := osexec.LookPath("prlimit"); err == nil {
		if out, err := confinedRun(t, c, "prlimit", "--pid", pid, "--nofile=12:12"); err == nil {
			t.Errorf("confined prlimit --pid %s succeeded:\n%s", pid, out)
		}
	}
	if after := v.state(t); after != before {
		t.Errorf("confined: the victim changed: %s -> %s", before, after)
	}

	got = runEffect(t, unfiltered(c), nil, attr, append(ops, own...)...)
	for _, op := range append(ops, own...) {
		if got[op] != "ok" {
			t.Errorf("unfiltered: %s = %q, want ok", op, got[op])
		}
	}
	after := v.state(t)
	want := fmt.Sprintf("nofile=%d:%d prio=%d ioprio=%#x policy=5", lim.Cur-1, lim.Max, 20-5, 3<<13)
	if !strings.HasPrefix(after, want+" ") {
		t.Errorf("unfiltered: the victim is %s, want %s", after, want)
	}
	if set.Count() > 1 && !strings.HasSuffix(after, " cpus=1") {
		t.Errorf("unfiltered: the victim's affinity did not change: %s", after)
	}
}

// confinedRun runs a program confined by c and returns its output.
func confinedRun(t *testing.T, c *Confinement, line ...string) (string, error) {
	t.Helper()
	return confinedRunStdin(t, c, nil, line...)
}

// TestSeccompTerminalInjection: a child whose stdin is a terminal (its
// controlling one) types into it with TIOCSTI without the filter, and
// with it types nothing (the terminal's input queue, what the shell that
// owns it would read, stays empty), whatever the command's upper 32 bits.
// TIOCLINUX works on virtual consoles only; on the pty the control shows
// it reaching the kernel (which refuses it otherwise than EPERM).
func TestSeccompTerminalInjection(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	// Raw: no line discipline holding bytes back for a line, no echo.
	tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Lflag &^= unix.ICANON | unix.ECHO
	if err := unix.IoctlSetTermios(int(tty.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
	queued := func() int {
		t.Helper()
		n, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCINQ)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.IoctlSetInt(int(tty.Fd()), unix.TCFLSH, unix.TCIFLUSH); err != nil {
			t.Fatal(err)
		}
		return n
	}
	f := newFixture(t)
	c := prepare(t, f.spec(Mutating))
	sti, stiHigh := "ioctl:0x5412", "ioctl:0xffffffff00005412"
	linux, linuxHigh := "ioctl:0x541c", "ioctl:0xffffffff0000541c"
	ops := []string{sti, stiHigh, linux, linuxHigh}
	attr := func() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0} }

	queued()
	got := runEffect(t, unfiltered(c), tty, attr(), ops...)
	expect(t, "unfiltered", got, map[string]string{sti: "ok", stiHigh: "ok"})
	for _, op := range []string{linux, linuxHigh} {
		if got[op] == "err EPERM" || got[op] == "ok" {
			t.Errorf("unfiltered: %s = %q, want the kernel's refusal for a pty", op, got[op])
		}
	}
	if n := queued(); n != 2 {
		t.Errorf("unfiltered: %d bytes typed into the terminal, want 2", n)
	}

	got = runEffect(t, c, tty, attr(), ops...)
	for _, op := range ops {
		if got[op] != "err EPERM" {
			t.Errorf("confined: %s = %q, want err EPERM", op, got[op])
		}
	}
	if n := queued(); n != 0 {
		t.Errorf("confined: %d bytes typed into the terminal", n)
	}
	// Other ioctls on the terminal still work.
	if out, err := confinedRunStdin(t, c, tty, "stty", "size"); err != nil {
		t.Errorf("confined stty size: %v\n%s", err, out)
	}
}

// confinedRunStdin is confinedRun with stdin.
func confinedRunStdin(t *testing.T, c *Confinement, stdin io.Reader, line ...string) (string, error) {
	t.Helper()
	if _, err := osexec.LookPath(line[0]); err != nil {
		t.Logf("no %s here", line[0])
		return "", nil
	}
	cmd := osexec.Command(line[0], line[1:]...)
	cmd.Stdin = stdin
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := Start(cmd, c, nil); err != nil {
		return "", err
	}
	waitCmd(t, cmd)
	if !cmd.ProcessState.Success() {
		return out.String(), fmt.Errorf("%v", cmd.ProcessState)
	}
	return out.String(), nil
}

// TestSeccompSetuidModes: a confined child never sets S_ISUID or S_ISGID:
// not with chmod and its kin on a file outside the writable set
// (Landlock does not govern modes: the unfiltered child does it), nor on
// one inside, nor by creating a file with such a mode. Plain modes still
// work, and an open that creates nothing passes whatever its mode
// argument. openat2 is ENOSYS.
func TestSeccompSetuidModes(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	f := newFixture(t)
	c := prepare(t, f.spec(Mutating))
	outside, inside := f.p("outside/existing"), f.p("project/existing")
	modeOf := func(p string) os.FileMode {
		t.Helper()
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode()
	}
	const (
		creatFlags = "0x41"     // O_CREAT|O_WRONLY
		tmpFlags   = "0x410001" // O_TMPFILE|O_WRONLY
	)
	// The ops on paths prefixed with who ran them.
	ops := func(who string) []string {
		p := func(rel string) string { return f.p("project/" + who + rel) }
		return existing([]string{
			"chmod:" + outside + ":0o4755",
			"fchmod:" + outside + ":0o2755",
			"fchmodat:" + inside + ":0o6755",
			"fchmodat2:" + inside + ":0o4755",
			"creat:" + p("creat") + ":0o4755",
			"open:" + p("open") + ":" + creatFlags + ":0o4755",
			"openat:" + p("openat") + ":" + creatFlags + ":0o4755",
			"openat:" + f.p("project/sub") + ":" + tmpFlags + ":0o4755",
			"mknod:" + p("mknod") + ":0o4755",
			"mknodat:" + p("mknodat") + ":0o4755",
			"mkdir:" + p("mkdir") + ":0o4755",
			"mkdirat:" + p("mkdirat") + ":0o2755",
		})
	}

	got := runEffect(t, c, nil, nil, ops("c-")...)
	for _, op := range ops("c-") {
		if got[op] != "err EPERM" {
			t.Errorf("confined: %s = %q, want err EPERM", op, got[op])
		}
	}
	for _, p := range []string{outside, inside} {
		if m := modeOf(p); m != 0o600 {
			t.Errorf("confined: %s is %v, want -rw-------", p, m)
		}
	}
	for _, rel := range existing([]string{"creat", "open", "openat", "mknod", "mknodat", "mkdir", "mkdirat"}) {
		if _, err := os.Lstat(f.p("project/c-" + rel)); err == nil {
			t.Errorf("confined: project/c-%s was made", rel)
		}
	}
	// What stays allowed: plain modes, opens that create nothing.
	plain := f.p("project/plain")
	allowed := []string{
		"fchmodat:" + inside + ":0o755",
		"creat:" + plain + ":0o755",
		"openat:" + inside + ":0:0o4755",
		"open:" + inside + ":0:0o6755",
		"mkdirat:" + f.p("project/c-dir") + ":0o755",
		"openat:" + f.p("project/sub") + ":" + tmpFlags + ":0o644",
		"openat2:" + inside + ":0:0",
	}
	got = runEffect(t, c, nil, nil, existing(allowed)...)
	expect(t, "confined", got, map[string]string{
		allowed[0]: "ok", allowed[1]: "ok mode=755", allowed[2]: "ok mode=755", allowed[3]: "ok mode=755",
		allowed[4]: "ok", allowed[5]: "ok mode=644", allowed[6]: "err ENOSYS",
	})
	if m := modeOf(inside); m != 0o755 {
		t.Errorf("confined: fchmodat 755 left %v", m)
	}
	if err := os.Chmod(inside, 0o600); err != nil {
		t.Fatal(err)
	}

	got = runEffect(t, unfiltered(c), nil, nil, append(ops("u-"), "openat2:"+inside+":0:0")...)
	for _, op := range ops("u-") {
		name, _, _ := strings.Cut(op, ":")
		switch {
		case name == "fchmodat2" && got[op] == "err ENOSYS":
			t.Log("no fchmodat2 in this kernel")
		case name == "open", name == "openat", name == "creat":
			if got[op] != "ok mode=4755" {
				t.Errorf("unfiltered: %s = %q, want ok mode=4755", op, got[op])
			}
		default:
			if got[op] != "ok" {
				t.Errorf("unfiltered: %s = %q, want ok", op, got[op])
			}
		}
	}
	if r := got["openat2:"+inside+":0:0"]; !strings.HasPrefix(r, "ok ") {
		t.Errorf("unfiltered: openat2 = %q, want ok", r)
	}
	// The kernel takes the set-id bits from chmod and from the creating
	// calls but mkdir's (a directory's S_ISGID comes from its parent).
	if m := modeOf(outside); m&os.ModeSetgid == 0 { // fchmod 2755 came last
		t.Errorf("unfiltered: %s is %v, want setgid", outside, m)
	}
	if m := modeOf(inside); m&os.ModeSetuid == 0 {
		t.Errorf("unfiltered: %s is %v, want setuid", inside, m)
	}
	for _, rel := range existing([]string{"creat", "open", "openat", "mknod", "mknodat"}) {
		if m := modeOf(f.p("project/u-" + rel)); m&os.ModeSetuid == 0 {
			t.Errorf("unfiltered: project/u-%s is %v, want setuid", rel, m)
		}
	}
}

// TestSeccompMPTCP: a networked child opens an MPTCP socket without the
// filter and not with it (EACCES, as for the other refused sockets),
// whatever the protocol's upper 32 bits; plain TCP stays.
func TestSeccompMPTCP(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	f := newFixture(t)
	c := prepare(t, f.spec(Networked))
	mptcp, mptcp6, high := "socket:2:262", "socket:10:262", "socket:2:0xffffffff00000106"
	tcp, tcp6 := "socket:2:0", "socket:10:0"
	ops := []string{mptcp, mptcp6, high, tcp, tcp6}

	got := runEffect(t, unfiltered(c), nil, nil, ops...)
	if got[mptcp] != "ok" {
		t.Skipf("no MPTCP here: %s", got[mptcp])
	}
	expect(t, "unfiltered", got, map[string]string{high: "ok", tcp: "ok"})

	got = runEffect(t, c, nil, nil, ops...)
	expect(t, "confined", got, map[string]string{mptcp: "err EACCES", mptcp6: "err EACCES", high: "err EACCES", tcp: "ok"})
	if got[tcp6] != "ok" && got[tcp6] != "err EAFNOSUPPORT" {
		t.Errorf("confined: %s = %q, want ok", tcp6, got[tcp6])
	}

	// Without network, no socket of any protocol.
	c = prepare(t, f.spec(Mutating))
	got = runEffect(t, c, nil, nil, ops...)
	for _, op := range ops {
		if got[op] != "err EACCES" {
			t.Errorf("mutating: %s = %q, want err EACCES", op, got[op])
		}
	}
}

// BenchmarkSeccompFilter: what the filter costs the syscalls it looks
// into on every call (the others it allows on their number, which the
// kernel caches): openat+close of /dev/null and ioctl(TCGETS) on it, in a
// child confined (mutating) or not; the child times its own loop of b.N
// calls, so ns/op leaves its start out.
func BenchmarkSeccompFilter(b *testing.B) {
	if _, err := Available(); err != nil {
		b.Skip(err)
	}
	base, err := os.MkdirTemp("", "sluice-bench-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(base)
	c, err := Prepare(Spec{Profile: Mutating, Roots: []string{base}, TmpDir: base})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for _, call := range []string{"openat", "ioctl"} {
		for _, conf := range []struct {
			name string
			c    *Confinement
		}{{"unconfined", nil}, {"unfiltered", unfiltered(c)}, {"confined", c}} {
			b.Run(call+"/"+conf.name, func(b *testing.B) {
				op := fmt.Sprintf("loop:%s:%d", call, b.N)
				cmd := osexec.Command(os.Args[0], "-test.run=^TestSeccompEffectHelper$", "--", op)
				cmd.Env = append(os.Environ(), effectEnv+"=1")
				out, err := startOutput(cmd, conf.c)
				if err != nil {
					b.Fatal(err)
				}
				_, res, _ := strings.Cut(strings.TrimSpace(out), "\t")
				ns, err := strconv.ParseInt(strings.TrimPrefix(res, "ok "), 10, 64)
				if err != nil {
					b.Fatalf("helper: %q", out)
				}
				b.ReportMetric(float64(ns)/float64(b.N), "ns/op")
			})
		}
	}
}

// startOutput starts cmd confined by c and returns its standard output.
func startOutput(cmd *osexec.Cmd, c *Confinement) (string, error) {
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := Start(cmd, c, nil); err != nil {
		return "", err
	}
	err := cmd.Wait()
	return out.String(), err
}

// TestSeccompReadOnlyModes: a read_only run changes no file's mode, owner
// or extended attributes, by path or by descriptor, inside or outside
// the places Landlock lets it write (Landlock governs none of these:
// without the filter, each takes effect on a file the run may not write);
// timestamps stay changeable (the Go build cache marks its entries used
// with them). A mutating run still changes modes in its project.
func TestSeccompReadOnlyModes(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	f := newFixture(t)
	outside, inside, tmp := f.p("outside/existing"), f.p("project/existing"), f.p("tmp/mine")
	for _, p := range []string{outside, inside, tmp} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ops := []string{"chmod:" + outside + ":0o644", "fchmod:" + inside + ":0o644", "fchmodat:" + tmp + ":0o644",
		"chown:" + outside, "setxattr:" + outside, "utimes:" + outside}
	c := prepare(t, f.spec(ReadOnly))
	// The control: the same confinement without the filter changes them.
	got := runEffect(t, unfiltered(c), nil, nil, ops...)
	if got["chmod:"+outside+":0o644"] != "ok" || got["chown:"+outside] != "ok" {
		t.Fatalf("without the filter, mode and owner changes outside the writable set should take effect: %v", got)
	}
	for _, p := range []string{outside, inside, tmp} {
		if err := os.Chmod(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	xattr := got["setxattr:"+outside] == "ok" // tmpfs without user xattrs says EOPNOTSUPP
	got = runEffect(t, c, nil, nil, ops...)
	want := map[string]string{"chmod:" + outside + ":0o644": "err EPERM", "fchmod:" + inside + ":0o644": "err EPERM",
		"fchmodat:" + tmp + ":0o644": "err EPERM", "chown:" + outside: "err EPERM", "utimes:" + outside: "ok"}
	if xattr {
		want["setxattr:"+outside] = "err EPERM"
	}
	expect(t, "read_only", got, want)
	for _, p := range []string{outside, inside, tmp} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600 kept", p, fi.Mode(), err)
		}
	}
	got = runEffect(t, prepare(t, f.spec(Mutating)), nil, nil, "fchmodat:"+inside+":0o644")
	expect(t, "mutating", got, map[string]string{"fchmodat:" + inside + ":0o644": "ok"})
}
