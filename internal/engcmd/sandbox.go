package engcmd

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	osexec "os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/sluice-dev/sluice/exec"
	"github.com/sluice-dev/sluice/exec/sandbox"
	"github.com/sluice-dev/sluice/internal/app"
	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/policy"
	"github.com/sluice-dev/sluice/queue"
)

const sandboxHelp = `Run COMMAND (a program and its arguments, not a shell line) in the
foreground, confined to a profile, the way sluice confines the commands it
runs:

  read_only   read the file system except secret paths; write only /dev/null,
              the terminal, a private temporary directory ($TMPDIR) and the
              writable caches; no sockets (socketpair only)
  mutating    read_only, plus writes inside the roots (the project)
  networked   mutating, plus the network through a proxy of its own, which
              lets through the --host given and network_allow and asks a
              person (through the spool) about other hosts

Home directories are closed: a confined command reads there only its
roots, the writable caches and the readable set (toolchains and tool
configs: ~/.gitconfig, ~/go, ~/.cargo/bin, ~/.rustup, ~/.pyenv, ...;
sandbox_readable and extra_sandbox_readable in config.toml). Secret paths
(~/.ssh, ~/.aws, ~/.gnupg, ~/.config/gh, ~/.netrc, ~/.docker/config.json,
/etc/shadow, sluice's own config, policy, audit log and spool, and what
config.toml adds) are never readable, inside a readable path too. The roots default
to the current directory and the git top level above it. On Linux this is
Landlock and seccomp (and, as root, every capability dropped), and, for
mutating and networked commands where sluice-box is installed beside
sluice, namespaces of their own with everything read-only but what they
may write; on macOS,
sandbox-exec. The command's processes live in a cgroup of their own where
one can be made, and none outlives the command.

The command inherits the environment sluice's own runs do: the names of a
built-in allow-list (PATH, HOME, TERM, LANG, LC_*, TMPDIR, the XDG and
toolchain directories, proxies, ...) and config.toml's env_allow, minus
secret names; nothing else.

  sluice sandbox --profile mutating -- go test ./...
  sluice sandbox --profile read_only -- bash -c 'cat README.md | wc -l'

Where the kernel cannot confine (sandbox = "prefer" in config.toml, the
default), the command runs unconfined with a warning on stderr; with
sandbox = "require", it does not run (exit 125).

Exit status: the command's own; 125 if sluice could not run it; 126 if it
is not executable; 127 if it is not found; 2 on a usage error.
`

func CmdSandbox(args []string, std cli.Stdio, g *cli.Globals) int {
	fs := cli.NewFlags("sandbox", "--profile read_only|mutating|networked [--root DIR]... -- COMMAND [ARG]...", sandboxHelp, std, g)
	prof := fs.String("profile", "", "the confinement: read_only, mutating or networked (required)")
	var roots cli.RootsFlag
	fs.Var(&roots, "root", "a `DIR` a mutating or networked command may write (repeat for more; default: the current directory and its git top level)")
	var hosts cli.HostsFlag
	fs.Var(&hosts, "host", "a `HOST` a networked command reaches without asking, besides network_allow (host, *.domain, host:port, IP, CIDR; repeat for more)")
	words, code, ok := fs.ParseArgs(args, false)
	if !ok {
		return code
	}
	if *prof == "" {
		return cli.UsageErr(std, "sandbox", "--profile is required (read_only, mutating or networked)")
	}
	profile, err := sandbox.ParseProfile(*prof)
	if err != nil {
		return cli.UsageErr(std, "sandbox", "%v", err)
	}
	if len(words) == 0 {
		return cli.UsageErr(std, "sandbox", "no command given (sluice sandbox --profile %s -- COMMAND...)", profile)
	}
	if profile.Network() && !exec.HostsProxy() {
		// The command's proxy lives in this process: sluice-engine's.
		return Handover(std, g, "sandbox", args)
	}
	// The thread that will start the command gets ready (its seccomp
	// filter compiled) while the configuration and the plan load.
	sandbox.Prewarm(profile)
	cfg, err := app.LoadConfig(g.Config)
	if err != nil {
		fmt.Fprintf(std.Err, "sluice sandbox: %v\n", err)
		return cli.ExitUsage
	}
	path, err := osexec.LookPath(words[0])
	if err != nil {
		fmt.Fprintf(std.Err, "sluice sandbox: %v\n", err)
		// Not there, looked up on $PATH or named by its path: 127, as
		// a shell says; there but not a program it may run: 126.
		if errors.Is(err, osexec.ErrNotFound) || errors.Is(err, iofs.ErrNotExist) {
			return 127
		}
		return 126
	}
	dir, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(std.Err, "sluice sandbox: %v\n", err)
		return cli.ExitNotRun
	}
	if len(roots) == 0 {
		roots = policy.Roots(dir)
	}
	spool := g.Spool
	if spool == "" {
		spool = os.Getenv("SLUICE_SPOOL")
	}
	if spool == "" {
		spool, _ = queue.DefaultDir()
	}
	auditFile, _ := app.AuditPath("")
	policyFile := os.Getenv("SLUICE_POLICY")
	if policyFile == "" {
		policyFile = app.DefaultPolicyFile()
	}
	conf := cfg.Confine(spool, policyFile, auditFile, app.StateDir(auditFile), app.CheckpointDir())
	// The command's cgroup is made on the other CPU while the plan loads.
	// Named for this process: should it be killed (an agent's timeout
	// sends SIGKILL), the next wrapper sweeps what the command left.
	var cg *sandbox.Cgroup
	cgReady := make(chan struct{})
	go func() {
		defer close(cgReady)
		cg, _ = sandbox.NewCgroup(strconv.Itoa(os.Getpid())+"-sandbox", conf.MaxProcs)
	}()
	defer func() {
		<-cgReady
		cg.Close()
	}()

	cmd := osexec.Command(path, words[1:]...)
	cmd.Args[0] = words[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// The agent's environment, through the allow-list as the engine's
	// runs have it (an agent may have exported a variable that carries
	// options or a program for the very command it was allowed), minus
	// secrets; the request id passes on if there is one.
	env := exec.BuildEnv(os.Environ(), cfg.EnvAllow, cfg.Secrets(), nil, os.Getenv(exec.RequestIDVar))

	var box *sandbox.Confinement
	var proxy *exec.RunProxy
	var guarded *exec.Guard // what later runs with the person's rights, as it was
	why := ""
	if conf.Mode == exec.SandboxOff {
		why = `sandbox = "off" in config.toml`
	} else if _, err := sandbox.Available(); err != nil {
		why = err.Error()
	} else {
		tmp, err := os.MkdirTemp("", "sluice-sandbox-")
		if err != nil {
			fmt.Fprintf(std.Err, "sluice sandbox: %v\n", err)
			return cli.ExitNotRun
		}
		defer os.RemoveAll(tmp)
		// The project's own caches, as the engine's runs have: nothing
		// confined writes a cache the person's own builds trust, but
		// for the downloads a networked command makes.
		caches := exec.ProjectCache(app.ProjectCacheDir(), roots)
		writable := []string{caches}
		if profile.Network() {
			writable = append(writable, conf.Fetch...)
		}
		if err := exec.MakeCaches(writable); err != nil {
			fmt.Fprintf(std.Err, "sluice sandbox: cache directory: %v\n", err)
			return cli.ExitNotRun
		}
		writable = append(writable, conf.Named...)
		env = append(env, exec.CacheEnv(caches)...)
		hidden := append(slices.Clone(conf.Hidden), conf.Spool)
		var masked []string
		// What a hook wraps is what the policy allowed alone: it does
		// not read the project's secret files (hidden from a read_only
		// line; read as empty by one that writes, where it is boxed),
		// and what later runs with the person's rights is read-only to
		// it where it is boxed, and put back after it in any case.
		if profile == sandbox.ReadOnly {
			hidden = append(hidden, exec.ProjectSecrets(roots, conf.SecretFiles)...)
		} else {
			masked = exec.ProjectSecrets(roots, conf.SecretFiles)
			guarded = exec.TakeGuard(roots)
		}
		spec := sandbox.Spec{Profile: profile, Roots: roots, Writable: writable,
			Hidden: hidden, Closed: conf.Closed, Readable: conf.Readable,
			TmpDir: tmp, TTY: app.TTYName(), Masked: masked, Box: conf.Box,
			Proxy: profile.Network() && sandbox.ProxySupported()}
		if guarded != nil {
			spec.Protect = guarded.Existing()
		}
		// Each wrapper is a new process: the base layer's plan is kept
		// for the next one beside the project caches (never trusted: it is
		// checked before it is used).
		if plans := filepath.Join(filepath.Dir(app.ProjectCacheDir()), "plans"); filepath.IsAbs(plans) {
			spec.PlanCache = plans
		}
		box, err = sandbox.Prepare(spec)
		if err != nil {
			fmt.Fprintf(std.Err, "sluice sandbox: %v\n", err)
			return cli.ExitNotRun
		}
		defer box.Close()
		env = append(env, "TMPDIR="+tmp)
		// A networked command's proxy lives in this process; it asks a
		// person through the spool.
		if proxy, err = app.SandboxProxy(box, words, dir, hosts, conf, spool); err != nil {
			fmt.Fprintf(std.Err, "sluice sandbox: the command's network proxy: %v\n", err)
			return cli.ExitNotRun
		}
		if proxy != nil {
			defer proxy.Close()
			env = sandbox.ProxyEnv(env, proxy.URL())
			if box.ProxyShared() {
				fmt.Fprintf(std.Err, "sluice sandbox: %s\n", box.Network())
			}
		}
	}
	if box == nil {
		if conf.Mode == exec.SandboxRequire {
			fmt.Fprintf(std.Err, "sluice sandbox: cannot confine here (%s) and config.toml says sandbox = \"require\"; not running %s\n", why, cli.Show(words[0]))
			return cli.ExitNotRun
		}
		fmt.Fprintf(std.Err, "sluice sandbox: warning: running unconfined: %s\n", why)
	}
	cmd.Env = env
	// `SHELL -c LINE`, the shape 'sluice hook' gives an agent's allowed
	// command: where bash would exec LINE's program straight away, it
	// starts without the shell's own start in between.
	shellCmd := cmd
	if len(words) == 3 && path == exec.Shell() && words[1] == "-c" {
		if d := exec.Direct(words[2], dir, env); d != nil {
			d.Stdin, d.Stdout, d.Stderr = cmd.Stdin, cmd.Stdout, cmd.Stderr
			cmd = d
			// Boxed, a start that fails does so in the helper, which
			// then execs the shell as below.
			box.Fallback(shellCmd.Path, shellCmd.Args)
		}
	}
	app.ProtectProcess() // no core dumps, in the command either
	<-cgReady
	// Confined, the command starts in a session of its own, without a
	// controlling terminal: nothing it runs can type into the agent's
	// terminal (TIOCSTI needs it as the controlling one), nor read
	// /dev/tty. The signals the terminal or the agent send this process
	// are passed on to the command's process group; unconfined, it shares
	// this process's group and gets the terminal's Ctrl-C itself.
	sigs := make(chan os.Signal, 4)
	if box != nil {
		for _, c := range []*osexec.Cmd{cmd, shellCmd} {
			if c.SysProcAttr == nil {
				c.SysProcAttr = &syscall.SysProcAttr{}
			}
			c.SysProcAttr.Setsid = true
		}
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGHUP)
		defer signal.Stop(sigs)
	} else {
		signal.Ignore(syscall.SIGINT, syscall.SIGQUIT)
	}
	err = sandbox.Start(cmd, box, cg)
	if err != nil && cmd != shellCmd {
		cmd = shellCmd // the shell says why, as it would have
		err = sandbox.Start(cmd, box, cg)
	}
	if err != nil {
		fmt.Fprintf(std.Err, "sluice sandbox: %v\n", err)
		return 126
	}
	if box != nil {
		pgid := cmd.Process.Pid
		go func() {
			for s := range sigs {
				_ = syscall.Kill(-pgid, s.(syscall.Signal))
			}
		}()
	}
	err = cmd.Wait()
	// Nothing the command started outlives it.
	cg.Kill(time.Second)
	if proxy != nil {
		if note := exec.ProxyNote(proxy.Close(), nil); note != "" && err != nil {
			fmt.Fprint(std.Err, note)
		}
	}
	if guarded != nil {
		if note := exec.GuardNote(guarded.Restore()); note != "" {
			fmt.Fprint(std.Err, note)
		}
	}
	var ee *osexec.ExitError
	switch {
	case err == nil:
		return cli.ExitOK
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	fmt.Fprintf(std.Err, "sluice sandbox: %v\n", err)
	return cli.ExitNotRun
}
