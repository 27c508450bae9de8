package app

import (
	"fmt"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/sluice-dev/sluice/internal/cli"
)

const ConfigHelp = `Configuration is --config FILE, else $SLUICE_CONFIG, else
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
  web_url = "https://laptop.tail0.ts.net"  # 'sluice web': the address
                                   # people open, for links and the pairing
                                   # QR code
  notify_url = "https://ntfy.sh/my-topic"  # 'sluice web': POST an
                                   # ntfy-compatible note when a request
                                   # starts waiting
  web_require_passkey = false      # 'sluice web': approving a destructive or
                                   # unconfined run needs the device's passkey
  network_allow = ["*.corp.example", "10.1.2.3:5432"]  # hosts every
                                   # networked run may reach without asking,
                                   # besides those its verdict names (the
                                   # registries its programs use, the URLs and
                                   # git remotes on the line, ~/.npmrc,
                                   # pip.conf, GOPROXY): host, *.domain,
                                   # host:port, IP or CIDR; the host's own
                                   # services (loopback, 169.254.169.254,
                                   # private ranges) only when named here
  network_deny = ["10.0.0.0/8"]    # hosts no run reaches, whatever allows
                                   # them (deny wins); a project's
                                   # .sluice/policy.toml may add to it, never
                                   # to network_allow
  network_upstream_proxy = "http://proxy.corp.example:3128"  # where runs'
                                   # proxies reach the network through
  network_ask_timeout = "10s"      # a connection to a host outside the run's
                                   # set waits this long for you, then is
                                   # refused

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
	"web_url": true, "notify_url": true, "web_require_passkey": true,
	"network_allow": true, "network_deny": true, "network_upstream_proxy": true, "network_ask_timeout": true,
	"console.theme": true, "console.bell": true, "console.notify": true, "console.grace": true, "console.history": true, "console.trust_minutes": true}

// knownKeysText lists the keys for an error message.
const knownKeysText = "max_auto, default_timeout, kill_grace, env_allow, secret_patterns, extra_secret_patterns, " +
	"sandbox, sandbox_writable, extra_sandbox_writable, sandbox_hidden, extra_sandbox_hidden, sandbox_readable, extra_sandbox_readable, max_procs, hook_confine, checkpoints, checkpoint_keep, checkpoint_max_age, " +
	"web_url, notify_url, web_require_passkey, " +
	"network_allow, network_deny, network_upstream_proxy, network_ask_timeout, " +
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
	if near := cli.DidYouMean(k.String(), known); len(near) > 0 {
		hint = "; did you mean " + cli.OrList(near, func(s string) string {
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
