package setup

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// codexConfig is what doctor reads of a Codex config.toml (a layer's,
// managed_config.toml or requirements.toml).
type codexConfig struct {
	Profile  string         `toml:"profile"`
	Features map[string]any `toml:"features"`
	Profiles map[string]struct {
		Features map[string]any `toml:"features"`
	} `toml:"profiles"`
	Projects map[string]struct {
		TrustLevel string `toml:"trust_level"`
	} `toml:"projects"`
	Hooks struct {
		State map[string]struct {
			TrustedHash string `toml:"trusted_hash"`
			Enabled     *bool  `toml:"enabled"`
		} `toml:"state"`
		PreToolUse []struct {
			Matcher string `toml:"matcher"`
			Hooks   []struct {
				Type    string `toml:"type"`
				Command string `toml:"command"`
				Timeout any    `toml:"timeout"`
			} `toml:"hooks"`
		} `toml:"PreToolUse"`
	} `toml:"hooks"`
	MCPServers map[string]struct {
		Command string            `toml:"command"`
		Args    []string          `toml:"args"`
		EnvVars []string          `toml:"env_vars"`
		Env     map[string]string `toml:"env"`
	} `toml:"mcp_servers"`
	AllowManagedHooksOnly bool `toml:"allow_managed_hooks_only"`
}

// hooksFeature is what a [features] table says of hooks: set, and on.
func hooksFeature(features map[string]any) (set, on bool) {
	for _, k := range []string{"hooks", "codex_hooks"} {
		if v, ok := features[k].(bool); ok {
			set, on = true, v
		}
	}
	return set, on
}

// codexLayer is one layer of Codex's configuration: a directory with a
// config.toml and a hooks.json.
type codexLayer struct {
	dir, scope string
	config     *codexConfig // nil when it has no config.toml
}

func checkCodex(opt Options) Finding {
	f := Finding{Agent: "codex"}
	install := "sluice install codex"
	home := codexHome(opt)
	readTOML := func(path string, broken string) *codexConfig {
		data, ok := f.read(path)
		if !ok {
			return nil
		}
		var c codexConfig
		if _, err := toml.Decode(string(data), &c); err != nil {
			f.add(Broken, fmt.Sprintf("%s is not valid TOML (%v): %s", path, err, broken), "fix the file by hand")
			return nil
		}
		return &c
	}

	layers := []codexLayer{{dir: opt.system("/etc/codex"), scope: "system"}, {dir: home, scope: "user"}}
	for i := range layers {
		layers[i].config = readTOML(filepath.Join(layers[i].dir, "config.toml"), "Codex does not start")
	}
	user := layers[1].config
	if user == nil {
		user = &codexConfig{}
	}
	// The project's layers, from its root down to where Codex starts,
	// count only in a project the user trusts.
	if cwd := opt.cwd(); cwd != "" {
		root := gitRoot(cwd)
		if root == "" {
			root = cwd
		}
		trusted := false
		for d := cwd; ; d = filepath.Dir(d) {
			if p, ok := user.Projects[d]; ok {
				trusted = p.TrustLevel == "trusted"
				break
			}
			if d == root || d == filepath.Dir(d) {
				break
			}
		}
		var dirs []string
		for d := cwd; ; d = filepath.Dir(d) {
			dirs = append([]string{filepath.Join(d, ".codex")}, dirs...)
			if d == root || d == filepath.Dir(d) {
				break
			}
		}
		for _, d := range dirs {
			if d == home {
				continue
			}
			if _, err := os.Stat(d); err != nil {
				continue
			}
			if !trusted {
				hooksPath := filepath.Join(d, "hooks.json")
				if o, err := readSettingsFile(hooksPath, strictJSON); err == nil && o != nil && len(findHooks(hooksPath, "project", o, "PreToolUse", "codex", time.Second)) > 0 {
					f.add(Warning, fmt.Sprintf("%s: sluice's hook there does not run: Codex reads a project's .codex only where the project is trusted", hooksPath),
						install+" (for the user: every project), or trust the project in Codex")
				}
				continue
			}
			l := codexLayer{dir: d, scope: "project"}
			l.config = readTOML(filepath.Join(d, "config.toml"), "Codex does not start here")
			layers = append(layers, l)
		}
	}
	managedPath := opt.system("/etc/codex/managed_config.toml")
	managed := readTOML(managedPath, "Codex does not start")
	reqPath := opt.system("/etc/codex/requirements.toml")
	req := readTOML(reqPath, "Codex does not start")

	// Where hooks are turned off: the last layer that says wins.
	offFile, off := "", false
	consider := func(file string, features map[string]any) {
		if set, on := hooksFeature(features); set {
			offFile, off = file, !on
		}
	}
	state := map[string]struct {
		TrustedHash string `toml:"trusted_hash"`
		Enabled     *bool  `toml:"enabled"`
	}{}
	for _, l := range layers {
		if l.config == nil {
			continue
		}
		cfg := filepath.Join(l.dir, "config.toml")
		consider(cfg, l.config.Features)
		if l.scope == "user" && l.config.Profile != "" {
			consider(fmt.Sprintf("%s [profiles.%s]", cfg, l.config.Profile), l.config.Profiles[l.config.Profile].Features)
		}
		for k, v := range l.config.Hooks.State {
			state[k] = v
		}
	}
	if managed != nil {
		consider(managedPath, managed.Features)
	}

	// sluice's hooks and MCP server, in every layer.
	var hooks []hookEntry
	mcp, mcpConfig := false, ""
	var mcpServer struct {
		EnvVars []string
		Env     map[string]string
	}
	for _, l := range layers {
		hooksPath := filepath.Join(l.dir, "hooks.json")
		if o := readSettings(&f, hooksPath, strictJSON, notJSON(hooksPath, FailOpen, "Codex skips every hook in it, and the tools run")); o != nil {
			hooks = append(hooks, findHooks(hooksPath, l.scope, o, "PreToolUse", "codex", time.Second)...)
		}
		if l.config == nil {
			continue
		}
		cfg := filepath.Join(l.dir, "config.toml")
		for gi, e := range l.config.Hooks.PreToolUse {
			for hi, h := range e.Hooks {
				if !isSluiceHook(h.Command, "codex") {
					continue
				}
				he := hookEntry{file: cfg, scope: l.scope, matcher: e.Matcher, command: h.Command, group: gi, handler: hi}
				switch t := h.Timeout.(type) {
				case int64:
					he.timeout = time.Duration(t) * time.Second
				case float64:
					he.timeout = time.Duration(t * float64(time.Second))
				}
				hooks = append(hooks, he)
			}
		}
		for name, s := range l.config.MCPServers {
			args := make([]any, len(s.Args))
			for i, a := range s.Args {
				args[i] = a
			}
			if name == "sluice" || isSluiceMCP(&object{members: []member{{"command", s.Command}, {"args", args}}}) {
				mcp, mcpConfig = true, cfg
				mcpServer.EnvVars, mcpServer.Env = s.EnvVars, s.Env
			}
		}
	}

	f.Configured = len(hooks) > 0 || mcp
	if !f.Configured {
		return f
	}
	if len(hooks) == 0 {
		f.add(FailOpen, "sluice's MCP server is set up, but no sluice hook: Codex's own shell and apply_patch run without sluice", install+" --mcp")
	}
	switch {
	case req != nil && req.AllowManagedHooksOnly:
		f.add(FailOpen, fmt.Sprintf("%s sets allow_managed_hooks_only = true: Codex runs only the hooks it sets itself, not sluice's", reqPath),
			"requirements are not sluice's to change: ask whoever manages Codex on this machine to add sluice's hook to them")
	case req != nil && func() bool { set, on := hooksFeature(req.Features); return set && !on }():
		f.add(FailOpen, fmt.Sprintf("%s pins [features] hooks = false: Codex runs no hook, sluice's included", reqPath),
			"requirements are not sluice's to change: ask whoever manages Codex on this machine")
	case off:
		fix := "delete that line (or set it to true)"
		if strings.HasPrefix(offFile, opt.system("/etc/codex")) {
			fix = "ask whoever manages Codex on this machine to take it out"
		}
		f.add(FailOpen, fmt.Sprintf("%s sets [features] hooks = false: Codex runs no hook, sluice's included", offFile), fix)
	}
	for _, h := range hooks {
		checkHook(&f, opt, h, 600*time.Second, install)
		timeout := 600
		if h.timeout > 0 {
			timeout = int(h.timeout / time.Second)
		}
		key := codexKey(h.file, h.group, h.handler)
		st, ok := state[key]
		want := CodexHookHash(h.matcher, h.command, timeout)
		configPath := filepath.Join(home, "config.toml")
		switch {
		case !ok || st.TrustedHash == "":
			f.add(FailOpen, fmt.Sprintf("%s: Codex has not been told to trust sluice's hook (no [hooks.state.%s] in %s): it skips the hook, and the tool runs", h.file, tomlString(key), configPath),
				install+" (it records the trust as Codex's /hooks does)")
		case st.TrustedHash != want:
			f.add(FailOpen, fmt.Sprintf("%s: sluice's hook changed since it was trusted: Codex skips it, and the tool runs", h.file),
				install+" (it trusts the hook as it is now)")
		case st.Enabled != nil && !*st.Enabled:
			f.add(FailOpen, fmt.Sprintf("%s: sluice's hook is turned off (enabled = false in %s)", h.file, configPath), install)
		}
		all, known := matchesAll(h.matcher, "Bash", "apply_patch")
		switch {
		case !known:
			f.add(FailOpen, fmt.Sprintf("%s: the matcher %q is not a valid Rust regular expression: Codex skips the hook", h.file, h.matcher), install)
		case !all:
			f.add(FailOpen, fmt.Sprintf("%s: the matcher %q leaves out Bash or apply_patch: those run without sluice", h.file, h.matcher), install)
		}
		if fb, from := fallback(opt, h.command); fb == "ask" {
			f.add(FailOpen, fmt.Sprintf("%s: the hook answers ask when nobody decides (%s), and Codex runs the tool on ask", h.file, from),
				install+" (Codex's default fallback is deny)"+unsetFallback(from))
		}
		if mcp {
			if all, _ := matchesAll(h.matcher, "mcp__sluice__run_command"); all {
				f.add(Warning, fmt.Sprintf("%s: the hook's matcher %q also matches sluice's own MCP tools: each MCP call is asked about twice", h.file, h.matcher),
					install+" --mcp (its matcher skips mcp__sluice__*)")
			}
		}
	}
	if len(hooks) > 1 {
		f.add(Warning, fmt.Sprintf("%d sluice hooks are set up: each tool call is asked about %d times", len(hooks), len(hooks)), install+" (it keeps one)")
	}
	if mcp {
		passed := map[string]bool{}
		for _, v := range mcpServer.EnvVars {
			passed[v] = true
		}
		for k := range mcpServer.Env {
			passed[k] = true
		}
		var missing []string
		for _, v := range codexEnvVars {
			if !passed[v] {
				missing = append(missing, v)
			}
		}
		if len(missing) > 0 {
			f.add(Warning, fmt.Sprintf("[mcp_servers.sluice] in %s does not pass %s through: Codex starts MCP servers with a few variables only, so sluice-mcp may look for another spool than the console's, and its calls fail", mcpConfig, strings.Join(missing, ", ")),
				install+" --mcp (it sets env_vars)")
		}
	}
	return f
}

// unsetFallback is the rest of a fix when the fallback came from the
// environment.
func unsetFallback(from string) string {
	if strings.HasPrefix(from, "SLUICE_HOOK_FALLBACK") {
		return ", and unset SLUICE_HOOK_FALLBACK"
	}
	return ""
}
