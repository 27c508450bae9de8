package app

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/sluice-dev/sluice/exec"
	"github.com/sluice-dev/sluice/netproxy/netrule"
)

// Config is config.toml: how the engine runs things and how the console
// behaves. Every field is optional; the zero value means the default.
type Config struct {
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

	// WebURL is the address people open for 'sluice web' (links, the
	// pairing code's QR); NotifyURL gets an ntfy-compatible POST when a
	// request starts waiting; WebRequirePasskey makes approving a
	// destructive or unconfined run from the web need the device's passkey.
	WebURL            string `toml:"web_url"`
	NotifyURL         string `toml:"notify_url"`
	WebRequirePasskey bool   `toml:"web_require_passkey"`

	// NetworkAllow are hosts (netproxy rules: host, *.domain,
	// host:port, IP, CIDR) every networked run may reach without asking;
	// NetworkDeny are hosts none reaches, whatever allows them (deny
	// wins). Both go to the policy (policy.Options).
	NetworkAllow []string `toml:"network_allow"`
	NetworkDeny  []string `toml:"network_deny"`
	// NetworkUpstreamProxy is an HTTP proxy (http://[user:pass@]host:port)
	// networked runs' proxies reach the network through.
	NetworkUpstreamProxy string `toml:"network_upstream_proxy"`
	// NetworkAskTimeout bounds how long a connection to a host outside a
	// run's set waits for a person (AskTimeout gives the default).
	NetworkAskTimeout time.Duration `toml:"network_ask_timeout"`

	Console consoleConfig `toml:"console"`

	// Path is the file this came from ("" for none).
	Path string
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
func (c consoleConfig) TrustWindow() time.Duration {
	if c.TrustMinutes > 0 {
		return time.Duration(c.TrustMinutes) * time.Minute
	}
	return 15 * time.Minute
}

// history is [console] history, defaulted.
func (c consoleConfig) HistoryLen() int {
	if c.History == nil {
		return defaultHistory
	}
	return *c.History
}

// AskTimeout is network_ask_timeout, defaulted (10 s): nobody answering
// about a host within it refuses the connection.
func (c *Config) AskTimeout() time.Duration {
	if c.NetworkAskTimeout > 0 {
		return c.NetworkAskTimeout
	}
	return netrule.DefaultAskTimeout
}

// Limits a config must stay within.
const (
	MaxMaxAuto  = 64
	maxMaxProcs = 1 << 20
	minGrace    = 200 * time.Millisecond
	maxGrace    = 1500 * time.Millisecond
	maxHistory  = 500 // the console keeps this many entries
	// maxAskTimeout bounds network_ask_timeout: a tool's connection
	// waits that long for a person, and most give up sooner.
	maxAskTimeout = 10 * time.Minute
)

// defaultConfigFile is $XDG_CONFIG_HOME/sluice/config.toml.
func defaultConfigFile() string {
	p := DefaultPolicyFile()
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

// LoadConfig reads the configuration from flagValue, else $SLUICE_CONFIG,
// else the default file. A file named by the flag or the environment must
// exist; the default one may be absent.
func LoadConfig(flagValue string) (*Config, error) {
	p, required := configPath(flagValue)
	if p == "" {
		return &Config{}, nil
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) && !required {
		return &Config{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		// Nothing set: the defaults, without the TOML decoder's first
		// use (~0.05 ms of every hook's start).
		return &Config{Path: p}, nil
	}
	c, err := parseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", p, err)
	}
	c.Path = p
	return c, nil
}

// parseConfig decodes and checks config.toml's text.
func parseConfig(data []byte) (*Config, error) {
	var c Config
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
	case c.MaxAuto < 0 || c.MaxAuto > MaxMaxAuto || c.MaxAuto == 0 && md.IsDefined("max_auto"):
		return nil, fmt.Errorf("max_auto = %d: must be between 1 and %d", c.MaxAuto, MaxMaxAuto)
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
	case md.IsDefined("network_ask_timeout") && (c.NetworkAskTimeout < time.Second || c.NetworkAskTimeout > maxAskTimeout):
		return nil, fmt.Errorf("%snetwork_ask_timeout = %s: must be between 1s and %s", lineOfKey(data, "network_ask_timeout"), c.NetworkAskTimeout, maxAskTimeout)
	}
	if err := checkNetwork(&c, data); err != nil {
		return nil, err
	}
	for k, u := range map[string]string{"web_url": c.WebURL, "notify_url": c.NotifyURL} {
		if u == "" {
			continue
		}
		if pu, err := url.Parse(u); err != nil || (pu.Scheme != "https" && pu.Scheme != "http") || pu.Host == "" {
			return nil, fmt.Errorf("%s = %q: want an http or https URL, such as \"https://laptop.example.ts.net\"", k, u)
		}
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

// WebArgs are the flags of sluice-web that config.toml's web keys stand
// for; 'sluice web' passes them before the person's own (which win).
func (c *Config) WebArgs() []string {
	var a []string
	if c.WebURL != "" {
		a = append(a, "--url="+c.WebURL)
	}
	if c.NotifyURL != "" {
		a = append(a, "--notify-url="+c.NotifyURL)
	}
	if c.WebRequirePasskey {
		a = append(a, "--require-passkey")
	}
	return a
}

// checkNetwork checks the network keys: each network_allow and
// network_deny entry a host rule, the upstream proxy an http URL.
func checkNetwork(c *Config, data []byte) error {
	for _, l := range []struct {
		key   string
		specs []string
	}{{"network_allow", c.NetworkAllow}, {"network_deny", c.NetworkDeny}} {
		for _, s := range l.specs {
			if _, err := netrule.ParseRule(s); err != nil {
				return fmt.Errorf("%s%s: %s (want a host, *.domain, host:port, an IP address or a CIDR range)",
					lineOfKey(data, l.key), l.key, strings.TrimPrefix(err.Error(), "netproxy: "))
			}
		}
	}
	if s := c.NetworkUpstreamProxy; s != "" {
		raw := s
		if !strings.Contains(raw, "://") {
			raw = "http://" + raw
		}
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "http" || u.Hostname() == "" || u.Path != "" && u.Path != "/" || u.RawQuery != "" {
			shown := "(unreadable)"
			if err == nil {
				shown = u.Redacted()
			}
			return fmt.Errorf("%snetwork_upstream_proxy = %q: want http://host:port (user:password@ allowed)", lineOfKey(data, "network_upstream_proxy"), shown)
		}
	}
	return nil
}

// lineOfKey is "line N: " for the line of data that sets top-level key,
// "" when it cannot be told.
func lineOfKey(data []byte, key string) string {
	if n := keyLine(data, toml.Key{key}); n > 0 {
		return fmt.Sprintf("line %d: ", n)
	}
	return ""
}
