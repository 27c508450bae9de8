package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/exec"
	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/policy"
	"github.com/sluice-dev/sluice/queue"
)

// app is what a command is built from: the configuration, the spool, and
// the engine's concrete parts (judge, actor, audit log, engine). Each is
// made the first time a command asks for it, so that run, hook, sandbox
// and check, which never ask for an engine, pay only for what they use.
type app struct {
	g *cli.Globals
	// policyFile and auditFile are --policy and --audit of the commands
	// that build an engine ("": the environment, else the default).
	policyFile, auditFile string
	// logf says what goes wrong while the engine carries out a request
	// (nil: nothing is said).
	logf func(string, ...any)

	cfg   *config
	sp    *queue.Spool
	judge *policy.Judge
	actor *exec.Actor
	log   *audit.Log
	eng   *queue.Engine
	// reconfigure applies a reloaded configuration to the actor's runner.
	reconfigure func(*config)
}

func newApp(g *cli.Globals) *app { return &app{g: g} }

// registerEngine adds --policy and --audit, the flags of the commands that
// build an engine.
func (a *app) registerEngine(fs *cli.FlagSet) {
	fs.StringVar(&a.policyFile, "policy", "", "policy `FILE` layered over the embedded default (env SLUICE_POLICY)")
	fs.StringVar(&a.auditFile, "audit", "", auditFlagHelp)
}

// config is config.toml (--config, $SLUICE_CONFIG or the default), read
// once.
func (a *app) config() (*config, error) {
	if a.cfg == nil {
		cfg, err := loadConfig(a.g.Config)
		if err != nil {
			return nil, err
		}
		a.cfg = cfg
	}
	return a.cfg, nil
}

// spool is the spool (--spool, $SLUICE_SPOOL or the default), opened once.
func (a *app) spool() (*queue.Spool, error) {
	if a.sp == nil {
		sp, err := a.g.OpenSpool()
		if err != nil {
			return nil, err
		}
		a.sp = sp
	}
	return a.sp, nil
}

// userPolicyFile is the policy file: --policy, $SLUICE_POLICY or the
// default; rules the console adds go there.
func (a *app) userPolicyFile() string {
	if a.policyFile != "" {
		return a.policyFile
	}
	if env := os.Getenv("SLUICE_POLICY"); env != "" {
		return env
	}
	return defaultPolicyFile()
}

// engine is the engine over the spool with its judge, actor and audit log,
// built on first use (config and spool first); close releases them.
func (a *app) engine() (*queue.Engine, error) {
	if a.eng != nil {
		return a.eng, nil
	}
	cfg, err := a.config()
	if err != nil {
		return nil, err
	}
	sp, err := a.spool()
	if err != nil {
		return nil, err
	}
	user, required := a.userPolicyFile(), a.policyFile != "" || os.Getenv("SLUICE_POLICY") != ""
	path, err := auditPath(a.auditFile)
	if err != nil {
		return nil, err
	}
	// The spool is where agents write: nothing there is ever a policy.
	if abs, err := filepath.Abs(user); err == nil && (abs == sp.Dir() || strings.HasPrefix(abs, sp.Dir()+string(filepath.Separator))) {
		return nil, fmt.Errorf("the policy file %s is inside the spool %s, where agents write: refusing it", abs, sp.Dir())
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
		return nil, err
	}
	log, err := audit.Open(path)
	if err != nil {
		return nil, err
	}
	sp.Recorder = log
	// Nothing this process runs may read its memory or environment
	// through /proc, nor attach to it.
	protectProcess()
	r := cfg.runner(sp.Dir(), user, path, stateDir(path), checkpointDir(), trustPath())
	actor := &exec.Actor{Runner: r, Jail: policy.Roots, Checkpoints: cfg.checkpointStore(), ProjectCaches: projectCacheDir()}
	judge.Machine = machine{runner: r, checkpoints: cfg.checkpointStore() != nil}
	// A reloaded configuration changes what new runs get.
	a.reconfigure = func(c *config) {
		nr := c.runner(sp.Dir(), user, path, stateDir(path), checkpointDir(), trustPath())
		r.Reconfigure(exec.Settings{EnvAllow: nr.EnvAllow, SecretPatterns: nr.SecretPatterns,
			DefaultTimeout: nr.DefaultTimeout, Grace: nr.Grace, Confine: nr.Confine})
	}
	a.judge, a.actor, a.log = judge, actor, log
	a.eng = &queue.Engine{Spool: sp, Judge: judge, Runner: actor, Recorder: log, AuditPath: log.Path(),
		MaxAuto: cfg.maxAuto(), Logf: a.logf}
	return a.eng, nil
}

// close releases what engine built: the cgroups the runner keeps for
// reuse, then the audit log.
func (a *app) close() {
	if a.actor != nil {
		a.actor.Runner.Close()
	}
	if a.log != nil {
		a.log.Close()
	}
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

// engineErrExit is 2 for a configuration or policy file that does not
// load or an unsafe path (configuration errors), 1 for anything else (the
// spool or the audit log failed).
func engineErrExit(err error) int {
	var le *policy.LoadError
	var ape *audit.PermError
	if errors.As(err, &le) || errors.As(err, &ape) {
		return cli.ExitUsage
	}
	return cli.ExitFail
}
