//go:build linux

package exec

import (
	"flag"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sluice-dev/sluice/exec/sandbox"
	"github.com/sluice-dev/sluice/queue"
)

// The issue 12 benchmarks: what confinement (two stacked Landlock layers
// and a seccomp filter applied to a locked, discarded thread,
// exec/sandbox) costs a run, measured against the same Runner without
// Confine in the same loop. Both runners take a cgroup from their pool
// (Run does whether or not it confines), so the ratios are the price of
// Landlock + seccomp + the private temporary directory;
// BenchmarkConfinedRunTrue/parts times the cgroup, the thread and each
// step of the confinement on their own.
//
// The spool is hidden from confined runs, so the directory holding it is
// one the base layer carves and watches. It lives in a fresh directory on
// tmpfs (/dev/shm), as the default spool ($XDG_RUNTIME_DIR/sluice) does;
// SLUICE_BENCH_SPOOL_PARENT=DIR puts that directory in DIR instead (/tmp:
// the runs' private temporary directories are made there too, so every
// run changes a watched directory and rebuilds the base layer; on disk,
// too, as ~/.local/state/sluice/spool is).

// benchSpool makes a spool directory (with out/) for a benchmark, in a
// fresh directory below SLUICE_BENCH_SPOOL_PARENT, else /dev/shm, else the
// benchmark's temporary directory.
func benchSpool(b *testing.B) string {
	b.Helper()
	parent := os.Getenv("SLUICE_BENCH_SPOOL_PARENT")
	if parent == "" {
		if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
			parent = "/dev/shm"
		}
	}
	dir := b.TempDir()
	if parent != "" {
		d, err := os.MkdirTemp(parent, "sluice-bench-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(d) })
		dir = d
	}
	spool := filepath.Join(dir, "spool")
	if err := os.MkdirAll(filepath.Join(spool, "out"), 0o700); err != nil {
		b.Fatal(err)
	}
	return spool
}

// benchConfine is the confinement serve gives a runner: the default
// secret paths and writable caches, and the spool.
func benchConfine(b *testing.B, spool string) *Confine {
	b.Helper()
	if _, err := sandbox.Available(); err != nil {
		b.Skip("no confinement on this machine:", err)
	}
	home, _ := os.UserHomeDir()
	return &Confine{Mode: SandboxPrefer, Hidden: DefaultHidden(home), Writable: DefaultWritable(os.Environ(), home), Spool: spool,
		Closed: DefaultClosed(home), Readable: DefaultReadable(os.Environ(), home), Fetch: DefaultFetchCaches(os.Environ(), home)}
}

// benchVariant is one way of running a command in the interleaved loops.
type benchVariant struct {
	name    string
	r       *Runner
	profile string   // Options.Profile
	jail    []string // Options.Jail
	label   string   // the Result.Sandbox it must report
	times   []time.Duration
	bytes   int64
}

// run runs cmd in dir under v, with its log in the spool as serve has it,
// checks that it succeeded under the confinement v stands for, and
// returns the output's size and Run's wall time.
func (v *benchVariant) run(b *testing.B, cmd, dir, spool string) (int64, time.Duration) {
	req := &queue.Request{Version: queue.Version, ID: fmt.Sprintf("r%d-%d", os.Getpid(), runSeq.Add(1)),
		Kind: queue.KindExec, Command: cmd, Cwd: dir}
	log := filepath.Join(spool, "out", req.ID+".log")
	t0 := time.Now()
	res, _ := v.r.Run(b.Context(), req, Options{LogPath: log, Profile: v.profile, Jail: v.jail})
	d := time.Since(t0)
	if res.Status != queue.StatusDone || res.ExitCode == nil || *res.ExitCode != 0 {
		b.Fatalf("%s: Run: %+v", v.name, res)
	}
	if res.Sandbox != v.label {
		b.Fatalf("%s: ran with sandbox %q, want %q", v.name, res.Sandbox, v.label)
	}
	_ = os.Remove(log)
	return res.OutputBytes, d
}

// benchVariants are the runners compared: without Confine, and confined
// read_only and (with mutating) mutating, whose jail is the project
// directory.
func benchVariants(b *testing.B, spool, project string, mutating bool) []*benchVariant {
	conf := benchConfine(b, spool)
	plain, confined := testRunner(), testRunner()
	confined.Confine = conf
	b.Cleanup(func() {
		_ = plain.Close()
		_ = confined.Close()
	})
	vs := []*benchVariant{
		{name: "unconfined", r: plain, label: nonePrefix + "sandbox = off"},
		{name: "read_only", r: confined, profile: string(sandbox.ReadOnly), label: string(sandbox.ReadOnly)},
	}
	if mutating {
		vs = append(vs, &benchVariant{name: "mutating", r: confined, profile: string(sandbox.Mutating),
			jail: []string{project}, label: string(sandbox.Mutating)})
	}
	return vs
}

// BenchmarkConfinedRunTrue: Runner.Run of `true` unconfined, confined
// read_only and confined mutating, in one loop (the order rotates every
// iteration), with p50 and p99 of each and the p50 ratios to unconfined
// (target ≤ 1.15x). /parts times, in one loop too, the pieces a run's
// confinement and cgroup are made of.
func BenchmarkConfinedRunTrue(b *testing.B) {
	b.Run("run", benchConfinedRun)
	b.Run("parts", benchConfinedParts)
}

func benchConfinedRun(b *testing.B) {
	spool, project := benchSpool(b), b.TempDir()
	vs := benchVariants(b, spool, project, true)
	i := 0
	for b.Loop() {
		for k := range vs {
			v := vs[(i+k)%len(vs)]
			_, d := v.run(b, "true", project, spool)
			v.times = append(v.times, d)
		}
		i++
	}
	base := quantile(vs[0].times, 0.5)
	for _, v := range vs {
		p50 := quantile(v.times, 0.5)
		b.ReportMetric(ms(p50), v.name+"-p50-ms")
		b.ReportMetric(ms(quantile(v.times, 0.99)), v.name+"-p99-ms")
		if v != vs[0] {
			b.ReportMetric(float64(p50)/float64(base), v.name+"/unconfined-p50")
		}
	}
}

// benchConfinedParts times, alternating in one loop, with p50 of each:
//
//   - plan: sandbox.Plan of a run's spec from scratch (resolving paths,
//     carving the directories that hold hidden paths: stat and readdir of
//     each entry), with how many grants each layer gets and how many
//     directories the base layer watches;
//   - prepare: sandbox.Prepare + Close with the base layer reused (a stat
//     of each watched directory, then the run's own layer: an open, fstat
//     and landlock_add_rule per grant);
//   - prepare-cold: the same after an entry was made and removed in the
//     directory holding the spool, a watched one: the base layer is
//     planned and built again (an open, fstat and landlock_add_rule per
//     grant);
//   - tmpdir: the run's private temporary directory made and removed, as
//     confine does it (in $TMPDIR, else /tmp);
//   - confine: Runner.confine + close, the whole per-run step (tmpdir and
//     Prepare);
//   - cgroup-new: sandbox.NewCgroup + Close of an empty cgroup (mkdir in
//     each hierarchy, pids.max, rmdir): what a run pays when the pool has
//     none to reuse;
//   - cgroup-pooled: sandbox.Cgroups Get + Put, what a run pays with one
//     to reuse;
//   - start-*: `sh -c true` started (and, startwait-*, waited for) five
//     ways: cmd.Start directly; from a locked OS thread that is then
//     discarded, as sandbox.Start does (the thread alone); sandbox.Start
//     with a pooled cgroup only; with the confinement only; with both, as
//     Run does;
//   - thread, caps, nnp, restrict-base, restrict-run, seccomp: getting a
//     throwaway locked thread, then the steps that confine it, one at a
//     time (dropping capabilities only as root).
func benchConfinedParts(b *testing.B) {
	spool, project := benchSpool(b), b.TempDir()
	conf := benchConfine(b, spool)
	r := testRunner()
	r.Confine = conf
	b.Cleanup(func() { _ = r.Close() })
	pool := &sandbox.Cgroups{MaxProcs: DefaultMaxProcs}
	b.Cleanup(func() { _ = pool.Close() })
	master, tty, err := openPTY(DefaultRows, DefaultCols)
	if err != nil {
		b.Fatal(err)
	}
	defer master.Close()
	defer tty.Close()
	spec := sandbox.Spec{Profile: sandbox.ReadOnly, Roots: []string{project}, Writable: conf.Writable,
		Hidden: append(append([]string(nil), conf.Hidden...), spool), TmpDir: b.TempDir(), TTY: tty.Name()}
	if g, err := sandbox.NewCgroup(fmt.Sprintf("probe-%d", os.Getpid()), 0); err != nil {
		b.Log("no cgroup can be made here: the cgroup figures time the failed attempt:", err)
	} else {
		_ = g.Close()
	}
	touch := filepath.Join(filepath.Dir(spool), "touch")

	t := map[string][]time.Duration{}
	add := func(name string, t0 time.Time) { t[name] = append(t[name], time.Since(t0)) }
	var layers sandbox.Layers
	n := 0
	for b.Loop() {
		n++
		id := fmt.Sprintf("b%d-%d", os.Getpid(), n)

		t0 := time.Now()
		layers = sandbox.Plan(&spec)
		add("plan", t0)

		t0 = time.Now()
		box, err := sandbox.Prepare(spec)
		if err != nil {
			b.Fatal(err)
		}
		_ = box.Close()
		add("prepare", t0)

		if err := os.Mkdir(touch, 0o700); err != nil {
			b.Fatal(err)
		}
		_ = os.Remove(touch)
		t0 = time.Now()
		box, err = sandbox.Prepare(spec)
		if err != nil {
			b.Fatal(err)
		}
		_ = box.Close()
		add("prepare-cold", t0)

		t0 = time.Now()
		if tmp, err := os.MkdirTemp("", "sluice-run-"+id+"-"); err == nil {
			_ = os.RemoveAll(tmp)
		}
		add("tmpdir", t0)

		t0 = time.Now()
		c := r.confine(project, tty.Name(), Options{Profile: string(sandbox.ReadOnly)}, r.Confinement())
		c.close()
		add("confine", t0)
		if c.box == nil {
			b.Fatalf("confine: %s", c.label)
		}

		t0 = time.Now()
		if g, err := sandbox.NewCgroup(id, DefaultMaxProcs); err == nil {
			_ = g.Close()
		}
		add("cgroup-new", t0)

		t0 = time.Now()
		if g, err := pool.Get(); err == nil {
			pool.Put(g)
		}
		add("cgroup-pooled", t0)

		box, err = sandbox.Prepare(spec)
		if err != nil {
			b.Fatal(err)
		}
		for _, way := range []string{"direct", "locked", "cgroup", "confined", "both"} {
			var g *sandbox.Cgroup
			if way == "cgroup" || way == "both" {
				g, _ = pool.Get()
			}
			cmd := osexec.Command("/bin/sh", "-c", "true")
			cmd.Dir = project
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			t0 = time.Now()
			switch way {
			case "direct":
				err = cmd.Start()
			case "locked":
				err = startOnThrowawayThread(cmd)
			case "cgroup":
				err = sandbox.Start(cmd, nil, g)
			case "confined":
				err = sandbox.Start(cmd, box, nil)
			case "both":
				err = sandbox.Start(cmd, box, g)
			}
			add("start-"+way, t0)
			if err != nil {
				b.Fatalf("start %s: %v", way, err)
			}
			if err := cmd.Wait(); err != nil {
				b.Fatalf("start %s: wait: %v", way, err)
			}
			add("startwait-"+way, t0)
			pool.Put(g)
		}

		for name, d := range confineSteps(box) {
			t[name] = append(t[name], d)
		}
		_ = box.Close()
	}
	b.ReportMetric(float64(len(layers.Base)), "base-grants")
	b.ReportMetric(float64(len(layers.Run)), "run-grants")
	b.ReportMetric(float64(len(layers.Watch)), "watched-dirs")
	for _, name := range []string{"plan", "prepare", "prepare-cold", "tmpdir", "confine", "cgroup-new", "cgroup-pooled"} {
		b.ReportMetric(ms(quantile(t[name], 0.5)), name+"-p50-ms")
	}
	for _, way := range []string{"direct", "locked", "cgroup", "confined", "both"} {
		b.ReportMetric(ms(quantile(t["start-"+way], 0.5)), "start-"+way+"-p50-ms")
		b.ReportMetric(ms(quantile(t["startwait-"+way], 0.5)), "startwait-"+way+"-p50-ms")
	}
	for _, name := range []string{"thread", "caps", "nnp", "restrict-base", "restrict-run", "seccomp"} {
		if len(t[name]) > 0 {
			b.ReportMetric(float64(quantile(t[name], 0.5))/float64(time.Microsecond), name+"-p50-µs")
		}
	}
}

// startOnThrowawayThread starts cmd the way sandbox.Start does when it
// confines, without the confinement: from a new goroutine locked to its OS
// thread, never unlocked, so the thread ends with it (and not from the
// main thread, which cannot end).
func startOnThrowawayThread(cmd *osexec.Cmd) error {
	errc := make(chan error, 1)
	go startThrowaway(cmd, errc)
	return <-errc
}

func startThrowaway(cmd *osexec.Cmd, errc chan<- error) {
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		defer runtime.UnlockOSThread()
		inner := make(chan error, 1)
		go startThrowaway(cmd, inner)
		errc <- <-inner
		return
	}
	errc <- cmd.Start()
}

// confineSteps times the steps of confining a thread (sandbox's apply),
// each on a locked thread that is then discarded: getting the thread
// ("thread": the goroutine starts, locks and reports back), dropping every
// capability (as root only, as apply does), no_new_privs,
// landlock_restrict_self with box's base layer and then its run layer,
// and loading box's seccomp filter. The layers and the filter are read
// out of box by reflection (they are unexported); where that fails, those
// steps are left out.
func confineSteps(box *sandbox.Confinement) map[string]time.Duration {
	out := map[string]time.Duration{}
	baseFD, runFD, filter := -1, -1, (*unix.SockFprog)(nil)
	v := reflect.ValueOf(box).Elem()
	if f := v.FieldByName("ruleset"); f.IsValid() && f.CanInt() {
		runFD = int(f.Int())
	}
	if f := v.FieldByName("base"); f.IsValid() && f.Kind() == reflect.Pointer && !f.IsNil() {
		if fd := f.Elem().FieldByName("fd"); fd.IsValid() && fd.CanInt() {
			baseFD = int(fd.Int())
		}
	}
	if f := v.FieldByName("filter"); f.IsValid() && f.Kind() == reflect.Pointer && !f.IsNil() {
		filter = (*unix.SockFprog)(unsafe.Pointer(f.Pointer()))
	}
	restrict := func(name string, fd int) bool {
		if fd < 0 {
			return false
		}
		t := time.Now()
		if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(fd), 0, 0); e != 0 {
			return false
		}
		out[name] = time.Since(t)
		return true
	}
	done := make(chan struct{})
	t0 := time.Now()
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread goes with the goroutine
		if unix.Gettid() == unix.Getpid() {
			return // the main thread: nothing may be confined here
		}
		out["thread"] = time.Since(t0)
		if os.Geteuid() == 0 {
			t := time.Now()
			_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
			for c := 0; c <= unix.CAP_LAST_CAP; c++ {
				_ = unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
			}
			hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
			var data [2]unix.CapUserData
			_ = unix.Capset(&hdr, &data[0])
			out["caps"] = time.Since(t)
		}
		t := time.Now()
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return
		}
		out["nnp"] = time.Since(t)
		if baseFD >= 0 && !restrict("restrict-base", baseFD) {
			return
		}
		if !restrict("restrict-run", runFD) || filter == nil {
			return
		}
		t = time.Now()
		if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(filter))); e != 0 {
			return
		}
		out["seccomp"] = time.Since(t)
	}()
	<-done
	return out
}

// confinedThroughputCmd is the load: about 500 MB of base64.
const confinedThroughputCmd = "head -c 375000000 /dev/urandom | base64"

// confinedThroughputRounds is how many times each op runs the load
// unconfined and confined: which of the two goes first alternates, so
// each goes first equally often (the second of a pair runs while the
// first one's output is still being dealt with by the kernel).
const confinedThroughputRounds = 4

// BenchmarkConfinedThroughput runs confinedThroughputCmd under Run
// unconfined and confined read_only, alternating, confinedThroughputRounds
// times each per op, and reports MB/s of each and the ratio confined to
// unconfined (target ≥ 0.95), and logs each run's MB/s. The output log
// goes to the spool (benchSpool: tmpfs unless SLUICE_BENCH_SPOOL_PARENT
// says otherwise). Run it with -benchtime 1x: an op moves about 4 GB.
func BenchmarkConfinedThroughput(b *testing.B) {
	// -bench Confined -benchtime 300x, meant for the run benchmark, would
	// keep this one busy for hours.
	if f := flag.Lookup("test.benchtime"); f != nil {
		if n, err := strconv.Atoi(strings.TrimSuffix(f.Value.String(), "x")); err == nil && n > 3 {
			b.Skipf("-benchtime %s: an op moves about 4 GB; run it with -benchtime 1x", f.Value)
		}
	}
	spool, project := benchSpool(b), b.TempDir()
	vs := benchVariants(b, spool, project, false)
	var dur [2]time.Duration
	for b.Loop() {
		for round := range confinedThroughputRounds {
			for k := range vs {
				i := (round + k) % len(vs)
				n, d := vs[i].run(b, confinedThroughputCmd, project, spool)
				vs[i].bytes += n
				dur[i] += d
				b.Logf("round %d, %s: %.1f MB/s", round, vs[i].name, mbps(n, d))
			}
		}
	}
	u, c := mbps(vs[0].bytes, dur[0]), mbps(vs[1].bytes, dur[1])
	b.ReportMetric(u, "unconfined-MB/s")
	b.ReportMetric(c, "confined-MB/s")
	b.ReportMetric(c/u, "confined/unconfined")
	b.ReportMetric(float64(vs[0].bytes+vs[1].bytes)/float64(2*confinedThroughputRounds*b.N)/1e6, "MB/run")
}
