package setup

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Codex (0.16x) reads hooks from $CODEX_HOME/hooks.json (default
// ~/.codex), in Claude Code's shape; a hook's timeout is in seconds
// (default 600) and its matcher a Rust regular expression (no
// lookahead). Codex runs a hook from the user's files only once the user
// trusted it: config.toml holds
//
//	[hooks.state."<hooks.json path>:pre_tool_use:<group>:<handler>"]
//	trusted_hash = "sha256:<hex>"
//
// where the hash is SHA-256 of the hook's normalized identity as compact
// JSON with sorted keys: {"event_name":"pre_tool_use","hooks":[{"async":
// false,"command":…,"timeout":…,"type":"command"}],"matcher":…} (absent
// members left out). A hook not trusted, or changed since, is skipped
// without a word, and the tool runs. MCP servers are [mcp_servers.NAME]
// in config.toml; a server's process gets only a few environment
// variables unless env_vars names more.

// codexMatcher is Bash, apply_patch and every MCP tool but sluice's own
// (mcp__sluice__*), written without lookahead.
const codexMatcher = `^(Bash|apply_patch)$|^mcp__([^s_]|s[^l]|sl[^u]|slu[^i]|slui[^c]|sluic[^e]|sluice[^_]|sluice_[^_])`

// codexEnvVars are what sluice-mcp needs to find the console's spool and
// audit log, passed through to it by Codex.
var codexEnvVars = []string{"SLUICE_SPOOL", "SLUICE_AUDIT", "SLUICE_CONFIG", "XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_CONFIG_HOME"}

// The block sluice owns in config.toml.
const (
	codexBegin = "# BEGIN sluice: written by 'sluice install codex'; 'sluice uninstall codex' takes it out"
	codexEnd   = "# END sluice"
)

func codexHome(opt Options) string {
	if opt.CodexHome != "" {
		return opt.CodexHome
	}
	return filepath.Join(opt.Home, ".codex")
}

// CodexHookHash is the trusted_hash Codex records for a PreToolUse
// command hook with this matcher, command and timeout (seconds).
func CodexHookHash(matcher, command string, timeout int) string {
	type handler struct {
		Async   bool   `json:"async"`
		Command string `json:"command"`
		Timeout int    `json:"timeout"`
		Type    string `json:"type"`
	}
	identity := struct {
		EventName string    `json:"event_name"`
		Hooks     []handler `json:"hooks"`
		Matcher   *string   `json:"matcher,omitempty"`
	}{"pre_tool_use", []handler{{false, command, timeout, "command"}}, nil}
	if matcher != "" {
		identity.Matcher = &matcher
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // serde_json leaves <, > and & as they are
	_ = enc.Encode(identity)
	sum := sha256.Sum256(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// codexKey is the hooks.state key of a PreToolUse hook.
func codexKey(hooksJSON string, group, handler int) string {
	return fmt.Sprintf("%s:pre_tool_use:%d:%d", hooksJSON, group, handler)
}

func codex(opt Options, install bool) (*Plan, error) {
	if opt.Project != "" {
		return nil, errors.New("codex: project hooks run only in projects Codex trusts, and hook trust is recorded in the user's config: install for the user (without --project)")
	}
	p := &Plan{Agent: "codex"}
	home := codexHome(opt)
	hooksPath := filepath.Join(home, "hooks.json")
	var key, hash string
	err := editJSON(p, hooksPath, func(o *object) error {
		hooks, err := o.child("hooks")
		if err != nil {
			return err
		}
		entries, err := hooks.array("PreToolUse")
		if err != nil {
			return fmt.Errorf("hooks: %w", err)
		}
		entries = dropHooks(entries, "codex")
		if install {
			cmd := hookCommand(opt, "codex")
			timeout := int((opt.Wait + Margin).Seconds())
			entries = append(entries, &object{members: []member{
				{"matcher", codexMatcher},
				{"hooks", []any{&object{members: []member{
					{"type", "command"},
					{"command", cmd},
					{"timeout", timeout},
				}}}},
			}})
			key, hash = codexKey(hooksPath, len(entries)-1, 0), CodexHookHash(codexMatcher, cmd, timeout)
		}
		setOrDrop(hooks, "PreToolUse", entries)
		if len(hooks.members) == 0 {
			o.del("hooks")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	configPath := filepath.Join(home, "config.toml")
	data, existed, mode, err := readFile(configPath)
	if err != nil {
		return nil, err
	}
	rest := withoutBlock(string(data))
	var parsed struct {
		Hooks struct {
			State map[string]toml.Primitive `toml:"state"`
		} `toml:"hooks"`
		MCPServers map[string]toml.Primitive `toml:"mcp_servers"`
	}
	if _, err := toml.Decode(rest, &parsed); err != nil {
		return nil, fmt.Errorf("%s: %w; fix it by hand, then run this again", configPath, err)
	}
	var block strings.Builder
	if install {
		if _, dup := parsed.Hooks.State[key]; dup {
			return nil, fmt.Errorf("%s already has [hooks.state.%s] outside sluice's block: take that table out, then run this again", configPath, tomlString(key))
		}
		fmt.Fprintf(&block, "[hooks.state.%s]\ntrusted_hash = %s\n", tomlString(key), tomlString(hash))
		if opt.MCP {
			if _, dup := parsed.MCPServers["sluice"]; dup {
				return nil, fmt.Errorf("%s already has [mcp_servers.sluice] outside sluice's block: take that table out, then run this again", configPath)
			}
			args := make([]string, 0, 3)
			for _, a := range mcpArgs(opt) {
				args = append(args, tomlString(a.(string)))
			}
			vars := make([]string, len(codexEnvVars))
			for i, v := range codexEnvVars {
				vars[i] = tomlString(v)
			}
			fmt.Fprintf(&block, "\n[mcp_servers.sluice]\ncommand = %s\nargs = [%s]\nenv_vars = [%s]\n",
				tomlString(opt.Sluice), strings.Join(args, ", "), strings.Join(vars, ", "))
		}
	} else if _, had := parsed.MCPServers["sluice"]; had {
		p.Notes = append(p.Notes, configPath+" has an [mcp_servers.sluice] table sluice did not write: left as it is")
	}
	out := rest
	if block.Len() > 0 {
		if out != "" && !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		if out != "" && !strings.HasSuffix(out, "\n\n") {
			out += "\n"
		}
		out += codexBegin + "\n" + block.String() + codexEnd + "\n"
	}
	if _, err := toml.Decode(out, new(map[string]any)); err != nil {
		return nil, fmt.Errorf("%s would not be valid TOML (%v): fix it by hand, then run this again", configPath, err)
	}
	if existed || out != "" {
		p.change(configPath, data, existed, mode, []byte(out))
	}
	return p, nil
}

// withoutBlock is config.toml without sluice's block (and the blank line
// before it).
func withoutBlock(s string) string {
	i := strings.Index(s, codexBegin)
	if i < 0 {
		return s
	}
	j := strings.Index(s[i:], codexEnd)
	if j < 0 {
		return s // a block cut short: leave the file to a person
	}
	end := i + j + len(codexEnd)
	if end < len(s) && s[end] == '\n' {
		end++
	}
	head := strings.TrimRight(s[:i], "\n")
	if head != "" {
		head += "\n"
	}
	tail := s[end:]
	if head != "" && tail != "" {
		head += "\n"
	}
	return head + strings.TrimLeft(tail, "\n")
}

// tomlString is s as a TOML basic string.
func tomlString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

func checkCodex(opt Options) Finding {
	f := Finding{Agent: "codex"}
	install := "sluice install codex"
	home := codexHome(opt)
	hooksPath := filepath.Join(home, "hooks.json")
	o := readObject(&f, hooksPath)
	var config struct {
		Hooks struct {
			State map[string]struct {
				TrustedHash string `toml:"trusted_hash"`
				Enabled     *bool  `toml:"enabled"`
			} `toml:"state"`
		} `toml:"hooks"`
		MCPServers map[string]struct {
			Command string            `toml:"command"`
			EnvVars []string          `toml:"env_vars"`
			Env     map[string]string `toml:"env"`
		} `toml:"mcp_servers"`
	}
	configPath := filepath.Join(home, "config.toml")
	if data, existed, _, err := readFile(configPath); err == nil && existed {
		f.Files = append(f.Files, configPath)
		if _, err := toml.Decode(string(data), &config); err != nil {
			f.Problems = append(f.Problems, Problem{Agent: "codex", FailOpen: true,
				What: fmt.Sprintf("%s is not valid TOML (%v): Codex does not start", configPath, err), Fix: "fix the file by hand"})
		}
	}
	mcpServer, mcp := config.MCPServers["sluice"]
	type found struct {
		hookEntry
		group, handler int
	}
	var hooks []found
	if o != nil {
		if hv, ok := o.get("hooks"); ok {
			if ho, ok := hv.(*object); ok {
				entries, _ := ho.array("PreToolUse")
				for gi, e := range entries {
					eo, ok := e.(*object)
					if !ok {
						continue
					}
					hs, _ := eo.array("hooks")
					for hi, h := range hs {
						hobj, ok := h.(*object)
						if !ok || !isSluiceHook(hobj.str("command"), "codex") {
							continue
						}
						he := hookEntry{file: hooksPath, matcher: eo.str("matcher"), command: hobj.str("command")}
						if t, ok := hobj.num("timeout"); ok {
							he.timeout = time.Duration(t * float64(time.Second))
						}
						hooks = append(hooks, found{he, gi, hi})
					}
				}
			}
		}
	}
	f.Configured = len(hooks) > 0 || mcp
	if !f.Configured {
		return f
	}
	if len(hooks) == 0 {
		f.Problems = append(f.Problems, Problem{Agent: "codex", FailOpen: true,
			What: "sluice's MCP server is set up, but no sluice hook: Codex's own shell and apply_patch run without sluice",
			Fix:  install + " --mcp"})
	}
	for _, h := range hooks {
		checkHook(&f, h.hookEntry, 600*time.Second, install)
		timeout := 600
		if h.timeout > 0 {
			timeout = int(h.timeout / time.Second)
		}
		key := codexKey(hooksPath, h.group, h.handler)
		state, ok := config.Hooks.State[key]
		want := CodexHookHash(h.matcher, h.command, timeout)
		switch {
		case !ok || state.TrustedHash == "":
			f.Problems = append(f.Problems, Problem{Agent: "codex", FailOpen: true,
				What: fmt.Sprintf("%s: Codex has not been told to trust sluice's hook (no [hooks.state.%s] in %s): it skips the hook, and the tool runs", hooksPath, tomlString(key), configPath),
				Fix:  install + " (it records the trust as Codex's /hooks does)"})
		case state.TrustedHash != want:
			f.Problems = append(f.Problems, Problem{Agent: "codex", FailOpen: true,
				What: fmt.Sprintf("%s: sluice's hook changed since it was trusted: Codex skips it, and the tool runs", hooksPath),
				Fix:  install + " (it trusts the hook as it is now)"})
		case state.Enabled != nil && !*state.Enabled:
			f.Problems = append(f.Problems, Problem{Agent: "codex", FailOpen: true,
				What: fmt.Sprintf("%s: sluice's hook is turned off (enabled = false in %s)", hooksPath, configPath),
				Fix:  install})
		}
		all, known := matchesAll(h.matcher, "Bash", "apply_patch")
		switch {
		case !known:
			f.Problems = append(f.Problems, Problem{Agent: "codex", FailOpen: true,
				What: fmt.Sprintf("%s: the matcher %q is not a valid Rust regular expression: Codex skips the hook", hooksPath, h.matcher), Fix: install})
		case !all:
			f.Problems = append(f.Problems, Problem{Agent: "codex", FailOpen: true,
				What: fmt.Sprintf("%s: the matcher %q leaves out Bash or apply_patch: those run without sluice", hooksPath, h.matcher), Fix: install})
		}
		if fallbackOf(h.command) == "ask" {
			f.Problems = append(f.Problems, Problem{Agent: "codex", FailOpen: true,
				What: fmt.Sprintf("%s: the hook answers ask when nobody decides, and Codex runs the tool on ask", hooksPath),
				Fix:  install + " (Codex's default fallback is deny)"})
		}
		if mcp {
			if all, _ := matchesAll(h.matcher, "mcp__sluice__run_command"); all {
				f.Problems = append(f.Problems, Problem{Agent: "codex",
					What: fmt.Sprintf("%s: the hook's matcher %q also matches sluice's own MCP tools: each MCP call is asked about twice", hooksPath, h.matcher),
					Fix:  install + " --mcp (its matcher skips mcp__sluice__*)"})
			}
		}
	}
	if len(hooks) > 1 {
		f.Problems = append(f.Problems, Problem{Agent: "codex", What: fmt.Sprintf("%d sluice hooks are set up: each tool call is asked about %d times", len(hooks), len(hooks)), Fix: install + " (it keeps one)"})
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
			f.Problems = append(f.Problems, Problem{Agent: "codex",
				What: fmt.Sprintf("[mcp_servers.sluice] in %s does not pass %s through: Codex starts MCP servers with a few variables only, so sluice-mcp may look for another spool than the console's, and its calls fail", configPath, strings.Join(missing, ", ")),
				Fix:  install + " --mcp (it sets env_vars)"})
		}
	}
	return f
}
