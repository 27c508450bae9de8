package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/sluice-dev/sluice/checkpoint"
	"github.com/sluice-dev/sluice/exec"
	"github.com/sluice-dev/sluice/exec/sandbox"
)

// config is config.toml: how the engine runs things and how the console
// behaves. Every field is optional; the zero value means the default.
type config struct {
	// MaxAuto bounds auto-allowed runs at once.
	MaxAuto int `toml:"max_auto"`
	// DefaultTimeout is the timeout of a run whose request has no timeout_s.
	DefaultTimeout time.Duration `toml:"default_timeout"`
	// KillGrace is the wait between SIGTERM and SIGKILL.
	KillGrace time.Duration `toml:"kill_grace"`
	// EnvAllow adds names (or PREFIX_* globs) to the environment a run
	// inherits (exec.DefaultEnvAllow).
	EnvAllow []string `toml:"env_allow"`
	// SecretPatterns replaces the default list of environment names kept
	// from commands; ExtraSecretPatterns adds to it.
	SecretPatterns      []string `toml:"secret_patterns"`
	ExtraSecretPatterns []string `toml:"extra_secret_patterns"`

	// Sandbox is prefer (confine where the kernel can, else run
	// unconfined and say so), require (where it cannot, nothing runs
	// without a person) or off.
	Sandbox string `toml:"sandbox"`
	// SandboxWritable replaces the caches every confined run may write;
	// ExtraSandboxWritable adds to them.
	SandboxWritable      []string `toml:"sandbox_writable"`
	ExtraSandboxWritable []string `toml:"extra_sandbox_writable"`
	// SandboxHidden replaces the secret paths no confined run reads;
	// ExtraSandboxHidden adds to them. sluice's own files are always
	// hidden.
	SandboxHidden      []string `toml:"sandbox_hidden"`
	ExtraSandboxHidden []string `toml:"extra_sandbox_hidden"`
	// SandboxReadable replaces the paths in home every confined run may
	// read (the rest of home is closed); ExtraSandboxReadable adds to
	// them. A hidden path stays hidden inside a readable one.
	SandboxReadable      []string `toml:"sandbox_readable"`
	ExtraSandboxReadable []string `toml:"extra_sandbox_readable"`
	// MaxProcs bounds the processes of one run.
	MaxProcs int `toml:"max_procs"`
	// HookConfine wraps the shell commands a hook allows in 'sluice
	// sandbox' (default true), so that the agent runs them confined.
	HookConfine *bool `toml:"hook_confine"`
	// Checkpoints: snapshot the project before and after every run that
	// may change files (default true); CheckpointKeep and
	// CheckpointMaxAge bound how many runs' checkpoints are kept.
	Checkpoints      *bool         `toml:"checkpoints"`
	CheckpointKeep   int           `toml:"checkpoint_keep"`
	CheckpointMaxAge time.Duration `toml:"checkpoint_max_age"`

	Console consoleConfig `toml:"console"`

	// path is the file this came from ("" for none).
	path string
}

// consoleConfig is the [console] table.
type consoleConfig struct {
	Theme  string        `toml:"theme"`  // auto, dark, light, high-contrast, mono or a user theme
	Bell   *bool         `toml:"bell"`   // ring the terminal bell when a request needs a person
	Notify *bool         `toml:"notify"` // OSC 9 / OSC 777 desktop notifications
	Grace  time.Duration `toml:"grace"`  // approve keys stay inert this long after the selection changes
	// History is how many past requests History loads from the audit
	// log at start (default 200; 0: none, only what happens from now).
	History *int `toml:"history"`
	// TrustMinutes is how long T trusts a rule for an agent session.
	TrustMinutes int `toml:"trust_minutes"`
}

// trustMinutes is [console] trust_minutes, defaulted (15).
func (c consoleConfig) trustMinutes() time.Duration {
	if c.TrustMinutes > 0 {
		return time.Duration(c.TrustMinutes) * time.Minute
	}
	return 15 * time.Minute
}

// history is [console] history, defaulted.
func (c consoleConfig) history() int {
	if c.History == nil {
		return defaultHistory
	}
	return *c.History
}

const configHelp = `Configuration is --config FILE, else $SLUICE_CONFIG, else
$XDG_CONFIG_HOME/sluice/config.toml (~/.config/sluice/config.toml), which
may be absent. A running console or 'sluice serve' reads it again when it
changes (within a second): new runs get the new settings; a broken edit is
reported (the console's header says CONFIG NOT RELOADED) and the last good
configuration stays in force; max_auto and [console] theme and history wait
for the next start. Every key is optional:

  max_auto = 4                     # auto-allowed runs at once
  default_timeout = "10m"          # for requests without timeout_s
  kill_grace = "2s"                # SIGTERM -> SIGKILL
  env_allow = ["DATABASE_URL", "MY_*"]  # names (or PREFIX_* globs) a run
                                   # inherits besides the built-in list (PATH,
                                   # HOME, USER, TERM, LANG, LC_*, TZ, TMPDIR,
                                   # XDG dirs, toolchain homes, CI, proxies,
                                   # ...); nothing else reaches a run
  secret_patterns = ["*_TOKEN"]    # replaces the built-in list of names
                                   # kept out of commands' environments, even
                                   # when allowed (unless env_allow names one
                                   # exactly)
  extra_secret_patterns = ["MY_*"] # added to it

  sandbox = "prefer"               # confine each run to its verdict's profile
                                   # where the kernel can (Landlock, seccomp;
                                   # Seatbelt on macOS), else run unconfined
                                   # and say so; "require": where it cannot,
                                   # nothing runs without a person; "off"
  sandbox_writable = ["~/.cache/go-build"]  # replaces the caches every
                                   # confined run may write (default: the Go
                                   # build and module caches, ~/.npm,
                                   # ~/.cargo/registry and git)
  extra_sandbox_writable = []      # added to them
  sandbox_hidden = ["~/.ssh"]      # replaces the secret paths no confined
                                   # run reads (default: ~/.ssh, ~/.aws,
                                   # ~/.gnupg, ~/.config/gh, ~/.netrc,
                                   # ~/.docker/config.json, /etc/shadow, ...)
  extra_sandbox_hidden = []        # added to them; sluice's own config,
                                   # policy, audit log and spool are always
                                   # hidden
  sandbox_readable = ["~/go"]      # replaces what confined runs may read in
                                   # the home directories, which are closed
                                   # otherwise (default: toolchains and tool
                                   # configs: ~/.gitconfig, ~/go, ~/.cargo/bin,
                                   # ~/.rustup, ~/.npm, ~/.pyenv, ... see the
                                   # README); the project is always readable
  extra_sandbox_readable = []      # added to them
  max_procs = 1024                 # processes one run may have at once
  checkpoints = true               # snapshot the project (a shadow git
                                   # repository under ~/.local/state/sluice/
                                   # checkpoints; your own repository is not
                                   # touched) before and after every run that
                                   # may change files: results list the files
                                   # changed, 'sluice undo ID' restores them
  checkpoint_keep = 200            # the newest runs whose checkpoints are kept
  checkpoint_max_age = "720h"      # and for how long at most
  hook_confine = true              # a shell command an agent's hook allows
                                   # comes back wrapped in 'sluice sandbox
                                   # --profile P', so the agent runs it
                                   # confined (when the kernel can confine
                                   # and sandbox is not "off")

  [console]
  theme = "auto"     # auto, dark, light, high-contrast, mono, or a file
                     # in ~/.config/sluice/themes/NAME.toml
  bell = true        # terminal bell when a request needs you
  notify = true      # desktop notification (OSC 9 / OSC 777)
  grace = "425ms"    # approve keys are inert this long after a change
  trust_minutes = 15 # how long T trusts a command's rule for that agent session
  history = 200      # past requests History loads from the audit log at
                     # start (0: none); it then follows the log, so what
                     # other consoles and 'sluice approve' decide shows too
`

// knownConfigKeys are config.toml's keys, as spelled.
var knownConfigKeys = map[string]bool{"max_auto": true, "default_timeout": true, "kill_grace": true,
	"env_allow": true, "secret_patterns": true, "extra_secret_patterns": true, "console": true,
	"sandbox": true, "sandbox_writable": true, "extra_sandbox_writable": true,
	"sandbox_hidden": true, "extra_sandbox_hidden": true, "max_procs": true,
	"sandbox_readable": true, "extra_sandbox_readable": true, "hook_confine": true,
	"checkpoints": true, "checkpoint_keep": true, "checkpoint_max_age": true,
	"console.theme": true, "console.bell": true, "console.notify": true, "console.grace": true, "console.history": true, "console.trust_minutes": true}

// knownKeysText lists the keys for an error message.
const knownKeysText = "max_auto, default_timeout, kill_grace, env_allow, secret_patterns, extra_secret_patterns, " +
	"sandbox, sandbox_writable, extra_sandbox_writable, sandbox_hidden, extra_sandbox_hidden, sandbox_readable, extra_sandbox_readable, max_procs, hook_confine, checkpoints, checkpoint_keep, checkpoint_max_age, " +
	"[console] theme, bell, notify, grace, history, trust_minutes"

// unknownKey is the error for key k, which config.toml does not have: the
// line it is on, the known keys closest to it, and every known key.
func unknownKey(data []byte, k toml.Key) error {
	where := ""
	if n := keyLine(data, k); n > 0 {
		where = fmt.Sprintf("line %d: ", n)
	}
	known := make([]string, 0, len(knownConfigKeys))
	for name := range knownConfigKeys {
		known = append(known, name)
	}
	slices.Sort(known)
	hint := ""
	if near := didYouMean(k.String(), known); len(near) > 0 {
		hint = "; did you mean " + orList(near, func(s string) string {
			if s == "console" {
				return "[console]" // the table
			}
			return s
		}) + "?"
	}
	return fmt.Errorf("%sunknown key %s%s (known: %s)", where, k.String(), hint, knownKeysText)
}

// keyLine is the line of data (1 for the first) that defines key k, or
// its table, or 0 when it cannot be told: a look at each line's key or
// [table] header, enough for config.toml's flat keys and one table.
func keyLine(data []byte, k toml.Key) int {
	split := func(s string) []string {
		var parts []string
		for _, p := range strings.Split(s, ".") {
			parts = append(parts, strings.Trim(strings.TrimSpace(p), `"'`))
		}
		return parts
	}
	var table []string
	for i, line := range strings.Split(string(data), "\n") {
		l := strings.TrimSpace(line)
		switch {
		case l == "" || l[0] == '#':
			continue
		case l[0] == '[':
			end := strings.IndexByte(l, ']')
			if end < 0 {
				continue
			}
			table = split(strings.TrimLeft(l[:end], "["))
			if slices.Equal(table, k) {
				return i + 1
			}
			continue
		}
		eq := strings.IndexByte(l, '=')
		if eq <= 0 {
			continue
		}
		full := append(slices.Clone(table), split(l[:eq])...)
		if len(full) <= len(k) && slices.Equal(full, k[:len(full)]) {
			return i + 1
		}
	}
	return 0
}

// Limits a config must stay within.
const (
	maxMaxAuto  = 64
	maxMaxProcs = 1 << 20
	minGrace    = 200 * time.Millisecond
	maxGrace    = 1500 * time.Millisecond
	maxHistory  = 500 // the console keeps this many entries
)

// defaultConfigFile is $XDG_CONFIG_HOME/sluice/config.toml.
func defaultConfigFile() string {
	p := defaultPolicyFile()
	if p == "" {
		return ""
	}
	return filepath.Join(filepath.Dir(p), "config.toml")
}

// configPath is the configuration file flagValue, $SLUICE_CONFIG or the
// default names, and whether it must exist.
func configPath(flagValue string) (p string, required bool) {
	if flagValue != "" {
		return flagValue, true
	}
	if env := os.Getenv("SLUICE_CONFIG"); env != "" {
		return env, true
	}
	return defaultConfigFile(), false
}

// loadConfig reads the configuration from flagValue, else $SLUICE_CONFIG,
// else the default file. A file named by the flag or the environment must
// exist; the default one may be absent.
func loadConfig(flagValue string) (*config, error) {
	p, required := configPath(flagValue)
	if p == "" {
		return &config{}, nil
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) && !required {
		return &config{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c, err := parseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", p, err)
	}
	c.path = p
	return c, nil
}

// parseConfig decodes and checks config.toml's text.
func parseConfig(data []byte) (*config, error) {
	var c config
	md, err := toml.Decode(string(data), &c)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			msg := pe.Message
			if v, ok := strings.CutPrefix(msg, "invalid duration: "); ok && pe.LastKey != "" {
				msg = fmt.Sprintf("%s = %s: want a duration, such as \"30s\", \"5m\" or \"1h30m\"", pe.LastKey, v)
				if s, err := strconv.Unquote(v); err == nil {
					if _, err := strconv.ParseFloat(s, 64); err == nil {
						msg = fmt.Sprintf("%s = %s: a duration needs a unit, such as \"%ss\" or \"%sm\"", pe.LastKey, v, s, s)
					}
				}
			}
			return nil, fmt.Errorf("line %d: %s", pe.Position.Line, msg)
		}
		return nil, err
	}
	// The decoder matches keys to fields without regard to case; the
	// file's keys must be spelled as documented.
	for _, k := range md.Keys() {
		if !knownConfigKeys[k.String()] {
			return nil, unknownKey(data, k)
		}
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, unknownKey(data, und[0])
	}
	switch {
	case c.MaxAuto < 0 || c.MaxAuto > maxMaxAuto || c.MaxAuto == 0 && md.IsDefined("max_auto"):
		return nil, fmt.Errorf("max_auto = %d: must be between 1 and %d", c.MaxAuto, maxMaxAuto)
	case c.DefaultTimeout < 0:
		return nil, fmt.Errorf("default_timeout = %s: must be positive", c.DefaultTimeout)
	case c.KillGrace < 0:
		return nil, fmt.Errorf("kill_grace = %s: must be positive", c.KillGrace)
	case c.Sandbox != "" && c.Sandbox != exec.SandboxPrefer && c.Sandbox != exec.SandboxRequire && c.Sandbox != exec.SandboxOff:
		return nil, fmt.Errorf("sandbox = %q: must be \"prefer\", \"require\" or \"off\"", c.Sandbox)
	case c.MaxProcs < 0 || c.MaxProcs > maxMaxProcs || c.MaxProcs == 0 && md.IsDefined("max_procs"):
		return nil, fmt.Errorf("max_procs = %d: must be between 16 and %d", c.MaxProcs, maxMaxProcs)
	case c.MaxProcs != 0 && c.MaxProcs < 16:
		return nil, fmt.Errorf("max_procs = %d: must be between 16 and %d (a shell and the programs it starts need a few)", c.MaxProcs, maxMaxProcs)
	case c.Console.Grace != 0 && (c.Console.Grace < minGrace || c.Console.Grace > maxGrace):
		return nil, fmt.Errorf("[console] grace = %s: must be between %s and %s", c.Console.Grace, minGrace, maxGrace)
	case c.CheckpointKeep < 0 || c.CheckpointKeep == 0 && md.IsDefined("checkpoint_keep"):
		return nil, fmt.Errorf("checkpoint_keep = %d: must be 1 or more (checkpoints = false turns them off)", c.CheckpointKeep)
	case c.CheckpointMaxAge < 0 || c.CheckpointMaxAge == 0 && md.IsDefined("checkpoint_max_age"):
		return nil, fmt.Errorf("checkpoint_max_age = %s: must be positive", c.CheckpointMaxAge)
	case c.Console.TrustMinutes < 0 || c.Console.TrustMinutes > 24*60:
		return nil, fmt.Errorf("[console] trust_minutes = %d: must be between 1 and 1440", c.Console.TrustMinutes)
	case c.Console.History != nil && (*c.Console.History < 0 || *c.Console.History > maxHistory):
		return nil, fmt.Errorf("[console] history = %d: must be between 0 and %d", *c.Console.History, maxHistory)
	}
	for _, p := range append(append([]string(nil), c.SecretPatterns...), c.ExtraSecretPatterns...) {
		if p == "" {
			return nil, errors.New("secret patterns: an empty pattern matches nothing; remove it")
		}
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("secret pattern %q: %v", p, err)
		}
	}
	if err := exec.CheckEnvAllow(c.EnvAllow); err != nil {
		return nil, fmt.Errorf("env_allow: %s", strings.TrimPrefix(err.Error(), "exec: "))
	}
	for _, list := range [][]string{c.SandboxWritable, c.ExtraSandboxWritable, c.SandboxHidden, c.ExtraSandboxHidden,
		c.SandboxReadable, c.ExtraSandboxReadable} {
		for _, p := range list {
			if p == "" || (!filepath.IsAbs(p) && p != "~" && !strings.HasPrefix(p, "~/")) {
				return nil, fmt.Errorf("sandbox path %q: must be absolute or start with ~/", p)
			}
		}
	}
	return &c, nil
}

// secretPatterns is the list of environment names kept from commands.
func (c *config) secretPatterns() []string {
	base := exec.DefaultSecretPatterns
	if c.SecretPatterns != nil {
		base = c.SecretPatterns
	}
	return append(append([]string{}, base...), c.ExtraSecretPatterns...)
}

// runner is the pty runner this configuration asks for; own are sluice's
// own files and directories (policy, audit log, config), hidden from
// confined runs like the spool.
func (c *config) runner(spool string, own ...string) *exec.Runner {
	// What the runs of an engine that died left running dies now, before
	// this one answers their claims.
	sandbox.SweepStale()
	return &exec.Runner{
		BaseEnv:        os.Environ(),
		EnvAllow:       c.EnvAllow,
		SecretPatterns: c.secretPatterns(),
		DefaultTimeout: c.DefaultTimeout,
		Grace:          c.KillGrace,
		Confine:        c.confine(spool, own...),
	}
}

// checkpointStore is where runs are checkpointed, or nil when
// checkpoints = false.
func (c *config) checkpointStore() *checkpoint.Store {
	if c.Checkpoints != nil && !*c.Checkpoints {
		return nil
	}
	return &checkpoint.Store{Dir: checkpointDir()}
}

// checkpointRetention is checkpoint_keep and checkpoint_max_age, defaulted.
func (c *config) checkpointRetention() (keep int, maxAge time.Duration) {
	keep, maxAge = 200, 30*24*time.Hour
	if c.CheckpointKeep > 0 {
		keep = c.CheckpointKeep
	}
	if c.CheckpointMaxAge > 0 {
		maxAge = c.CheckpointMaxAge
	}
	return keep, maxAge
}

// projectCacheDir holds the per-project caches of runs the policy allows
// with a checkpoint: $XDG_CACHE_HOME/sluice/projects (~/.cache/...).
func projectCacheDir() string {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "sluice", "projects")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "sluice", "projects")
}

// checkpointDir is $XDG_STATE_HOME/sluice/checkpoints (~/.local/state/...).
func checkpointDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "sluice", "checkpoints")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".local", "state", "sluice", "checkpoints")
}

// hookConfine reports whether hooks wrap the shell commands they allow in
// 'sluice sandbox' (hook_confine, default true).
func (c *config) hookConfine() bool { return c.HookConfine == nil || *c.HookConfine }

// sandboxMode is the sandbox key, prefer when unset.
func (c *config) sandboxMode() string {
	if c.Sandbox == "" {
		return exec.SandboxPrefer
	}
	return c.Sandbox
}

// confine is the runner's confinement: the mode, the hidden paths (the
// configured secrets, sluice's own files, the spool) and the writable
// caches.
func (c *config) confine(spool string, own ...string) *exec.Confine {
	home, _ := os.UserHomeDir()
	hidden := exec.DefaultHidden(home)
	if c.SandboxHidden != nil {
		hidden = expandHome(c.SandboxHidden, home)
	}
	hidden = append(hidden, expandHome(c.ExtraSandboxHidden, home)...)
	if cfg := defaultConfigFile(); cfg != "" {
		hidden = append(hidden, filepath.Dir(cfg)) // ~/.config/sluice: policy, config, themes
	}
	if c.path != "" {
		hidden = append(hidden, c.path)
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
	return &exec.Confine{Mode: mode, Hidden: hidden, Spool: spool, Writable: writable, MaxProcs: c.MaxProcs,
		Closed: exec.DefaultClosed(home), Readable: readable, Fetch: exec.DefaultFetchCaches(os.Environ(), home), Named: named,
		Box: sandbox.BoxPath()}
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
func (c *config) maxAuto() int {
	if c.MaxAuto > 0 {
		return c.MaxAuto
	}
	return 4
}
