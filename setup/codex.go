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

	"github.com/BurntSushi/toml"
)

// Codex (0.169) reads its configuration in layers, lowest precedence
// first: /etc/codex (config.toml and hooks.json beside it), the user's
// $CODEX_HOME (default ~/.codex), the selected profile ([profiles.NAME]
// in the user's config.toml), each .codex/ from the project's root down
// to the directory it starts in (only in a project the user trusts:
// [projects."DIR"] trust_level = "trusted"), and the legacy
// /etc/codex/managed_config.toml; /etc/codex/requirements.toml pins
// what no layer may change. A layer's hooks are in its hooks.json and in
// [hooks] of its config.toml, in Claude Code's shape; a hook's timeout
// is in seconds (default 600) and its matcher a Rust regular expression
// (no lookahead). [features] hooks = false (or its old name,
// codex_hooks) turns every hook off; requirements.toml's
// allow_managed_hooks_only = true runs only the hooks it sets itself.
//
// Codex runs a hook from the person's files only once they trusted it:
// config.toml holds
//
//	[hooks.state."<hooks.json path>:pre_tool_use:<group>:<handler>"]
//	trusted_hash = "sha256:<hex>"
//
// where the hash is SHA-256 of the hook's normalized identity as compact
// JSON with sorted keys: {"event_name":"pre_tool_use","hooks":[{"async":
// false,"command":…,"timeout":…,"type":"command"}],"matcher":…} (absent
// members left out). A hook not trusted, or changed since, is skipped
// without a word, and the tool runs; so is a hooks.json Codex cannot
// parse. MCP servers are [mcp_servers.NAME] in config.toml; a server's
// process gets only a few environment variables unless env_vars names
// more.

// codexMatcher is Bash, apply_patch and every MCP tool but sluice's own
// (mcp__sluice__*), written without lookahead.
const codexMatcher = `^(Bash|apply_patch)$|^mcp__([^s_]|s[^l]|sl[^u]|slu[^i]|slui[^c]|sluic[^e]|sluice[^_]|sluice_[^_])`

// codexEnvVars are what sluice-mcp needs to find the console's spool and
// audit log, passed through to it by Codex.
var codexEnvVars = []string{"SLUICE_SPOOL", "SLUICE_AUDIT", "SLUICE_CONFIG", "XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_CONFIG_HOME"}

// The block sluice owns in config.toml. Codex rewrites config.toml
// itself (a trusted project, a trusted hook), keeping comments, and may
// put a table of its own inside the block: sluice takes out its own
// tables and the two marker lines, and leaves any other.
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
func codexKey(source string, group, handler int) string {
	return fmt.Sprintf("%s:pre_tool_use:%d:%d", source, group, handler)
}

func codex(opt Options, install bool) (*Plan, error) {
	if opt.Project != "" {
		return nil, errors.New("codex: project hooks run only in projects Codex trusts, and hook trust is recorded in the user's config: install for the user (without --project)")
	}
	p := &Plan{Agent: "codex"}
	home := codexHome(opt)
	hooksPath := filepath.Join(home, "hooks.json")
	// The trust sluice recorded for its hook where it is now.
	ours := map[string]bool{}
	if o, err := readSettingsFile(hooksPath, strictJSON); err == nil && o != nil {
		for _, h := range findHooks(hooksPath, "user", o, "PreToolUse", "codex", 0) {
			ours[codexKey(hooksPath, h.group, h.handler)] = true
		}
	}
	var key, hash string
	err := editJSON(p, hooksPath, strictJSON, !install, func(d *doc) error {
		var want *object
		cmd := hookCommand(opt, "codex")
		timeout := int((opt.Wait + Margin).Seconds())
		if install {
			want = &object{members: []member{
				{"matcher", codexMatcher},
				{"hooks", []any{&object{members: []member{
					{"type", "command"},
					{"command", cmd},
					{"timeout", timeout},
				}}}},
			}}
		}
		g, err := editHooks(d, d.top(), "PreToolUse", "codex", want)
		if install {
			key, hash = codexKey(hooksPath, g, 0), CodexHookHash(codexMatcher, cmd, timeout)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	configPath := filepath.Join(home, "config.toml")
	data, existed, mode, err := readFile(configPath)
	if err != nil {
		return nil, err
	}
	rest, err := withoutOurs(string(data), hooksPath, ours)
	if err != nil {
		return nil, fmt.Errorf("%s: %w; fix it by hand, then run this again", configPath, err)
	}
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
		// One newline between the person's text and the block, always:
		// a blank line after a final newline, a line break where there
		// was none; uninstall takes exactly that one out.
		if out != "" {
			out += "\n"
		}
		out += codexBegin + "\n" + block.String() + codexEnd + "\n"
	}
	if _, err := toml.Decode(out, new(map[string]any)); err != nil {
		return nil, fmt.Errorf("%s would not be valid TOML (%v): fix it by hand, then run this again", configPath, err)
	}
	switch {
	case existed && out == "" && !install:
		p.remove(configPath, data, mode)
	case existed || out != "":
		p.change(configPath, data, existed, mode, []byte(out))
	}
	return p, nil
}

// withoutOurs is config.toml without what sluice wrote: the marker
// lines, the [hooks.state] tables of keys (anywhere), and inside the
// block the tables sluice writes there (its hook's trust, first, and
// [mcp_servers.sluice]); the newline install put before the block goes
// when nothing else is left in it. A table is its header line and the
// lines up to the next header or marker.
func withoutOurs(s, hooksPath string, keys map[string]bool) (string, error) {
	lines := strings.SplitAfter(s, "\n")
	var before, after strings.Builder
	out := &before
	inBlock, seenBlock, removing, first, foreign := false, false, false, false, false
	for _, ln := range lines {
		t := strings.TrimSpace(ln)
		switch {
		case t == codexBegin && !seenBlock:
			inBlock, seenBlock, removing, first = true, true, false, true
			out = &after
			continue
		case t == codexEnd && inBlock:
			inBlock, removing = false, false
			continue
		case strings.HasPrefix(t, "[["):
			removing, first = false, false
		case strings.HasPrefix(t, "["):
			key := tableKey(t)
			if key == nil {
				break // a line of a value (an array over lines)
			}
			state := len(key) == 3 && key[0] == "hooks" && key[1] == "state"
			removing = state && keys[key[2]] ||
				inBlock && first && state && strings.HasPrefix(key[2], hooksPath+":pre_tool_use:") ||
				inBlock && len(key) >= 2 && key[0] == "mcp_servers" && key[1] == "sluice"
			first = false
		}
		if removing {
			continue
		}
		if inBlock {
			foreign = true
		}
		out.WriteString(ln)
	}
	head, tail := before.String(), after.String()
	if seenBlock && !foreign {
		head = strings.TrimSuffix(head, "\n")
		if tail != "" && head != "" && !strings.HasSuffix(head, "\n") {
			head += "\n"
		}
	}
	res := head + tail
	if _, err := toml.Decode(res, new(map[string]any)); err != nil {
		return "", fmt.Errorf("without sluice's tables it would not be valid TOML (%v)", err)
	}
	return res, nil
}

// tableKey is the key of a TOML table header line ([a.b."c"]), nil for
// an array of tables or a line that is not a header.
func tableKey(line string) []string {
	if strings.HasPrefix(line, "[[") {
		return nil
	}
	md, err := toml.Decode(line+"\n", new(map[string]any))
	if err != nil {
		return nil
	}
	keys := md.Keys()
	if len(keys) == 0 {
		return nil
	}
	return keys[len(keys)-1]
}

// tomlString is s as a TOML basic string.
func tomlString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
