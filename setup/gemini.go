package setup

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"
)

// Gemini CLI (0.6x) reads hooks from ~/.gemini/settings.json and
// .gemini/settings.json: hooks.BeforeTool is a list of {matcher, hooks:
// [{name, type "command", command, timeout}]}, the matcher a JavaScript
// regular expression tested against the tool's name, the timeout in
// milliseconds (default 60000), after which the hook is killed and the
// call goes on. hooksConfig.enabled (default true) turns every hook off,
// hooksConfig.disabled lists hooks (by name or command) that do not run.
// MCP servers are mcpServers.NAME {command, args, env, trust}; their
// tools are named mcp_<server>_<tool>, and trust skips Gemini CLI's own
// confirmation.

// geminiMatcher matches every Gemini CLI tool but sluice's own MCP tools.
const geminiMatcher = "^(?!mcp_sluice_).*"

// geminiHookName names sluice's hook in Gemini CLI (hooksConfig.disabled
// and the CLI's hook list show it).
const geminiHookName = "sluice"

func geminiSettings(opt Options) string {
	if opt.Project != "" {
		return filepath.Join(opt.Project, ".gemini", "settings.json")
	}
	return filepath.Join(opt.Home, ".gemini", "settings.json")
}

func gemini(opt Options, install bool) (*Plan, error) {
	p := &Plan{Agent: "gemini"}
	err := editJSON(p, geminiSettings(opt), func(o *object) error {
		hooks, err := o.child("hooks")
		if err != nil {
			return err
		}
		entries, err := hooks.array("BeforeTool")
		if err != nil {
			return fmt.Errorf("hooks: %w", err)
		}
		entries = dropHooks(entries, "gemini")
		if install {
			entries = append(entries, &object{members: []member{
				{"matcher", geminiMatcher},
				{"hooks", []any{&object{members: []member{
					{"name", geminiHookName},
					{"type", "command"},
					{"command", hookCommand(opt, "gemini")},
					{"timeout", int((opt.Wait + Margin).Milliseconds())},
				}}}},
			}})
		}
		setOrDrop(hooks, "BeforeTool", entries)
		if len(hooks.members) == 0 {
			o.del("hooks")
		}
		if hc, ok := o.get("hooksConfig"); ok && install {
			if hco, ok := hc.(*object); ok {
				if on, ok := hco.get("enabled"); ok && on == false {
					hco.set("enabled", true)
					p.Notes = append(p.Notes, "hooksConfig.enabled was false: every Gemini CLI hook is on again")
				}
				if dis, err := hco.array("disabled"); err == nil && len(dis) > 0 {
					kept := slices.DeleteFunc(slices.Clone(dis), func(v any) bool {
						s, _ := v.(string)
						return s == geminiHookName || isSluiceHook(s, "gemini")
					})
					if len(kept) != len(dis) {
						setOrDrop(hco, "disabled", kept)
					}
				}
			}
		}
		servers, err := o.child("mcpServers")
		if err != nil {
			return err
		}
		_, had := servers.get("sluice")
		servers.del("sluice")
		if install && opt.MCP {
			servers.set("sluice", &object{members: []member{
				{"command", opt.Sluice},
				{"args", mcpArgs(opt)},
				// sluice asks a person itself; Gemini CLI's own
				// confirmation would ask twice.
				{"trust", true},
			}})
		}
		if len(servers.members) == 0 && (had || install) {
			o.del("mcpServers")
		}
		return nil
	})
	return p, err
}

func checkGemini(opt Options) Finding {
	f := Finding{Agent: "gemini"}
	install := "sluice install gemini"
	paths := []string{filepath.Join(opt.Home, ".gemini", "settings.json")}
	if opt.Project != "" {
		paths = append(paths, filepath.Join(opt.Project, ".gemini", "settings.json"))
	}
	var hooks []hookEntry
	mcp, disabledAll := false, false
	var disabled []string
	for _, p := range paths {
		o := readObject(&f, p)
		if o == nil {
			continue
		}
		hooks = append(hooks, findHooks(p, o, "BeforeTool", "gemini", time.Millisecond)...)
		if s, ok := o.get("mcpServers"); ok {
			if so, ok := s.(*object); ok {
				if _, ok := so.get("sluice"); ok {
					mcp = true
				}
			}
		}
		if hc, ok := o.get("hooksConfig"); ok {
			if hco, ok := hc.(*object); ok {
				if on, ok := hco.get("enabled"); ok && on == false {
					disabledAll = true
				}
				dis, _ := hco.array("disabled")
				for _, d := range dis {
					if s, ok := d.(string); ok {
						disabled = append(disabled, s)
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
		f.Problems = append(f.Problems, Problem{Agent: "gemini", FailOpen: true,
			What: "sluice's MCP server is set up, but no sluice hook: Gemini CLI's own tools (run_shell_command, write_file, replace) run without sluice",
			Fix:  install + " --mcp"})
	}
	if disabledAll {
		f.Problems = append(f.Problems, Problem{Agent: "gemini", FailOpen: true,
			What: "hooksConfig.enabled is false: Gemini CLI runs no hook, sluice's included", Fix: install + " (it turns hooks on)"})
	}
	for _, d := range disabled {
		if d == geminiHookName || isSluiceHook(d, "gemini") {
			f.Problems = append(f.Problems, Problem{Agent: "gemini", FailOpen: true,
				What: fmt.Sprintf("hooksConfig.disabled lists %q: sluice's hook does not run", d), Fix: install + " (it takes it off the list)"})
		}
	}
	for _, h := range hooks {
		checkHook(&f, h, 60*time.Second, install)
		all, known := matchesAll(h.matcher, "run_shell_command", "write_file", "replace")
		switch {
		case !known:
			f.Problems = append(f.Problems, Problem{Agent: "gemini", What: fmt.Sprintf("%s: the matcher %q cannot be checked here", h.file, h.matcher), Fix: install})
		case !all:
			f.Problems = append(f.Problems, Problem{Agent: "gemini", FailOpen: true,
				What: fmt.Sprintf("%s: the matcher %q leaves out some of run_shell_command, write_file and replace: those run without sluice", h.file, h.matcher), Fix: install})
		}
		if mcp && h.matcher != geminiMatcher {
			if all, _ := matchesAll(h.matcher, "mcp_sluice_run_command"); all {
				f.Problems = append(f.Problems, Problem{Agent: "gemini",
					What: fmt.Sprintf("%s: the hook's matcher %q also matches sluice's own MCP tools: each MCP call is asked about twice", h.file, h.matcher),
					Fix:  install + " --mcp (its matcher skips mcp_sluice_*)"})
			}
		}
		if fallbackOf(h.command) == "ask" {
			f.Problems = append(f.Problems, Problem{Agent: "gemini",
				What: fmt.Sprintf("%s: the hook answers ask when nobody decides: in headless mode (gemini -p) Gemini CLI cannot ask anyone, and the call fails", h.file),
				Fix:  install + " (the default fallback is deny when Gemini CLI has no terminal)"})
		}
	}
	if len(hooks) > 1 {
		f.Problems = append(f.Problems, Problem{Agent: "gemini", What: fmt.Sprintf("%d sluice hooks are set up: each tool call is asked about %d times", len(hooks), len(hooks)), Fix: install + " (it keeps one)"})
	}
	return f
}
