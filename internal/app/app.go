package app

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

// App is what a command is built from: the configuration, the spool, and
// the engine's concrete parts (judge, actor, audit log, engine). Each is
// made the first time a command asks for it, so that run, hook, sandbox
// and check, which never ask for an engine, pay only for what they use.
type App struct {
	g *cli.Globals
	// PolicyFile and auditFile are --policy and --audit of the commands
	// that build an engine ("": the environment, else the default).
	PolicyFile, AuditFile string
	// Logf says what goes wrong while the engine carries out a request
	// (nil: nothing is said).
	Logf func(string, ...any)

	Cfg   *Config
	Sp    *queue.Spool
	Judge *policy.Judge
	Actor *exec.Actor
	Log   *audit.Log
	eng   *queue.Engine
	// Reconfigure applies a reloaded configuration to the actor's runner.
	Reconfigure func(*Config)
}

func New(g *cli.Globals) *App { return &App{g: g} }

// RegisterEngine adds --policy and --audit, the flags of the commands that
// build an engine.
func (a *App) RegisterEngine(fs *cli.FlagSet) {
	fs.StringVar(&a.PolicyFile, "policy", "", "policy `FILE` layered over the embedded default (env SLUICE_POLICY)")
	fs.StringVar(&a.AuditFile, "audit", "", AuditFlagHelp)
}

// Config is config.toml (--config, $SLUICE_CONFIG or the default), read
// once.
func (a *App) Config() (*Config, error) {
	if a.Cfg == nil {
		cfg, err := LoadConfig(a.g.Config)
		if err != nil {
			return nil, err
		}
		a.Cfg = cfg
	}
	return a.Cfg, nil
}

// Spool is the spool (--spool, $SLUICE_SPOOL or the default), opened once.
func (a *App) Spool() (*queue.Spool, error) {
	if a.Sp == nil {
		sp, err := a.g.OpenSpool()
		if err != nil {
			return nil, err
		}
		a.Sp = sp
	}
	return a.Sp, nil
}

// UserPolicyFile is the policy file: --policy, $SLUICE_POLICY or the
// default; rules the console adds go there.
func (a *App) UserPolicyFile() string {
	if a.PolicyFile != "" {
		return a.PolicyFile
	}
	if env := os.Getenv("SLUICE_POLICY"); env != "" {
		return env
	}
	return DefaultPolicyFile()
}

// Engine is the engine over the spool with its judge, actor and audit log,
// built on first use (config and spool first); close releases them.
func (a *App) Engine() (*queue.Engine, error) {
	if a.eng != nil {
		return a.eng, nil
	}
	cfg, err := a.Config()
	if err != nil {
		return nil, err
	}
	sp, err := a.Spool()
	if err != nil {
		return nil, err
	}
	user, required := a.UserPolicyFile(), a.PolicyFile != "" || os.Getenv("SLUICE_POLICY") != ""
	path, err := AuditPath(a.AuditFile)
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
	own := OwnPaths(user, sp.Dir())
	for _, p := range []string{path, cfg.Path, filepath.Dir(defaultConfigFile())} {
		if abs, err := filepath.Abs(p); err == nil && p != "" && p != "." {
			own = append(own, abs)
		}
	}
	opts := policy.Options{User: user, UserRequired: required, Protect: own,
		ProgramDirs: filepath.SplitList(os.Getenv("PATH")), Shell: exec.ShellDialect(),
		NetworkAllow: cfg.NetworkAllow, NetworkDeny: cfg.NetworkDeny}
	judge := &policy.Judge{Options: opts, Trusts: policy.TrustStoreFor(TrustPath())}
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
	ProtectProcess()
	r := cfg.runner(sp.Dir(), user, path, StateDir(path), CheckpointDir(), TrustPath())
	// A networked run's question about a host goes through the spool,
	// where every front end sees it.
	r.Ask = NetworkAsk(sp, log.Path())
	actor := &exec.Actor{Runner: r, Jail: policy.Roots, Checkpoints: cfg.CheckpointStore(), ProjectCaches: ProjectCacheDir()}
	judge.Machine = machine{runner: r, checkpoints: cfg.CheckpointStore() != nil}
	// A reloaded configuration changes what new runs get.
	a.Reconfigure = func(c *Config) {
		judge.SetNetwork(c.NetworkAllow, c.NetworkDeny)
		nr := c.runner(sp.Dir(), user, path, StateDir(path), CheckpointDir(), TrustPath())
		r.Reconfigure(exec.Settings{EnvAllow: nr.EnvAllow, SecretPatterns: nr.SecretPatterns,
			DefaultTimeout: nr.DefaultTimeout, Grace: nr.Grace, Confine: nr.Confine})
	}
	a.Judge, a.Actor, a.Log = judge, actor, log
	a.eng = &queue.Engine{Spool: sp, Judge: judge, Runner: actor, Recorder: log, AuditPath: log.Path(),
		MaxAuto: cfg.maxAuto(), Logf: a.Logf}
	return a.eng, nil
}

// Close releases what engine built: the cgroups the runner keeps for
// reuse, then the audit log.
func (a *App) Close() {
	if a.Actor != nil {
		a.Actor.Runner.Close()
	}
	if a.Log != nil {
		a.Log.Close()
	}
}

// StateDir is sluice's own state directory when the audit log is in one
// (~/.local/state/sluice), hidden from confined runs whole; "" for a log
// elsewhere, which is hidden alone.
func StateDir(auditFile string) string {
	if d := filepath.Dir(auditFile); filepath.Base(d) == "sluice" {
		return d
	}
	return ""
}

// EngineErrExit is 2 for a configuration or policy file that does not
// load or an unsafe path (configuration errors), 1 for anything else (the
// spool or the audit log failed).
func EngineErrExit(err error) int {
	var le *policy.LoadError
	var ape *audit.PermError
	if errors.As(err, &le) || errors.As(err, &ape) {
		return cli.ExitUsage
	}
	return cli.ExitFail
}
