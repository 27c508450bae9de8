package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/exec"
	"github.com/sluice-dev/sluice/policy"
	"github.com/sluice-dev/sluice/queue"
)

const serveHelp = `Watch the spool and act on what the policy decides alone: allowed requests
are run (at most --max-auto at once), denied ones are refused with the
policy's reason, and requests the policy asks about wait for a person
('sluice approve ID', 'sluice deny ID', or the console). Every step goes to
the audit log before it happens. Logs go to stderr.

SIGINT or SIGTERM stops it cleanly: the commands it started are killed and
answered "killed"; nothing is left claimed.

--hub URL also bridges this box to a fleet hub ('sluice hub --help'): what
waits for a person here is published there, and decisions made at the
hub's consoles are applied here, through this box's own claim, confinement
and audit log. The box's credentials come from --hub-creds (default
~/.config/sluice/hub.creds, written by 'sluice hub add-box NAME'). A hub
that is down changes nothing here: the box serves on, and publishes what
waits once the hub is back. The bridge is sluice-hub, run as a child.

Exit status: 0 when stopped; 1 when the spool or the audit log cannot be
used; 2 for bad flags, a configuration or policy file that does not load,
or an unsafe path.
`

// engineFlags choose the policy and audit log an engine uses.
type engineFlags struct {
	policyFlags
	audit string
	// reconfigure applies a reloaded configuration to the engine built
	// last (set by engine).
	reconfigure func(*config)
}

func (ef *engineFlags) register(fs *flagSet) {
	fs.StringVar(&ef.file, "policy", "", "policy `FILE` layered over the embedded default (env SLUICE_POLICY)")
	fs.StringVar(&ef.audit, "audit", "", auditFlagHelp)
}

// engine builds the engine for the spool, with its recorder to close.
func (ef *engineFlags) engine(sp *queue.Spool, cfg *config, logf func(string, ...any)) (*queue.Engine, *audit.Log, error) {
	user, required := ef.file, ef.file != ""
	if user == "" {
		if env := os.Getenv("SLUICE_POLICY"); env != "" {
			user, required = env, true
		} else {
			user = defaultPolicyFile()
		}
	}
	path, err := auditPath(ef.audit)
	if err != nil {
		return nil, nil, err
	}
	// The spool is where agents write: nothing there is ever a policy.
	if abs, err := filepath.Abs(user); err == nil && (abs == sp.Dir() || strings.HasPrefix(abs, sp.Dir()+string(filepath.Separator))) {
		return nil, nil, fmt.Errorf("the policy file %s is inside the spool %s, where agents write: refusing it", abs, sp.Dir())
	}
	// sluice's own files where this engine actually has them: the policy,
	// the configuration (--config too) and its directory (themes), the
	// spool, the audit log (--audit too).
	own := ownPaths(user, sp.Dir())
	for _, p := range []string{path, cfg.path, filepath.Dir(defaultConfigFile())} {
		if abs, err := filepath.Abs(p); err == nil && p != "" && p != "." {
			own = append(own, abs)
		}
	}
	opts := policy.Options{User: user, UserRequired: required, Protect: own,
		ProgramDirs: filepath.SplitList(os.Getenv("PATH")), Shell: exec.ShellDialect()}
	judge := &policy.Judge{Options: opts, Trusts: policy.TrustStoreFor(trustPath())}
	if err := judge.Start(); err != nil {
		return nil, nil, err
	}
	log, err := audit.Open(path)
	if err != nil {
		return nil, nil, err
	}
	sp.Recorder = log
	// Nothing this process runs may read its memory or environment
	// through /proc, nor attach to it.
	protectProcess()
	r := cfg.runner(sp.Dir(), user, path, stateDir(path), checkpointDir(), trustPath())
	runner := &exec.Actor{Runner: r, Jail: policy.Roots, Checkpoints: cfg.checkpointStore(), ProjectCaches: projectCacheDir()}
	judge.Machine = machine{runner: r, checkpoints: cfg.checkpointStore() != nil}
	// A reloaded configuration changes what new runs get.
	ef.reconfigure = func(c *config) {
		nr := c.runner(sp.Dir(), user, path, stateDir(path), checkpointDir(), trustPath())
		r.Reconfigure(exec.Settings{EnvAllow: nr.EnvAllow, SecretPatterns: nr.SecretPatterns,
			DefaultTimeout: nr.DefaultTimeout, Grace: nr.Grace, Confine: nr.Confine})
	}
	return &queue.Engine{Spool: sp, Judge: judge, Runner: runner, Recorder: log, AuditPath: log.Path(),
		MaxAuto: cfg.maxAuto(), Logf: logf}, log, nil
}

// stateDir is sluice's own state directory when the audit log is in one
// (~/.local/state/sluice), hidden from confined runs whole; "" for a log
// elsewhere, which is hidden alone.
func stateDir(auditFile string) string {
	if d := filepath.Dir(auditFile); filepath.Base(d) == "sluice" {
		return d
	}
	return ""
}

// engineErrExit is 2 for a policy file that does not load or an unsafe
// path (configuration errors), 1 for anything else (the audit log failed).
func engineErrExit(err error) int {
	var le *policy.LoadError
	var ape *audit.PermError
	if errors.As(err, &le) || errors.As(err, &ape) {
		return exitUsage
	}
	return exitFail
}

func cmdServe(args []string, std stdio, g *globals) int {
	fs := newFlags("serve", "[--policy FILE] [--audit FILE] [--max-auto N] [--hub URL [--hub-creds FILE]]", serveHelp, std, g)
	var ef engineFlags
	ef.register(fs)
	maxAuto := fs.Int("max-auto", 0, "run at most `N` auto-allowed requests at once (default max_auto in config.toml, else 4)")
	hubURL := fs.String("hub", "", "also bridge this box to the fleet hub at `URL` (nats://HOST:PORT)")
	hubCreds := fs.String("hub-creds", "", "the box's hub credentials `FILE` (default ~/.config/sluice/hub.creds)")
	pos, code, ok := fs.parse(args, true)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageErr(std, "serve", "takes no arguments")
	}
	if *maxAuto < 0 || *maxAuto > maxMaxAuto {
		return usageErr(std, "serve", "--max-auto must be between 1 and %d", maxMaxAuto)
	}
	cfg, err := loadConfig(g.config)
	if err != nil {
		fmt.Fprintf(std.err, "sluice serve: %v\n", err)
		return exitUsage
	}
	sp, err := g.openSpool()
	if err != nil {
		return spoolErr(std, "serve", err)
	}
	logw := newLineWriter(std.err)
	defer logw.Close()
	logf := func(format string, args ...any) {
		fmt.Fprintf(logw, "%s sluice serve: %s\n", time.Now().Format("15:04:05"), show(fmt.Sprintf(format, args...)))
	}
	eng, log, err := ef.engine(sp, cfg, logf)
	if err != nil {
		fmt.Fprintf(std.err, "sluice serve: %v\n", err)
		return engineErrExit(err)
	}
	defer log.Close()
	defer eng.Runner.(*exec.Actor).Runner.Close() // the cgroups kept for reuse
	if *maxAuto > 0 {
		eng.MaxAuto = *maxAuto
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	logf("watching %s (audit log %s)", sp.Dir(), log.Path())
	if text, off := sandboxStatus(eng.Runner.(*exec.Actor).Runner.Confine); off {
		logf("commands run UNCONFINED: %s", text)
	} else {
		logf("commands run confined by %s", text)
	}
	cw := &configWatch{flagValue: g.config,
		apply: func(old, nw *config) {
			ef.reconfigure(nw)
			logf("%s", reloadedText(nw.path, old, nw))
		},
		problem: func(err error) {
			if err != nil {
				logf("configuration NOT reloaded, the last good one stays in force: %v", err)
			}
		}}
	cw.start(ctx, cfg)
	go policy.TrustStoreFor(trustPath()).ExpireEvery(ctx, trustExpiry, log, logf)
	go softMemory(ctx)
	if *hubURL != "" || *hubCreds != "" {
		if err := hubBridge(ctx, *hubURL, *hubCreds, sp.Dir(), log.Path(), logf); err != nil {
			fmt.Fprint(std.err, err)
			return exitUsage
		}
	}
	eng.Serve(ctx)
	logf("stopped")
	return exitOK
}
