package app

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/checkpoint"
	"github.com/sluice-dev/sluice/exec"
	"github.com/sluice-dev/sluice/exec/sandbox"
)

// secretPatterns is the list of environment names kept from commands.
func (c *Config) Secrets() []string {
	base := exec.DefaultSecretPatterns
	if c.SecretPatterns != nil {
		base = c.SecretPatterns
	}
	return append(append([]string{}, base...), c.ExtraSecretPatterns...)
}

// runner is the pty runner this configuration asks for; own are sluice's
// own files and directories (policy, audit log, config), hidden from
// confined runs like the spool.
func (c *Config) runner(spool string, own ...string) *exec.Runner {
	// What the runs of an engine that died left running dies now, before
	// this one answers their claims.
	sandbox.SweepStale()
	return &exec.Runner{
		BaseEnv:        os.Environ(),
		EnvAllow:       c.EnvAllow,
		SecretPatterns: c.Secrets(),
		DefaultTimeout: c.DefaultTimeout,
		Grace:          c.KillGrace,
		Confine:        c.Confine(spool, own...),
	}
}

// CheckpointStore is where runs are checkpointed, or nil when
// checkpoints = false.
func (c *Config) CheckpointStore() *checkpoint.Store {
	if c.Checkpoints != nil && !*c.Checkpoints {
		return nil
	}
	return &checkpoint.Store{Dir: CheckpointDir()}
}

// CheckpointRetention is checkpoint_keep and checkpoint_max_age, defaulted.
func (c *Config) CheckpointRetention() (keep int, maxAge time.Duration) {
	keep, maxAge = 200, 30*24*time.Hour
	if c.CheckpointKeep > 0 {
		keep = c.CheckpointKeep
	}
	if c.CheckpointMaxAge > 0 {
		maxAge = c.CheckpointMaxAge
	}
	return keep, maxAge
}

// ProjectCacheDir holds the per-project caches of runs the policy allows
// with a checkpoint: $XDG_CACHE_HOME/sluice/projects (~/.cache/...).
func ProjectCacheDir() string {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "sluice", "projects")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "sluice", "projects")
}

// CheckpointDir is $XDG_STATE_HOME/sluice/checkpoints (~/.local/state/...).
func CheckpointDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "sluice", "checkpoints")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".local", "state", "sluice", "checkpoints")
}

// hookConfine reports whether hooks wrap the shell commands they allow in
// 'sluice sandbox' (hook_confine, default true).
func (c *Config) ConfineHook() bool { return c.HookConfine == nil || *c.HookConfine }

// SandboxMode is the sandbox key, prefer when unset.
func (c *Config) SandboxMode() string {
	if c.Sandbox == "" {
		return exec.SandboxPrefer
	}
	return c.Sandbox
}

// Confine is the runner's confinement: the mode, the hidden paths (the
// configured secrets, sluice's own files, the spool) and the writable
// caches.
func (c *Config) Confine(spool string, own ...string) *exec.Confine {
	home, _ := os.UserHomeDir()
	hidden := exec.DefaultHidden(home)
	if c.SandboxHidden != nil {
		hidden = expandHome(c.SandboxHidden, home)
	}
	hidden = append(hidden, expandHome(c.ExtraSandboxHidden, home)...)
	if cfg := defaultConfigFile(); cfg != "" {
		hidden = append(hidden, filepath.Dir(cfg)) // ~/.config/sluice: policy, config, themes
	}
	if c.Path != "" {
		hidden = append(hidden, c.Path)
	}
	for _, p := range own {
		if p != "" {
			hidden = append(hidden, p)
		}
	}
	writable := exec.DefaultWritable(os.Environ(), home)
	var named []string // what the person named: writable for every confined run
	if c.SandboxWritable != nil {
		writable = expandHome(c.SandboxWritable, home)
		named = writable
	}
	named = append(slices.Clone(named), expandHome(c.ExtraSandboxWritable, home)...)
	writable = append(writable, expandHome(c.ExtraSandboxWritable, home)...)
	readable := exec.DefaultReadable(os.Environ(), home)
	if c.SandboxReadable != nil {
		readable = expandHome(c.SandboxReadable, home)
	}
	readable = append(readable, expandHome(c.ExtraSandboxReadable, home)...)
	mode := c.Sandbox
	if mode == "" {
		mode = exec.SandboxPrefer
	}
	conf := &exec.Confine{Mode: mode, Hidden: hidden, Spool: spool, Writable: writable, MaxProcs: c.MaxProcs,
		Closed: exec.DefaultClosed(home), Readable: readable, Fetch: exec.DefaultFetchCaches(os.Environ(), home), Named: named,
		Box: sandbox.BoxPath()}
	c.network(conf)
	return conf
}

// expandHome turns a leading ~ into home.
func expandHome(paths []string, home string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		switch {
		case p == "~":
			p = home
		case strings.HasPrefix(p, "~/"):
			p = filepath.Join(home, p[2:])
		}
		out = append(out, p)
	}
	return out
}

// maxAuto is max_auto, or the default 4.
func (c *Config) maxAuto() int {
	if c.MaxAuto > 0 {
		return c.MaxAuto
	}
	return 4
}
