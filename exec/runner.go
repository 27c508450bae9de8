//go:build unix

package exec

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluice-dev/sluice/exec/sandbox"
	"github.com/sluice-dev/sluice/queue"
)

// Defaults for the zero fields of a Runner.
const (
	DefaultTimeout = 10 * time.Minute
	DefaultGrace   = 2 * time.Second
	DefaultRows    = 24
	DefaultCols    = 80
)

// Runner runs approved exec requests under a pty. Its zero value is usable
// (with an empty base environment); set the fields before the first Run and
// do not change them afterwards: Reconfigure replaces the ones a reloaded
// configuration may change. Its methods are safe for concurrent use.
type Runner struct {
	BaseEnv        []string      // the environment to inherit from (os.Environ() in production)
	EnvAllow       []string      // names BaseEnv passes on besides DefaultEnvAllow (InheritEnv)
	SecretPatterns []string      // env names to strip, globs like "*_TOKEN"; nil means DefaultSecretPatterns
	DefaultTimeout time.Duration // when the request has no timeout_s; 0 means 10 minutes
	Grace          time.Duration // SIGTERM→SIGKILL grace; 0 means 2 s
	Rows, Cols     uint16        // pty size; 0 means 24x80
	// Size, when set, gives the pty size for each new run instead of Rows
	// and Cols (the console sizes runs to its output pane).
	Size func() (rows, cols uint16)
	// Confine, when set, confines each run to its profile (exec/sandbox);
	// nil runs everything unconfined.
	Confine *Confine
	// Ask, when set, asks a person whether a confined networked run may
	// reach a host outside its set (SpoolAsk); nil refuses every such
	// host.
	Ask AskFunc

	mu      sync.Mutex
	running map[string]*os.File // request id → pty master, for Resize

	first sync.Once
	init  *settings                // the fields above, as first read
	live  atomic.Pointer[settings] // set by Reconfigure

	cgroupsOnce sync.Once
	cgroups     sandbox.Cgroups // reused between runs
	putting     sync.WaitGroup  // cgroups being given back (uncgroup)
	tmps        tmpDirs         // the runs' private TMPDIRs
}

// Settings are what a reloaded configuration may change while the runner
// serves: each run takes them as they are when it starts.
type Settings struct {
	EnvAllow       []string
	SecretPatterns []string
	DefaultTimeout time.Duration
	Grace          time.Duration
	Confine        *Confine
}

// settings are Settings with the base environment inherited through their
// allow-list and secret patterns (about 0.2 ms a run saved).
type settings struct {
	Settings
	base []string
}

// Reconfigure replaces the runner's settings for the runs that start from
// now on; runs under way keep theirs.
func (r *Runner) Reconfigure(s Settings) {
	r.live.Store(&settings{Settings: s, base: InheritEnv(r.BaseEnv, s.EnvAllow, s.SecretPatterns)})
}

// now is the settings in force: the last Reconfigure's, else the fields.
func (r *Runner) now() *settings {
	if s := r.live.Load(); s != nil {
		return s
	}
	r.first.Do(func() {
		r.init = &settings{Settings: Settings{EnvAllow: r.EnvAllow, SecretPatterns: r.SecretPatterns,
			DefaultTimeout: r.DefaultTimeout, Grace: r.Grace, Confine: r.Confine}}
		r.init.base = InheritEnv(r.BaseEnv, r.EnvAllow, r.SecretPatterns)
	})
	return r.init
}

// Confinement is the confinement in force for new runs.
func (r *Runner) Confinement() *Confine { return r.now().Confine }

// Options for one run.
type Options struct {
	// LogPath is out/<id>.log: every byte of output is appended to it at
	// full speed (created 0600). Empty means no log (and Result.Log stays
	// empty); the hash still covers the output.
	LogPath string
	// Output is an optional live subscriber. It is called from a goroutine
	// of its own, fed by a bounded buffer that drops the oldest bytes
	// (skips ahead) when the subscriber is slow; the log keeps everything.
	// p is only valid during the call. Run returns after the last call
	// returns, so Output must not block indefinitely.
	Output func(p []byte)
	// Jail lists the directories the cwd must lie in (after resolving
	// symlinks); empty means no check. A confined mutating or networked
	// run may write inside them (the cwd alone when empty).
	Jail []string
	// Profile is the confinement the verdict asks for: read_only,
	// mutating or networked; empty or unknown means read_only.
	Profile string
	// Unconfined runs without confinement: a person chose it.
	Unconfined bool
	// RequireConfined refuses to run (status failed) rather than fall
	// back to running unconfined: a run nobody approved.
	RequireConfined bool
	// Pipe runs the command without a terminal: stdout and stderr share
	// one pipe (their order kept), stdin is /dev/null. For writers that
	// do not want a terminal (a request's tty: false): faster for large
	// output, and no colour codes a terminal-less run would not print.
	Pipe bool
	// Caches, when set, replaces the shared caches a confined run may
	// write (the Go build cache, ~/.npm, ...) with this directory, kept
	// for one project: a run nobody approved cannot poison the caches
	// other projects build from. GOCACHE, npm's, pip's, yarn's and
	// XDG_CACHE_HOME point into it.
	Caches string
	// Approved says a person approved the run. A read_only run nobody
	// approved does not read the project's secret files (ProjectSecrets).
	Approved bool
	// Grants are paths outside the jail that the verdict names as
	// written (queue.Verdict.Grants: cp f /tmp/x/ names /tmp/x). A
	// confined run that writes and that a person approved may write
	// them, that run only: a path that exists as itself, one not there
	// yet through the nearest directory above it that is (never /).
	// Hidden and closed paths stay as they are. Ignored without
	// Approved.
	Grants []string
	// Hosts are the hosts a confined networked run reaches without
	// asking besides network_allow (queue.Verdict.Hosts: netproxy
	// rules), why each, and what it never reaches (Verdict.HostsBy,
	// HostsDenied).
	Hosts HostSet
}

// Run runs req (kind exec) with /bin/sh -c req.Command in req.Cwd (the
// current directory when empty) and returns its result and the SHA-256, in
// hex, of the output it appended to the log.
//
// The status is done (with the exit code; 128+signo for a child killed by a
// signal), timeout (killed at its timeout), killed (ctx was cancelled), or
// failed (could not start: cwd missing, not a directory or outside the
// jail, log or pty error) with a reason. It fills ExitCode, DurationMS,
// OutputTail (the last 64 KiB as valid UTF-8), OutputBytes, Log
// (queue.LogRel(req.ID)), StartedAt and FinishedAt; Decision and DecidedBy
// are left for the caller.
//
// On timeout or cancel the child's process group gets SIGTERM (and
// SIGCONT), SIGKILL after Grace, and any member left after the leader exits
// gets SIGKILL too. With Confine set, the child runs confined to
// opt.Profile (Result.Sandbox says how it ran) with a private TMPDIR. Where
// the run has a cgroup, every process it started is killed when it ends,
// whichever way, those that left its session (setsid) included; without
// one, such processes are not killed, and Run stops reading the pty shortly
// after the child exits even if they keep it open.
func (r *Runner) Run(ctx context.Context, req *queue.Request, opt Options) (queue.Result, string) {
	start := time.Now()
	// One reading of the settings for the whole run: a reload meanwhile
	// does not mix old and new (nor change a kill grace under way).
	set := r.now()
	res := queue.Result{Version: queue.Version, ID: req.ID, StartedAt: start}
	fail := func(err error) (queue.Result, string) {
		res.Status = queue.StatusFailed
		res.Reason = err.Error()
		res.FinishedAt = time.Now()
		return res, ""
	}
	if req.Kind != queue.KindExec {
		return fail(fmt.Errorf("exec: request %s is kind %q, not exec", req.ID, req.Kind))
	}
	if req.Command == "" {
		return fail(fmt.Errorf("exec: request %s has no command", req.ID))
	}
	if err := ctx.Err(); err != nil {
		res.Status = queue.StatusKilled
		res.Reason = "exec: cancelled before start"
		res.FinishedAt = time.Now()
		return res, ""
	}
	dir, err := resolveCwd(req.Cwd, opt.Jail)
	if err != nil {
		return fail(err)
	}

	var log *os.File
	if opt.LogPath != "" {
		log, err = OpenLog(opt.LogPath)
		if err != nil {
			return fail(err)
		}
		defer log.Close()
		res.Log = queue.LogRel(req.ID)
	}

	rows, cols := r.Rows, r.Cols
	if r.Size != nil {
		rows, cols = r.Size()
	}
	var master, tty *os.File
	ttyName := ""
	if opt.Pipe {
		master, tty, err = os.Pipe()
	} else {
		master, tty, err = openPTY(orDefault(rows, DefaultRows), orDefault(cols, DefaultCols))
		if err == nil {
			ttyName = tty.Name()
		}
	}
	if err != nil {
		res.Log = ""
		return fail(err)
	}
	box := r.confine(dir, ttyName, opt, set.Confine)
	defer box.close()
	res.Sandbox = box.label
	if opt.RequireConfined && (strings.HasPrefix(box.label, nonePrefix) || box.label == Unconfined) {
		master.Close()
		tty.Close()
		res.Log = ""
		return fail(fmt.Errorf("not run: allowed only confined, and this run could not be (%s)", box.label))
	}
	proxy, err := startProxy(box.box, req, opt.Hosts, set.Confine, r.Ask)
	if err != nil {
		master.Close()
		tty.Close()
		res.Log = ""
		return fail(fmt.Errorf("not run: the run's network proxy: %w", err))
	}
	defer proxy.close() // on the paths that do not reach the end
	if proxy != nil {
		// The sandbox line says how the run reaches the network.
		res.Sandbox += "; " + box.box.Network()
	}
	cg := r.cgroup()
	defer r.uncgroup(cg)
	env := r.env(req, dir, set)
	if box.tmp != "" {
		env = append(env, "TMPDIR="+box.tmp)
	}
	if opt.Caches != "" && box.box != nil {
		env = append(env, CacheEnv(opt.Caches)...)
	}
	if proxy != nil {
		env = sandbox.ProxyEnv(env, proxy.url)
	}
	cmd, direct := command(req.Command, dir, env)
	if boxed, _ := box.box.Boxed(); boxed && direct {
		// Through the helper, a program that cannot start fails there,
		// not here: the helper execs the shell instead.
		sh := shellCommand(req.Command, dir, env)
		box.box.Fallback(sh.Path, sh.Args)
	}
	var pidfd *int
	wire := func(cmd *osexec.Cmd) {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
		// A new session with the pty as its controlling terminal: the
		// child leads its own process group (pgid == pid), which is what
		// the kill sequence signals. Setpgid on top would fail with EPERM.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
		if opt.Pipe {
			cmd.Stdin = nil // /dev/null
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		}
		pidfd = pidFD(cmd.SysProcAttr)
	}
	wire(cmd)
	// What runs later with the person's rights (git's hooks and config,
	// .envrc, the agents' settings) is taken before a confined run that
	// writes, to be put back after it.
	guarded := box.guarded
	res.StartedAt = time.Now()
	err = sandbox.Start(cmd, box.box, cg)
	if err != nil && direct {
		// The program could not be started as it is (the confinement
		// forbids it, it went away): the shell runs the line instead and
		// says why as it would have, with its exit status.
		cmd = shellCommand(req.Command, dir, env)
		wire(cmd)
		err = sandbox.Start(cmd, box.box, cg)
	}
	_ = tty.Close() // the child holds its own copies
	if err != nil {
		_ = master.Close()
		res.Log = ""
		return fail(fmt.Errorf("exec: start: %w", err))
	}
	pgid := cmd.Process.Pid
	r.limit(pgid, set.Confine)

	if !opt.Pipe {
		r.track(req.ID, master) // for Input and Resize
	}
	var fan *fanout
	if opt.Output != nil {
		fan = newFanout(opt.Output)
	}
	p := newPump(master, log, fan)
	go p.run()
	exited := make(chan struct{})
	go func() {
		awaitExit(pidfd)
		_ = cmd.Wait() // the status is read from cmd.ProcessState
		close(exited)
	}()

	timeout := set.DefaultTimeout
	if req.TimeoutS > 0 {
		timeout = time.Duration(req.TimeoutS) * time.Second
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	res.Status = queue.StatusDone
	select {
	case <-exited:
	case <-timer.C:
		res.Status = queue.StatusTimeout
		res.Reason = fmt.Sprintf("exec: timed out after %s", timeout)
		r.stop(pgid, exited, cg, set.Grace)
	case <-ctx.Done():
		res.Status = queue.StatusKilled
		res.Reason = "exec: killed"
		r.stop(pgid, exited, cg, set.Grace)
	}
	// Nothing the run started outlives it: what it left behind, in its
	// session or out of it, goes now.
	cg.Kill(reapMax)
	// Its connections are gone with it: what it contacted is complete.
	res.Network = proxy.close()

	p.drain()
	if guarded != nil {
		if note := GuardNote(guarded.Restore()); note != "" {
			p.write([]byte(note))
		}
	}
	code := exitCode(cmd.ProcessState)
	if res.Status == queue.StatusDone && box.box != nil {
		spec := box.box.Spec()
		if note := box.explain(dir, code, p.tail.bytes(), &spec); note != "" {
			p.write([]byte(note))
		}
		if code != 0 && proxy != nil {
			if note := proxyNote(res.Network, p.tail.bytes()); note != "" {
				// A line of its own, whatever the output ended with
				// (npm's spinner ends without a newline).
				if t := p.tail.bytes(); len(t) > 0 && t[len(t)-1] != '\n' {
					note = "\n" + note
				}
				p.write([]byte(note))
			}
		}
	}
	r.untrack(req.ID, master)
	_ = master.Close()
	if fan != nil {
		fan.close()
	}

	res.ExitCode = &code
	res.OutputBytes = p.n
	res.OutputTail = tailText(p.tail.bytes(), TailSize)
	res.FinishedAt = time.Now()
	res.DurationMS = res.FinishedAt.Sub(res.StartedAt).Milliseconds()
	switch {
	case p.logErr != nil:
		res.Reason = joinReason(res.Reason, fmt.Sprintf("exec: write log: %v", p.logErr))
	case p.readErr != nil:
		res.Reason = joinReason(res.Reason, fmt.Sprintf("exec: read pty: %v", p.readErr))
	}
	return res, hex.EncodeToString(p.hash.Sum(nil))
}

// command is what runs line in dir with env: the program itself when
// bash would exec it straight away (Direct), the shell otherwise.
func command(line, dir string, env []string) (cmd *osexec.Cmd, direct bool) {
	if cmd := Direct(line, dir, env); cmd != nil {
		return cmd, true
	}
	return shellCommand(line, dir, env), false
}

// Direct is line's program as bash would exec it straight away, ready to
// start in dir with env (DirectArgv: one simple command of plain words;
// no exported function or BASH_ENV in env; a program found as bash would
// find it that execve runs as it is); nil when line needs the shell. A
// caller whose start of it fails runs line with the shell instead, which
// says why as it would have.
func Direct(line, dir string, env []string) *osexec.Cmd {
	if !directStart || ShellDialect() != "bash" {
		return nil
	}
	argv, ok := DirectArgv(line)
	if !ok || !shellFree(env) {
		return nil
	}
	path, ok := lookProgram(argv[0], dir, env)
	if !ok {
		return nil
	}
	denv, ok := directEnv(env, dir, path)
	if !ok {
		return nil
	}
	return &osexec.Cmd{Path: path, Args: argv, Dir: dir, Env: denv}
}

// shellCommand runs line with Shell() -c.
func shellCommand(line, dir string, env []string) *osexec.Cmd {
	return &osexec.Cmd{Path: Shell(), Args: []string{Shell(), "-c", line}, Dir: dir, Env: env}
}

// Resize changes the pty size of a running request (no-op if not running).
func (r *Runner) Resize(id string, rows, cols uint16) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.running[id]; m != nil {
		_ = setSize(m, rows, cols) // the run may be ending; nothing to report
	}
}

// inputWait bounds a write to a child's terminal.
const inputWait = 20 * time.Millisecond

// Input writes p to the terminal of a running request, as if typed (the
// console forwards its emulator's answers to queries such as the cursor
// position). It waits at most a few milliseconds: what the pty cannot
// take by then is dropped.
func (r *Runner) Input(id string, p []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.running[id]; m != nil {
		_ = m.SetWriteDeadline(time.Now().Add(inputWait))
		_, _ = m.Write(p)
	}
}

func (r *Runner) track(id string, master *os.File) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running == nil {
		r.running = make(map[string]*os.File)
	}
	r.running[id] = master
	if r.Size != nil {
		// A Resize between the pty's making and now found nothing to
		// resize: the size it set is the one to have.
		if rows, cols := r.Size(); rows > 0 && cols > 0 {
			_ = setSize(master, rows, cols)
		}
	}
}

// untrack forgets master, under the lock Resize holds, so a Resize never
// touches a closed descriptor.
func (r *Runner) untrack(id string, master *os.File) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running[id] == master {
		delete(r.running, id)
	}
}

// CacheEnv points the build tools' caches into dir, a project's own (see
// Options.Caches).
func CacheEnv(dir string) []string {
	return []string{"GOCACHE=" + filepath.Join(dir, "go-build"), "npm_config_cache=" + filepath.Join(dir, "npm"),
		"YARN_CACHE_FOLDER=" + filepath.Join(dir, "yarn"), "PIP_CACHE_DIR=" + filepath.Join(dir, "pip"),
		"XDG_CACHE_HOME=" + filepath.Join(dir, "xdg")}
}

// env is the child's environment: the inherited base and the filtered
// request env (BuildEnv), PWD matching the directory it starts in, and a
// TERM if the base had none.
func (r *Runner) env(req *queue.Request, dir string, s *settings) []string {
	// The base is inherited already; only the request's own env is
	// filtered here, and the request id comes last.
	env := withRequest(s.base, s.SecretPatterns, req.Env, req.ID)
	out := env[:0]
	term := false
	for _, kv := range env {
		switch {
		case len(kv) >= 4 && kv[:4] == "PWD=":
			continue
		case len(kv) >= 5 && kv[:5] == "TERM=":
			term = true
		}
		out = append(out, kv)
	}
	out = append(out, "PWD="+dir)
	if !term {
		out = append(out, "TERM=xterm-256color")
	}
	return out
}

// exitCode is the shell's convention: the exit status, or 128+signo for a
// child killed by a signal.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

func orDefault(v, def uint16) uint16 {
	if v == 0 {
		return def
	}
	return v
}

func joinReason(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
