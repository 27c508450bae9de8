package setup

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"
)

// Claude Code reads hooks and permissions from ~/.claude/settings.json
// (user) and .claude/settings.json (project); its MCP servers from
// ~/.claude.json (user scope, "mcpServers") and .mcp.json (project scope,
// which a person must approve, or the project's settings list in
// enabledMcpjsonServers). A hook's timeout is in seconds (default 60); a
// matcher that is not a plain tool name is a JavaScript regular
// expression tested against the tool's name; MCP tools are named
// mcp__<server>__<tool>. A hook command that fails to start (not found:
// exit 127) is a non-blocking error, and the tool runs.

// claudeMatcher matches every tool but sluice's own MCP tools, which
// the MCP server already puts in front of a person.
const claudeMatcher = "^(?!mcp__sluice__).*"

// claudeMCPTools are sluice's MCP tools as Claude Code names them.
var claudeMCPTools = []string{"mcp__sluice__run_command", "mcp__sluice__write_file", "mcp__sluice__edit_file"}

func claudeSettings(opt Options) string {
	if opt.Project != "" {
		return filepath.Join(opt.Project, ".claude", "settings.json")
	}
	return filepath.Join(opt.Home, ".claude", "settings.json")
}

func claudeMCPFile(opt Options) string {
	if opt.Project != "" {
		return filepath.Join(opt.Project, ".mcp.json")
	}
	return filepath.Join(opt.Home, ".claude.json")
}

// claude writes (install) or removes sluice's hook, permissions and MCP
// server in Claude Code's settings.
func claude(opt Options, install bool) (*Plan, error) {
	p := &Plan{Agent: "claude"}
	path := claudeSettings(opt)
	err := editJSON(p, path, func(o *object) error {
		hooks, err := o.child("hooks")
		if err != nil {
			return err
		}
		entries, err := hooks.array("PreToolUse")
		if err != nil {
			return fmt.Errorf("hooks: %w", err)
		}
		entries = dropHooks(entries, "claude")
		if install {
			entries = append(entries, &object{members: []member{
				{"matcher", claudeMatcher},
				{"hooks", []any{&object{members: []member{
					{"type", "command"},
					{"command", hookCommand(opt, "claude")},
					{"timeout", int((opt.Wait + Margin).Seconds())},
				}}}},
			}})
		}
		setOrDrop(hooks, "PreToolUse", entries)
		if len(hooks.members) == 0 {
			o.del("hooks")
		}
		perms, err := o.child("permissions")
		if err != nil {
			return err
		}
		allow, err := perms.array("allow")
		if err != nil {
			return fmt.Errorf("permissions: %w", err)
		}
		allow = slices.DeleteFunc(allow, func(v any) bool { s, _ := v.(string); return slices.Contains(claudeMCPTools, s) })
		if install && opt.MCP {
			for _, t := range claudeMCPTools {
				allow = append(allow, t)
			}
		}
		setOrDrop(perms, "allow", allow)
		if len(perms.members) == 0 {
			o.del("permissions")
		}
		if opt.Project != "" {
			enabled, err := o.array("enabledMcpjsonServers")
			if err != nil {
				return err
			}
			enabled = slices.DeleteFunc(enabled, func(v any) bool { return v == "sluice" })
			if install && opt.MCP {
				enabled = append(enabled, "sluice")
			}
			setOrDrop(o, "enabledMcpjsonServers", enabled)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !opt.MCP && install {
		return p, nil
	}
	err = editJSON(p, claudeMCPFile(opt), func(o *object) error {
		servers, err := o.child("mcpServers")
		if err != nil {
			return err
		}
		_, had := servers.get("sluice")
		servers.del("sluice")
		if len(servers.members) == 0 && (had || install) {
			o.del("mcpServers")
		}
		if install {
			servers, _ = o.child("mcpServers")
			servers.set("sluice", &object{members: []member{
				{"type", "stdio"},
				{"command", opt.Sluice},
				{"args", mcpArgs(opt)},
				{"env", &object{}},
			}})
		}
		return nil
	})
	return p, err
}

// editJSON reads path (a JSON object; missing is empty), lets edit
// change it, and adds the result to the plan.
func editJSON(p *Plan, path string, edit func(*object) error) error {
	data, existed, mode, err := readFile(path)
	if err != nil {
		return err
	}
	o, err := parseObject(data)
	if err != nil {
		return fmt.Errorf("%s: %w; fix it by hand, then run this again", path, err)
	}
	if err := edit(o); err != nil {
		return fmt.Errorf("%s: %w; fix it by hand, then run this again", path, err)
	}
	if !existed && len(o.members) == 0 {
		return nil
	}
	p.change(path, data, existed, mode, marshal(o))
	return nil
}

// dropHooks removes sluice's hook for agent from a list of matcher
// entries ({matcher, hooks: [{type, command, ...}]}), and entries left
// with no hooks.
func dropHooks(entries []any, agent string) []any {
	var out []any
	for _, e := range entries {
		eo, ok := e.(*object)
		if !ok {
			out = append(out, e)
			continue
		}
		hs, err := eo.array("hooks")
		if err != nil {
			out = append(out, e)
			continue
		}
		kept := slices.DeleteFunc(slices.Clone(hs), func(h any) bool {
			ho, ok := h.(*object)
			return ok && isSluiceHook(ho.str("command"), agent)
		})
		if len(kept) == 0 && len(hs) > 0 {
			continue
		}
		eo.set("hooks", kept)
		out = append(out, eo)
	}
	return out
}

// setOrDrop sets key to a, or removes it when a is empty.
func setOrDrop(o *object, key string, a []any) {
	if len(a) == 0 {
		o.del(key)
		return
	}
	o.set(key, a)
}

// hookEntry is a sluice hook found in an agent's settings.
type hookEntry struct {
	file    string
	matcher string
	command string
	timeout time.Duration // 0: not set
}

// findHooks lists sluice's hooks for agent under event in a settings
// file's object; timeoutUnit is the unit of the agent's "timeout".
func findHooks(file string, o *object, event, agent string, timeoutUnit time.Duration) []hookEntry {
	hooks, ok := o.get("hooks")
	ho, _ := hooks.(*object)
	if !ok || ho == nil {
		return nil
	}
	entries, _ := ho.array(event)
	var out []hookEntry
	for _, e := range entries {
		eo, ok := e.(*object)
		if !ok {
			continue
		}
		hs, _ := eo.array("hooks")
		for _, h := range hs {
			hobj, ok := h.(*object)
			if !ok || !isSluiceHook(hobj.str("command"), agent) {
				continue
			}
			he := hookEntry{file: file, matcher: eo.str("matcher"), command: hobj.str("command")}
			if t, ok := hobj.num("timeout"); ok {
				he.timeout = time.Duration(t * float64(timeoutUnit))
			}
			out = append(out, he)
		}
	}
	return out
}
