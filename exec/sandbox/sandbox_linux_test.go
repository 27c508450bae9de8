//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The tests here confine real children with the running kernel. The child
// is this test binary run again (os/exec's TestHelperProcess pattern): it
// does one system call per operation named on its command line and prints
// what came of it, so nothing depends on tools outside.

// helperEnv makes the test binary act as the helper.
const helperEnv = "SLUICE_SANDBOX_TEST_HELPER"

// hangGuard bounds waits that only a bug makes long.
const hangGuard = 60 * time.Second

// TestHelperProcess is not a test: run as a child with helperEnv set, it
// performs the operations after "--" and prints one line each:
// "op<TAB>ok", "op<TAB>err ENAME" or, for status, "op<TAB>fields".
func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		return
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
		fmt.Fprintf(w, "%s\t%s\n", op, helperOp(op))
	}
	w.Flush()
	os.Exit(0)
}

// helperOp performs op, "name:arg:arg".
func helperOp(op string) string {
	f := strings.Split(op, ":")
	arg := func(i int) string {
		if i < len(f) {
			return f[i]
		}
		return ""
	}
	var err error
	switch f[0] {
	case "create": // open for write, creating
		var fd int
		fd, err = unix.Open(arg(1), unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
		if err == nil {
			_, err = unix.Write(fd, []byte("x"))
			unix.Close(fd)
		}
	case "write": // open an existing file for write
		var fd int
		fd, err = unix.Open(arg(1), unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			_, err = unix.Write(fd, []byte("x"))
			unix.Close(fd)
		}
	case "read":
		_, err = os.ReadFile(arg(1))
	case "readdir":
		_, err = os.ReadDir(arg(1))
	case "mkdir":
		err = unix.Mkdir(arg(1), 0o755)
	case "unlink":
		err = unix.Unlink(arg(1))
	case "rename":
		err = unix.Rename(arg(1), arg(2))
	case "truncate":
		err = unix.Truncate(arg(1), 0)
	case "chmod":
		err = unix.Chmod(arg(1), 0o600)
	case "utimes":
		err = unix.Utimes(arg(1), []unix.Timeval{{Sec: 1}, {Sec: 1}})
	case "symlink":
		err = unix.Symlink(arg(1), arg(2))
	case "link":
		err = unix.Link(arg(1), arg(2))
	case "mkfifo":
		err = unix.Mkfifo(arg(1), 0o644)
	case "mknodchr": // /dev/null's numbers
		err = unix.Mknod(arg(1), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3)))
	case "exec":
		err = unix.Access(arg(1), unix.X_OK)
		if err == nil {
			cmd := osexec.Command(arg(1))
			err = cmd.Run()
		}
	case "socket":
		fam := map[string]int{"inet": unix.AF_INET, "inet6": unix.AF_INET6, "unix": unix.AF_UNIX, "netlink": unix.AF_NETLINK}[arg(1)]
		var fd int
		fd, err = unix.Socket(fam, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if fam == unix.AF_NETLINK {
			fd, err = unix.Socket(fam, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
		}
		if err == nil {
			unix.Close(fd)
		}
	case "socketpair":
		var fds [2]int
		fds, err = unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			unix.Close(fds[0])
			unix.Close(fds[1])
		}
	case "connectunix":
		var fd int
		fd, err = unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			err = unix.Connect(fd, &unix.SockaddrUnix{Name: arg(1)})
			unix.Close(fd)
		}
	case "connecttcp":
		var fd int
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			port, _ := strconv.Atoi(arg(1))
			err = unix.Connect(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}})
			unix.Close(fd)
		}
	case "bindtcp":
		var fd int
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			err = unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}})
			unix.Close(fd)
		}
	case "iouring":
		var params [120]byte
		_, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
		if e != 0 {
			err = e
		}
	case "environ":
		_, err = os.ReadFile("/proc/" + arg(1) + "/environ")
	case "kill":
		pid, _ := strconv.Atoi(arg(1))
		err = unix.Kill(pid, 0)
	case "readfile": // the content, quoted
		var b []byte
		if b, err = os.ReadFile(arg(1)); err == nil {
			return "ok " + strconv.Quote(string(b))
		}
	case "ipcns": // the IPC namespace's inode
		var st unix.Stat_t
		if err = unix.Stat("/proc/self/ns/ipc", &st); err == nil {
			return "ok " + strconv.FormatUint(st.Ino, 10)
		}
	case "status":
		return statusFields("/proc/self/status", "CapEff", "CapPrm", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp", "Seccomp_filters")
	default:
		if r, ok := netOp(f); ok {
			return r
		}
		return "unknown op"
	}
	return result(err)
}

func result(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return "err " + unix.ErrnoName(errno)
	}
	var ee *osexec.ExitError
	if errors.As(err, &ee) {
		return "err exit " + strconv.Itoa(ee.ExitCode())
	}
	return "err " + err.Error()
}

// statusFields reads the named fields of a /proc status file as
// "Name=value" words.
func statusFields(path string, names ...string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return result(err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	var out []string
	for _, n := range names {
		out = append(out, n+"="+m[n])
	}
	return strings.Join(out, " ")
}

// requireSandbox skips the test where the kernel cannot confine.
func requireSandbox(t *testing.T) {
	t.Helper()
	if how, err := Available(); err != nil {
		t.Skipf("no confinement on this machine: %v", err)
	} else {
		t.Logf("confining with %s", how)
	}
}

// helperCmd is the command that runs ops in the helper.
func helperCmd(ops ...string) *osexec.Cmd {
	cmd := osexec.Command(os.Args[0], append([]string{"-test.run=^TestHelperProcess$", "--"}, ops...)...)
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	return cmd
}

// runHelper starts the helper confined by c (and in g) and returns what
// it printed for each op.
func runHelper(t *testing.T, c *Confinement, g *Cgroup, ops ...string) map[string]string {
	t.Helper()
	cmd := helperCmd(ops...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := Start(cmd, c, g); err != nil {
		t.Fatalf("Start: %v", err)
	}
	waitCmd(t, cmd)
	if !cmd.ProcessState.Success() {
		t.Fatalf("helper: %v\nstdout:\n%s\nstderr:\n%s", cmd.ProcessState, out.String(), errb.String())
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		op, res, ok := strings.Cut(line, "\t")
		if ok {
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

// waitCmd waits for cmd, failing the test (and killing it) past hangGuard.
func waitCmd(t *testing.T, cmd *osexec.Cmd) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(hangGuard):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%s did not exit within %s", cmd.Path, hangGuard)
	}
}

func prepare(t *testing.T, s Spec) *Confinement {
	t.Helper()
	c, err := Prepare(s)
	if err != nil {
		t.Fatalf("Prepare(%+v): %v", s, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// fixture is a directory tree for one confined child: a project (the
// jail), a place outside it, a cache, a temporary directory, and a home
// with a hidden ~/.ssh.
type fixture struct {
	base, project, outside, cache, tmp, home, ssh string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{
		base:    base,
		project: filepath.Join(base, "project"),
		outside: filepath.Join(base, "outside"),
		cache:   filepath.Join(base, "cache"),
		tmp:     filepath.Join(base, "tmp"),
		home:    filepath.Join(base, "home"),
		ssh:     filepath.Join(base, "home", ".ssh"),
	}
	for _, d := range []string{f.project, f.outside, f.cache, f.tmp, f.ssh, filepath.Join(f.project, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"project/existing", "project/trunc", "project/gone", "project/moved", "outside/existing", "outside/trunc", "outside/gone",
		"cache/existing", "home/.bashrc", "home/.ssh/id_rsa"} {
		if err := os.WriteFile(filepath.Join(base, p), []byte("content\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f *fixture) spec(p Profile) Spec {
	return Spec{Profile: p, Roots: []string{f.project}, Writable: []string{f.cache}, Hidden: []string{f.ssh}, TmpDir: f.tmp}
}

func (f *fixture) p(rel string) string { return filepath.Join(f.base, rel) }

// TestConfinedChild checks, for each profile, what a confined child can
// and cannot do, system call by system call.
func TestConfinedChild(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	pid := strconv.Itoa(os.Getpid())
	ipv6, ipv6err := net.Listen("tcp6", "[::1]:0")
	if ipv6err == nil {
		ipv6.Close()
	}
	for _, p := range Profiles() {
		t.Run(string(p), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			c := prepare(t, f.spec(p))

			unixPath := f.p("listener.sock")
			ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: unixPath, Net: "unix"})
			if err != nil {
				t.Fatal(err)
			}
			defer ul.Close()
			tl, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				t.Fatal(err)
			}
			defer tl.Close()
			port := strconv.Itoa(tl.Addr().(*net.TCPAddr).Port)

			writes := p.Writes()
			rootOK := map[bool]string{true: "ok", false: "err EACCES"}[writes]
			netOK := map[bool]string{true: "ok", false: "err EACCES"}[p.Network()]
			want := []struct{ op, want string }{
				// Writing outside the roots, in every profile.
				{"create:" + f.p("outside/new"), "err EACCES"},
				{"write:" + f.p("outside/existing"), "err EACCES"},
				{"truncate:" + f.p("outside/trunc"), "err EACCES"},
				{"mkdir:" + f.p("outside/dir"), "err EACCES"},
				{"unlink:" + f.p("outside/gone"), "err EACCES"},
				{"symlink:/etc/passwd:" + f.p("outside/link"), "err EACCES"},
				{"link:" + f.p("outside/existing") + ":" + f.p("outside/hardlink"), "err EACCES"},
				{"mkfifo:" + f.p("outside/fifo"), "err EACCES"},
				// Inside the roots: only the writing profiles.
				{"create:" + f.p("project/new"), rootOK},
				{"create:" + f.p("project/sub/new"), rootOK},
				{"write:" + f.p("project/existing"), rootOK},
				{"truncate:" + f.p("project/trunc"), rootOK},
				{"mkdir:" + f.p("project/dir"), rootOK},
				{"unlink:" + f.p("project/gone"), rootOK},
				{"rename:" + f.p("project/moved") + ":" + f.p("project/sub/moved"), rootOK},
				{"symlink:/etc/passwd:" + f.p("project/link"), rootOK},
				{"mkfifo:" + f.p("project/fifo"), rootOK},
				// Out of the roots by a hard link or a rename: never.
				{"link:" + f.p("outside/existing") + ":" + f.p("project/hardlink"), map[bool]string{true: "err EXDEV", false: "err EACCES"}[writes]},
				// Device nodes: never, not even in the roots.
				{"mknodchr:" + f.p("project/null"), "err EACCES"},
				// The temporary directory and the caches: every profile.
				{"create:" + f.p("tmp/new"), "ok"},
				{"mkdir:" + f.p("tmp/dir"), "ok"},
				{"create:" + f.p("cache/new"), "ok"},
				{"write:" + f.p("cache/existing"), "ok"},
				{"write:/dev/null", "ok"},
				{"read:/dev/null", "ok"},
				// Reads: everything but the hidden paths.
				{"read:" + f.p("home/.bashrc"), "ok"},
				{"read:" + f.p("outside/existing"), "ok"},
				{"read:/etc/passwd", "ok"},
				{"read:" + f.p("home/.ssh/id_rsa"), "err EACCES"},
				{"write:" + f.p("home/.ssh/id_rsa"), "err EACCES"},
				{"create:" + f.p("home/.ssh/new"), "err EACCES"},
				{"exec:/bin/true", "ok"},
				// Sockets: inet only networked, no other family at all.
				{"socket:inet", netOK},
				{"socket:unix", "err EACCES"},
				{"socket:netlink", "err EACCES"},
				{"socketpair", "ok"},
				{"connectunix:" + unixPath, "err EACCES"},
				{"connecttcp:" + port, netOK},
				{"bindtcp", netOK},
				{"iouring", "err EACCES"},
				// The test process is out of reach.
				{"environ:" + pid, "err EACCES"},
				{"kill:" + pid, "err EPERM"},
			}
			if ipv6err == nil {
				want = append(want, struct{ op, want string }{"socket:inet6", netOK})
			}
			ops := []string{"status"}
			for _, w := range want {
				ops = append(ops, w.op)
			}
			got := runHelper(t, c, nil, ops...)
			for _, w := range want {
				if got[w.op] != w.want {
					t.Errorf("%s: %s, want %s", w.op, got[w.op], w.want)
				}
			}
			// Landlock's limits, logged so that a change shows: a hidden
			// directory's names may be listed (Plan's documented limit),
			// and a file's mode and times are not file system rights
			// Landlock handles.
			limits := runHelper(t, c, nil, "readdir:"+f.ssh, "chmod:"+f.p("outside/existing"), "utimes:"+f.p("outside/existing"))
			t.Logf("not confined by Landlock: %v", limits)

			st := got["status"]
			for _, w := range []string{"NoNewPrivs=1", "Seccomp=2"} {
				if !strings.Contains(st, w) {
					t.Errorf("child status %q lacks %s", st, w)
				}
			}
			if os.Geteuid() == 0 {
				// The child is root after an exec, which would give it its
				// bounding set (left whole) but for the locked NOROOT
				// securebit: nothing permitted, nothing effective.
				for _, w := range []string{"CapEff=0000000000000000", "CapPrm=0000000000000000", "CapAmb=0000000000000000"} {
					if !strings.Contains(st, w) {
						t.Errorf("child of root: status %q lacks %s", st, w)
					}
				}
			}
			// The files the refused operations named do not exist.
			for _, rel := range []string{"outside/new", "outside/dir", "outside/link", "outside/hardlink", "outside/fifo", "project/null", "home/.ssh/new"} {
				if _, err := os.Lstat(f.p(rel)); err == nil {
					t.Errorf("%s exists after a refused operation", rel)
				}
			}
			if b, _ := os.ReadFile(f.p("outside/trunc")); len(b) == 0 {
				t.Errorf("outside/trunc was truncated")
			}

			// The child has exited: a connection it made would be queued
			// by now. The unix listener never gets one; the TCP listener
			// only from a networked child.
			_ = ul.SetDeadline(time.Now())
			if conn, err := ul.Accept(); err == nil {
				conn.Close()
				t.Errorf("the unix listener accepted a connection from a %s child", p)
			} else if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("unix accept: %v", err)
			}
			if p.Network() {
				_ = tl.SetDeadline(time.Now().Add(hangGuard))
			} else {
				_ = tl.SetDeadline(time.Now())
			}
			conn, err := tl.Accept()
			switch {
			case err == nil:
				conn.Close()
				if !p.Network() {
					t.Errorf("the TCP listener accepted a connection from a %s child", p)
				}
			case p.Network():
				t.Errorf("no TCP connection from a networked child: %v", err)
			case !errors.Is(err, os.ErrDeadlineExceeded):
				t.Errorf("tcp accept: %v", err)
			}
		})
	}
}

// TestHiddenInsideRoot: a secret inside the jail is neither read nor
// written; its directory's files are changed but nothing is created
// there (Landlock would create inside the secret too); deeper directories
// are the jail as usual.
func TestHiddenInsideRoot(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	f := newFixture(t)
	env := f.p("project/.env")
	if err := os.WriteFile(env, []byte("TOKEN=x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := f.spec(Mutating)
	s.Hidden = append(s.Hidden, env)
	c := prepare(t, s)
	want := map[string]string{
		"read:" + env:     "err EACCES",
		"write:" + env:    "err EACCES",
		"truncate:" + env: "err EACCES",
		"unlink:" + env:   "err EACCES",
		"rename:" + env + ":" + f.p("project/sub/x"): "err EACCES",
		"write:" + f.p("project/existing"):           "ok",
		"create:" + f.p("project/new"):               "err EACCES",
		"create:" + f.p("project/sub/new"):           "ok",
		"read:" + f.p("project/existing"):            "ok",
	}
	var ops []string
	for op := range want {
		ops = append(ops, op)
	}
	got := runHelper(t, c, nil, ops...)
	for op, w := range want {
		if got[op] != w {
			t.Errorf("%s: %s, want %s", op, got[op], w)
		}
	}
	if b, err := os.ReadFile(env); err != nil || string(b) != "TOKEN=x\n" {
		t.Errorf("hidden file changed: %q %v", b, err)
	}
}

// TestRootSymlinkedSpelling: roots and secrets named through symlinks are
// confined as the objects they name.
func TestRootSymlinkedSpelling(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	f := newFixture(t)
	for link, target := range map[string]string{"project-link": "project", "home/ssh-link": ".ssh"} {
		if err := os.Symlink(target, f.p(link)); err != nil {
			t.Fatal(err)
		}
	}
	s := f.spec(Mutating)
	s.Roots = []string{f.p("project-link")}
	s.Hidden = []string{f.p("home/ssh-link")}
	c := prepare(t, s)
	want := map[string]string{
		"create:" + f.p("project/new"):        "ok",
		"create:" + f.p("project-link/new2"):  "ok",
		"read:" + f.p("home/.ssh/id_rsa"):     "err EACCES",
		"read:" + f.p("home/ssh-link/id_rsa"): "err EACCES",
		"create:" + f.p("outside/new"):        "err EACCES",
	}
	var ops []string
	for op := range want {
		ops = append(ops, op)
	}
	got := runHelper(t, c, nil, ops...)
	for op, w := range want {
		if got[op] != w {
			t.Errorf("%s: %s, want %s", op, got[op], w)
		}
	}
}

// TestPrepareRefuses: a spec the package cannot take is an error, never
// a weaker confinement.
func TestPrepareRefuses(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	for _, s := range []Spec{
		{Profile: "root"},
		{Profile: ReadOnly, Roots: []string{"relative"}},
		{Profile: ReadOnly, Hidden: []string{"~/.ssh"}},
	} {
		if c, err := Prepare(s); err == nil {
			c.Close()
			t.Errorf("Prepare(%+v) succeeded", s)
		}
	}
	// A confinement used after Close starts nothing.
	f := newFixture(t)
	c, err := Prepare(f.spec(ReadOnly))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	cmd := helperCmd("status")
	if err := Start(cmd, c, nil); err == nil {
		waitCmd(t, cmd)
		t.Errorf("Start with a closed confinement started %s", cmd.Path)
	}
	checkUnconfined(t)
}

// statusOf reads Seccomp, NoNewPrivs and CapEff from a status file.
func statusOf(t *testing.T, path string) (seccomp, nnp, capEff string, ok bool) {
	t.Helper()
	s := statusFields(path, "Seccomp", "NoNewPrivs", "CapEff")
	if strings.HasPrefix(s, "err ") {
		return "", "", "", false // the thread is gone
	}
	fs := strings.Fields(s)
	v := func(i int) string { _, x, _ := strings.Cut(fs[i], "="); return x }
	return v(0), v(1), v(2), true
}

// ownCapEff is the test process's effective capabilities, read from the
// main thread (never confined).
func ownCapEff(t *testing.T) string {
	t.Helper()
	_, _, c, ok := statusOf(t, fmt.Sprintf("/proc/%d/task/%d/status", os.Getpid(), os.Getpid()))
	if !ok {
		t.Fatal("cannot read the main thread's status")
	}
	return c
}

// checkUnconfined asserts that the test process is not confined: it
// writes where it likes, opens sockets, and no thread of it has a seccomp
// filter, no_new_privs or fewer capabilities. A thread that Start
// confined is ending when Start returns; it may still be listed for a
// moment, and is waited for (a bug keeps it: then the hang guard fails
// the test).
func checkUnconfined(t *testing.T) {
	t.Helper()
	capEff := ownCapEff(t)
	if err := os.WriteFile(filepath.Join(t.TempDir(), "written-by-the-test"), []byte("x"), 0o600); err != nil {
		t.Errorf("the test process cannot write: %v", err)
	}
	for _, fam := range []int{unix.AF_INET, unix.AF_UNIX} {
		fd, err := unix.Socket(fam, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Errorf("the test process cannot open a socket of family %d: %v", fam, err)
		} else {
			unix.Close(fd)
		}
	}
	deadline := time.Now().Add(hangGuard)
	for {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Fatal(err)
		}
		var confined []string
		parked := parkedThreads() // readied for the next run, and locked to it
		for _, task := range tasks {
			if tid, _ := strconv.Atoi(task.Name()); parked[tid] {
				continue
			}
			sc, nnp, ce, ok := statusOf(t, "/proc/self/task/"+task.Name()+"/status")
			if ok && (sc != "0" || nnp != "0" || ce != capEff) {
				confined = append(confined, fmt.Sprintf("thread %s: Seccomp %s NoNewPrivs %s CapEff %s", task.Name(), sc, nnp, ce))
			}
		}
		if len(confined) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("confined threads of the test process outlive Start by %s:\n%s\n\nthe goroutines starting a confined child:\n%s",
				hangGuard, strings.Join(confined, "\n"), startingStacks())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startingStacks are the stacks of the goroutines inside Start, for a
// hang guard's report.
func startingStacks() string {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "sandbox.startLocked") || strings.Contains(g, "sandbox.warmThread") || strings.Contains(g, "forkExec") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

// checkFreshThreads locks n goroutines at once, each to a thread of its
// own, and checks each thread from inside: a confined thread that went
// back to the Go scheduler would be handed to one of them.
func checkFreshThreads(t *testing.T, n int) {
	t.Helper()
	capEff := ownCapEff(t)
	dir := t.TempDir()
	var ready, release sync.WaitGroup
	ready.Add(n)
	release.Add(1)
	errs := make(chan string, n)
	for i := range n {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			sc, nnp, ce, _ := statusOf(t, "/proc/thread-self/status")
			tid := unix.Gettid()
			if sc != "0" || nnp != "0" || ce != capEff {
				errs <- fmt.Sprintf("thread %d: Seccomp %s NoNewPrivs %s CapEff %s", tid, sc, nnp, ce)
			}
			// Landlock shows nowhere in /proc: try it.
			if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(i)), []byte("x"), 0o600); err != nil {
				errs <- fmt.Sprintf("thread %d cannot write: %v", tid, err)
			}
			if fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0); err != nil {
				errs <- fmt.Sprintf("thread %d cannot open a socket: %v", tid, err)
			} else {
				unix.Close(fd)
			}
			ready.Done()
			release.Wait() // hold the thread until all are checked
		}()
	}
	ready.Wait()
	release.Done()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestStartLeavesCallerUnconfined is the package's invariant: Start
// confines the child alone, never a thread of the caller, however many
// run at once.
func TestStartLeavesCallerUnconfined(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t)
	var cs []*Confinement
	for _, p := range Profiles() {
		cs = append(cs, prepare(t, f.spec(p)))
	}
	var g *Cgroup
	if cg, err := NewCgroup(fmt.Sprintf("test-%d-leak", os.Getpid()), 0); err == nil {
		g = cg
		defer g.Close()
	}
	cmd := helperCmd("create:" + f.p("outside/first"))
	if err := Start(cmd, cs[0], nil); err != nil {
		t.Fatal(err)
	}
	waitCmd(t, cmd)
	checkUnconfined(t)

	const starts = 50
	var wg sync.WaitGroup
	errs := make(chan error, starts)
	for i := range starts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := osexec.Command("/bin/true")
			var cg *Cgroup
			if i%2 == 0 {
				cg = g
			}
			if err := Start(cmd, cs[i%len(cs)], cg); err != nil {
				errs <- err
				return
			}
			if err := cmd.Wait(); err != nil {
				errs <- fmt.Errorf("confined true: %w", err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	checkUnconfined(t)
	checkFreshThreads(t, 128)

	// The main thread: a Start whose goroutine runs there must hand the
	// work to another thread (the main one cannot end).
	if onMainThread(func() {
		cmd := osexec.Command("/bin/true")
		errc := make(chan error, 1)
		startLocked(cmd, cs[0], g, errc)
		if err := <-errc; err != nil {
			t.Errorf("start from the main thread: %v", err)
			return
		}
		_ = cmd.Wait()
		sc, nnp, _, _ := statusOf(t, "/proc/thread-self/status")
		if sc != "0" || nnp != "0" {
			t.Errorf("the main thread is confined after starting a child: Seccomp %s NoNewPrivs %s", sc, nnp)
		}
	}) {
		checkUnconfined(t)
		checkFreshThreads(t, 32)
	} else {
		t.Log("no goroutine landed on the main thread; its case is not checked")
	}
}

// onMainThread runs f on the process's main thread, if a goroutine can be
// scheduled there (the test's main goroutine is blocked in t.Run, leaving
// it to the scheduler), and reports whether it did. Goroutines lock
// threads and hold them until one of them is the main thread, so the
// runtime has to hand out every idle thread, the main one among them.
func onMainThread(f func()) bool {
	for range 20 {
		const n = 64
		found := make(chan bool, n)
		release := make(chan struct{})
		for range n {
			go func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				if unix.Gettid() == unix.Getpid() {
					f()
					found <- true
					return
				}
				found <- false
				<-release
			}()
		}
		ok := false
		for range n {
			ok = <-found || ok
		}
		close(release)
		if ok {
			return true
		}
	}
	return false
}

// requireCgroup makes a cgroup for the test or skips it.
func requireCgroup(t *testing.T, name string, maxProcs int) *Cgroup {
	t.Helper()
	g, err := NewCgroup(fmt.Sprintf("test-%d-%s", os.Getpid(), name), maxProcs)
	if err != nil {
		t.Skipf("no cgroup here: %v", err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool { return live(strconv.Itoa(pid)) }

// TestCgroupZombieNotVacant: the cheap check after a run (pids.current)
// counts a dead process nobody reaped yet, as listing cgroup.procs does
// not: such a cgroup is empty of live processes but neither vacant nor
// idle, so it is not reused while its zombie still holds a pid of
// pids.max. Reaped, it is all three.
func TestCgroupZombieNotVacant(t *testing.T) {
	t.Parallel()
	g := requireCgroup(t, "zombie", 4)
	cmd := osexec.Command("/bin/sh", "-c", "exit 0")
	if err := Start(cmd, nil, g); err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	deadline := time.Now().Add(hangGuard)
	for !zombie(pid) {
		if time.Now().After(deadline) {
			t.Fatal("the shell did not exit")
		}
		time.Sleep(time.Millisecond)
	}
	counted := false
	for _, dir := range []string{g.v2, g.v1} {
		if dir != "" && !vacant(dir) {
			counted = true
		}
	}
	if !counted {
		t.Error("a zombie in the cgroup: vacant says no task is left")
	}
	if g.idle() {
		t.Error("a zombie in the cgroup: idle")
	}
	if !g.Empty() {
		t.Error("only a zombie in the cgroup: not Empty")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{g.v2, g.v1} {
		if dir == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "pids.current")); err == nil && !vacant(dir) {
			t.Errorf("%s: not vacant once the shell was reaped", dir)
		}
	}
	if !g.idle() || !g.Empty() {
		t.Errorf("reaped: idle %v, Empty %v", g.idle(), g.Empty())
	}
}

// TestCgroupKillsEverything: a run's processes that left its session
// (setsid) or its tree (a double fork) are killed with it; the cgroup is
// removed on Close; the test process survives.
func TestCgroupKillsEverything(t *testing.T) {
	t.Parallel()
	g := requireCgroup(t, "kill", 0)
	v2, v1 := g.v2, g.v1
	script := `setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $!
sh -c 'sleep 1000 </dev/null >/dev/null 2>&1 & echo $!'
sh -c 'setsid sh -c "sleep 1000 </dev/null >/dev/null 2>&1 & echo \$!" &' | cat
echo $$
echo ready
exec sleep 1000`
	cmd := osexec.Command("/bin/sh", "-c", script)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := Start(cmd, nil, g); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	var pids []int
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && sc.Text() != "ready" {
		pid, err := strconv.Atoi(sc.Text())
		if err != nil {
			t.Fatalf("script: %q", sc.Text())
		}
		pids = append(pids, pid)
	}
	go func() { exited <- cmd.Wait() }()
	if len(pids) != 4 {
		t.Fatalf("pids %v", pids)
	}
	for _, pid := range pids {
		if !alive(pid) {
			t.Fatalf("process %d is not running before the kill", pid)
		}
		if !inCgroup(pid, g) {
			t.Errorf("process %d is not in the run's cgroup", pid)
		}
	}
	if g.Empty() {
		t.Error("Empty with four processes running")
	}
	if !g.Kill(hangGuard) {
		t.Fatalf("Kill: processes left after %s", hangGuard)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d survived Kill", pid)
		}
	}
	select {
	case <-exited:
	case <-time.After(hangGuard):
		t.Fatal("the shell was not reaped after Kill")
	}
	if err := g.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	for _, d := range []string{v2, v1} {
		if d == "" {
			continue
		}
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cgroup %s still exists after Close: %v", d, err)
		}
	}
	checkUnconfined(t)
}

// inCgroup reports whether pid is listed in one of g's cgroup.procs.
func inCgroup(pid int, g *Cgroup) bool {
	for _, d := range []string{g.v2, g.v1} {
		if d == "" {
			continue
		}
		data, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		for _, f := range strings.Fields(string(data)) {
			if f == strconv.Itoa(pid) {
				return true
			}
		}
	}
	return false
}

// TestCgroupPidsMax: a fork loop stops at pids.max; the test process
// still forks meanwhile.
func TestCgroupPidsMax(t *testing.T) {
	t.Parallel()
	const limit = 16
	g := requireCgroup(t, "pids", limit)
	if !g.Limited {
		t.Skip("no pids controller here: the cgroup is not limited")
	}
	script := `i=0; while [ $i -lt 100 ]; do sleep 1000 </dev/null >/dev/null 2>&1 & i=$((i+1)); done; echo loop-ended`
	cmd := osexec.Command("/bin/sh", "-c", script)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := Start(cmd, nil, g); err != nil {
		t.Fatal(err)
	}
	waitCmd(t, cmd) // the shell stops when a fork fails
	n := 0
	for _, d := range []string{g.v2, g.v1} {
		if d == "" {
			continue
		}
		data, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		n = max(n, len(strings.Fields(string(data))))
	}
	if n > limit || n == 0 {
		t.Errorf("%d processes in the cgroup, pids.max %d", n, limit)
	}
	if strings.Contains(out.String(), "loop-ended") && n < limit {
		t.Errorf("the fork loop ran to its end: %q", out.String())
	}
	t.Logf("%d processes in the cgroup; the shell said %q", n, strings.TrimSpace(out.String()))
	// The test process is not bound by the run's limit.
	var cmds []*osexec.Cmd
	for range 2 * limit {
		c := osexec.Command("/bin/sleep", "1000")
		if err := c.Start(); err != nil {
			t.Errorf("the test process cannot fork while the run's cgroup is full: %v", err)
			break
		}
		cmds = append(cmds, c)
	}
	for _, c := range cmds {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
	if !g.Kill(hangGuard) {
		t.Fatal("Kill left processes")
	}
}

// TestCgroupKillSparesCaller: a thread of the test process in the run's
// cgroup (v1: the thread that starts the child joins it) is neither killed
// nor counted.
func TestCgroupKillSparesCaller(t *testing.T) {
	t.Parallel()
	g := requireCgroup(t, "spare", 0)
	if g.tasks == "" {
		t.Skip("no v1 pids cgroup: no thread of the caller ever joins the run's cgroup")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		// This thread is not returned to the scheduler: it ends with the
		// goroutine, in or out of the cgroup.
		leave, err := g.enterThread()
		if err != nil {
			t.Error(err)
			return
		}
		cmd := osexec.Command("/bin/sleep", "1000")
		if err := cmd.Start(); err != nil {
			t.Error(err)
			return
		}
		if !inCgroup(os.Getpid(), g) {
			t.Error("the test process's thread is not in the v1 cgroup")
		}
		if !g.Kill(hangGuard) {
			t.Error("Kill does not report the cgroup empty with only the caller's thread left in it")
		}
		_ = cmd.Wait()
		leave()
		if inCgroup(os.Getpid(), g) {
			t.Error("leave left the thread in the cgroup")
		}
	}()
	<-done
	// Still alive, evidently; and Close works.
	if err := g.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// TestCgroupConfinedStart: a confined child in a cgroup is confined, and
// Kill empties the cgroup.
func TestCgroupConfinedStart(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	g := requireCgroup(t, "confined", 64)
	f := newFixture(t)
	c := prepare(t, f.spec(Mutating))
	got := runHelper(t, c, g, "status", "create:"+f.p("project/new"), "create:"+f.p("outside/new"))
	if got["create:"+f.p("project/new")] != "ok" || got["create:"+f.p("outside/new")] != "err EACCES" {
		t.Errorf("confined in a cgroup: %v", got)
	}
	if !strings.Contains(got["status"], "Seccomp=2") {
		t.Errorf("child status: %s", got["status"])
	}
	if !g.Kill(hangGuard) {
		t.Error("Kill left processes")
	}
	checkUnconfined(t)
}

// TestCgroups: the pool hands out cgroups, reuses one a run left empty,
// kills what a run left behind when it is given back, and removes every
// cgroup it made by Close.
func TestCgroups(t *testing.T) {
	t.Parallel()
	requireCgroup(t, "pool-probe", 0)
	var p Cgroups
	p.MaxProcs = 32
	var dirs []string
	get := func() *Cgroup {
		t.Helper()
		g, err := p.Get()
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, g.v2, g.v1)
		return g
	}
	// A run that leaves nothing: its cgroup is reused.
	g := get()
	cmd := osexec.Command("/bin/true")
	if err := Start(cmd, nil, g); err != nil {
		t.Fatal(err)
	}
	waitCmd(t, cmd)
	p.Put(g)
	if g2 := get(); g2 != g {
		t.Errorf("Get after an empty run's Put made a new cgroup")
		p.Put(g2)
	}
	// A run that leaves a process behind, out of its session.
	cmd = osexec.Command("/bin/sh", "-c", "setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $!")
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := Start(cmd, nil, g); err != nil {
		t.Fatal(err)
	}
	waitCmd(t, cmd)
	pid, err := strconv.Atoi(strings.TrimSpace(out.String()))
	if err != nil {
		t.Fatalf("%q", out.String())
	}
	if !alive(pid) {
		t.Fatalf("process %d is not running before Put", pid)
	}
	p.Put(g)
	if alive(pid) {
		t.Errorf("Put left process %d running", pid)
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	g3 := get()
	if !g3.Empty() {
		t.Errorf("Get returned a cgroup that is not empty")
	}
	p.Put(g3)
	if err := p.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	// Close waits a little (closeWait) for a cgroup whose killed
	// processes are still zombies; its removal goes on after that, once
	// init has reaped them, which a loaded machine can take longer to do.
	for _, d := range dirs {
		if d == "" {
			continue
		}
		_, err := os.Stat(d)
		for deadline := time.Now().Add(hangGuard); !errors.Is(err, os.ErrNotExist) && time.Now().Before(deadline); _, err = os.Stat(d) {
			time.Sleep(20 * time.Millisecond)
		}
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s remains %s after Close: %v", d, hangGuard, err)
		}
	}
}

// TestCgroupsTwoPools: two pools in one process (two Runners) each get
// cgroups of their own.
func TestCgroupsTwoPools(t *testing.T) {
	t.Parallel()
	requireCgroup(t, "two-pools-probe", 0)
	var a, b Cgroups
	defer a.Close()
	defer b.Close()
	ga, err := a.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Put(ga)
	gb, err := b.Get()
	if err != nil {
		t.Fatalf("a second pool's Get: %v", err)
	}
	defer b.Put(gb)
}

// TestLeaveThreadAfterApply: startLocked moves its thread back out of the
// run's v1 cgroup after starting the child, when the thread is confined
// already: the move must still work.
func TestLeaveThreadAfterApply(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	g := requireCgroup(t, "leave", 0)
	if g.tasks == "" {
		t.Skip("no v1 pids cgroup")
	}
	f := newFixture(t)
	c := prepare(t, f.spec(Mutating))
	onDiscardedThread(func() {
		leave, err := g.enterThread()
		if err != nil {
			t.Error(err)
			return
		}
		if err := c.apply(); err != nil {
			t.Error(err)
			return
		}
		leave()
		tid := strconv.Itoa(unix.Gettid())
		data, _ := os.ReadFile(g.tasks)
		if slices.Contains(strings.Fields(string(data)), tid) {
			t.Errorf("the confined thread %s is still in %s after leaveThread", tid, g.tasks)
		}
	})
}

// onDiscardedThread runs f on a locked OS thread that ends with it, as
// Start confines one: never the main thread, which the Go runtime parks
// for good instead of ending (confined, it would stay so for the rest of
// the process: every later test then finds a confined thread).
func onDiscardedThread(f func()) {
	done := make(chan struct{})
	var run func()
	run = func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if unix.Gettid() == unix.Getpid() {
			defer runtime.UnlockOSThread()
			inner := make(chan struct{})
			go func() { defer close(inner); run() }()
			<-inner
			return
		}
		defer close(done)
		f()
	}
	go run()
	<-done
}

// TestClosedHome: a closed directory (a home) is readable only where
// something opens it: the readable paths, the roots, the caches. A secret
// that no list names (git's XDG credential store), one made after the
// confinement was prepared, and the directory's listing all stay out of
// reach; a hidden path inside a readable one stays hidden; a root that is
// the home directory itself opens nothing. (Names in it can be listed:
// Landlock's listing right, granted on the way down, holds beneath.)
func TestClosedHome(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	f := newFixture(t)
	files := map[string]string{
		"home/.gitconfig":              "[user]\n\tname = A\n",
		"home/.config/git/config":      "[core]\n",
		"home/.config/git/credentials": "https://u:ghp_secret@github.com\n",
		"home/.dockercfg":              "{\"auths\":{}}\n",
		"home/go/bin/tool":             "#!/bin/sh\n",
		"home/go/secret.txt":           "s\n",
		"home/src/proj/main.go":        "package main\n",
		"home/.cache/go-build/entry":   "x\n",
	}
	for rel, data := range files {
		if err := os.MkdirAll(filepath.Dir(f.p(rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.p(rel), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := Spec{Profile: Mutating, Roots: []string{f.p("home/src/proj")}, Writable: []string{f.p("home/.cache/go-build")},
		Hidden: []string{f.ssh, f.p("home/go/secret.txt")}, TmpDir: f.tmp, Closed: []string{f.home},
		Readable: []string{f.p("home/.gitconfig"), f.p("home/.config/git/config"), f.p("home/go"), f.p("home/.missing")}}
	c := prepare(t, s)
	late := f.p("home/.config/gh/hosts.yml") // made after Prepare
	if err := os.MkdirAll(filepath.Dir(late), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(late, []byte("oauth_token: gho_x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"read:" + f.p("home/.gitconfig"):              "ok",
		"read:" + f.p("home/.config/git/config"):      "ok",
		"read:" + f.p("home/go/bin/tool"):             "ok",
		"read:" + f.p("home/src/proj/main.go"):        "ok",
		"create:" + f.p("home/src/proj/new.go"):       "ok",
		"read:" + f.p("home/.cache/go-build/entry"):   "ok",
		"create:" + f.p("home/.cache/go-build/e2"):    "ok",
		"read:" + f.p("home/.config/git/credentials"): "err EACCES",
		"read:" + f.p("home/.dockercfg"):              "err EACCES",
		"read:" + late:                                "err EACCES",
		"read:" + f.p("home/go/secret.txt"):           "err EACCES",
		// Landlock grants listing beneath a directory (it cannot carve
		// it): names in a closed directory can be listed, not read.
		"readdir:" + f.home:             "ok",
		"create:" + f.p("home/.bashrc"): "err EACCES",
		"read:" + f.p("outside/f"):      "ok",
	}
	if err := os.WriteFile(f.p("outside/f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var ops []string
	for op := range want {
		ops = append(ops, op)
	}
	got := runHelper(t, c, nil, ops...)
	for op, w := range want {
		if got[op] != w {
			t.Errorf("%s: %s, want %s", op, got[op], w)
		}
	}

	// The home directory as a root opens nothing of it.
	s.Roots = []string{f.home}
	got = runHelper(t, prepare(t, s), nil, "read:"+f.p("home/.dockercfg"), "read:"+f.p("home/src/proj/main.go"))
	for op, res := range got {
		if res != "err EACCES" {
			t.Errorf("with the home directory as a root, %s: %s, want err EACCES", op, res)
		}
	}
}
