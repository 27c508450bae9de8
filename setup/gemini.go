package setup

import (
	"fmt"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// Gemini CLI (0.61) reads four settings files and merges them, lowest
// precedence first: the system defaults (system-defaults.json beside
// the system settings, or $GEMINI_CLI_SYSTEM_DEFAULTS_PATH), the user's
// ~/.gemini/settings.json ($GEMINI_CLI_HOME for ~), the workspace's
// .gemini/settings.json in the directory it starts in (not when that is
// the home directory, and only in a trusted folder), and the system
// settings an administrator keeps (/etc/gemini-cli/settings.json,
// /Library/Application Support/GeminiCli/settings.json on macOS, or
// $GEMINI_CLI_SYSTEM_SETTINGS_PATH). Comments are stripped before
// JSON.parse; any other error in any of them stops Gemini CLI at start.
// $VAR and ${VAR} in a value are the environment's.
//
// hooks.BeforeTool is a list of {matcher, hooks: [{name, type
// "command", command, timeout}]}, concatenated over the files: the
// matcher a JavaScript regular expression tested against the tool's
// name, the timeout in milliseconds (default 60000), after which the
// hook is killed and the call goes on. hooksConfig.enabled (default
// true; the file of highest precedence that sets it decides) turns every
// hook off; hooksConfig.disabled (the union over the files) lists hooks,
// by name or command, that do not run. With security.folderTrust.enabled
// no hook runs in a folder the person has not trusted (Gemini CLI asks
// before each tool there instead). MCP servers are mcpServers.NAME
// {command, args, env, trust}; their tools are named mcp_<server>_<tool>,
// and trust skips Gemini CLI's own confirmation.

// geminiMatcher matches every Gemini CLI tool but sluice's own MCP tools.
const geminiMatcher = "^(?!mcp_sluice_).*"

// geminiHookName names sluice's hook in Gemini CLI (hooksConfig.disabled
// and the CLI's hook list show it).
const geminiHookName = "sluice"

// geminiDir is the user's ~/.gemini ($GEMINI_CLI_HOME/.gemini).
func geminiDir(opt Options) string {
	if h := opt.env("GEMINI_CLI_HOME"); h != "" {
		return filepath.Join(h, ".gemini")
	}
	return filepath.Join(opt.Home, ".gemini")
}

func geminiSettings(opt Options) string { return settingsPath(opt, ".gemini", geminiDir(opt)) }

// geminiSystem is the system settings file.
func geminiSystem(opt Options) string {
	if p := opt.env("GEMINI_CLI_SYSTEM_SETTINGS_PATH"); p != "" {
		return p
	}
	if runtime.GOOS == "darwin" {
		return opt.system("/Library/Application Support/GeminiCli/settings.json")
	}
	return opt.system("/etc/gemini-cli/settings.json")
}

// geminiFiles are the settings files Gemini CLI reads for a session
// started in opt's working directory, lowest precedence first.
func geminiFiles(opt Options) []settingsFile {
	defaults := filepath.Join(filepath.Dir(geminiSystem(opt)), "system-defaults.json")
	if p := opt.env("GEMINI_CLI_SYSTEM_DEFAULTS_PATH"); p != "" {
		defaults = p
	}
	user := filepath.Join(geminiDir(opt), "settings.json")
	files := []settingsFile{{defaults, "system"}, {user, "user"}}
	if cwd := opt.cwd(); cwd != "" {
		if ws := filepath.Join(cwd, ".gemini", "settings.json"); ws != user && filepath.Dir(geminiDir(opt)) != cwd {
			files = append(files, settingsFile{ws, "workspace"})
		}
	}
	return append(files, settingsFile{geminiSystem(opt), "system"})
}

// geminiHookOn is the setting that turns Gemini CLI's hooks off.
const geminiHookOn = "hooksConfig.enabled"

func gemini(opt Options, install bool) (*Plan, error) {
	p := &Plan{Agent: "gemini"}
	settings := geminiSettings(opt)
	hooksOn := func(d *doc, path string) {
		hc, ok := d.top().get("hooksConfig")
		if !install || !ok || hc.object() == nil {
			return
		}
		if on, ok := hc.get("enabled"); ok && on.read() == false {
			d.replace(on, true)
			p.Asks = append(p.Asks, Ask{File: path, Setting: `"hooksConfig": {"enabled": false}`,
				Why:      "Gemini CLI runs no hook, sluice's included",
				Question: fmt.Sprintf("Set hooksConfig.enabled to true in %s?", path), Done: "set hooksConfig.enabled to true"})
		}
		if dis, ok := hc.get("disabled"); ok && dis.array() != nil {
			if d.drop(dis, func(e node) bool {
				s, _ := e.read().(string)
				return s == geminiHookName || isSluiceHook(s, "gemini")
			}) {
				p.Notes = append(p.Notes, path+": took sluice's hook off hooksConfig.disabled")
			}
		}
	}
	err := editJSON(p, settings, jsonComments, !install, func(d *doc) error {
		top := d.top()
		var want *object
		if install {
			want = &object{members: []member{
				{"matcher", geminiMatcher},
				{"hooks", []any{&object{members: []member{
					{"name", geminiHookName},
					{"type", "command"},
					{"command", hookCommand(opt, "gemini")},
					{"timeout", int((opt.Wait + Margin).Milliseconds())},
				}}}},
			}}
		}
		if _, err := editHooks(d, top, "BeforeTool", "gemini", want); err != nil {
			return err
		}
		hooksOn(d, settings)
		if install && opt.MCP {
			servers, err := d.child(top, "mcpServers")
			if err != nil {
				return err
			}
			d.set(servers, "sluice", &object{members: []member{
				{"command", opt.Sluice},
				{"args", mcpArgs(opt)},
				// sluice asks a person itself; Gemini CLI's own
				// confirmation would ask twice.
				{"trust", true},
			}})
		} else if servers, ok := top.get("mcpServers"); ok && d.del(servers, "sluice") && servers.empty() {
			d.del(top, "mcpServers")
		}
		return nil
	})
	if err != nil || !install {
		return p, err
	}
	// The other files Gemini CLI reads where it is started.
	for _, f := range geminiFiles(opt) {
		if f.path == settings || samePath(f.path, settings) {
			continue
		}
		o, err := readSettingsFile(f.path, jsonComments)
		if err != nil || o == nil {
			continue
		}
		hc := o.obj("hooksConfig")
		if hc == nil {
			continue
		}
		dis, _ := hc.array("disabled")
		listed := slices.ContainsFunc(dis, func(v any) bool { s, _ := v.(string); return s == geminiHookName || isSluiceHook(s, "gemini") })
		if on, ok := hc.get("enabled"); !(ok && on == false) && !listed {
			continue
		}
		if f.scope == "system" {
			p.Notes = append(p.Notes, fmt.Sprintf("%s (system settings) turns hooks off (hooksConfig): install cannot change system settings: ask whoever manages Gemini CLI on this machine", f.path))
			continue
		}
		if err := editJSON(p, f.path, jsonComments, false, func(d *doc) error { hooksOn(d, f.path); return nil }); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// geminiEnv expands $VAR and ${VAR} (${VAR:-default}) as Gemini CLI does
// in its settings: a variable that is not set stays as it is written.
func geminiEnv(opt Options, s string) string {
	return geminiVar().ReplaceAllStringFunc(s, func(m string) string {
		g := geminiVar().FindStringSubmatch(m)
		if v := opt.env(g[1] + g[2]); v != "" {
			return v
		}
		if strings.Contains(m, ":-") {
			return g[3]
		}
		return m
	})
}

// geminiVar is compiled on first use: every hook process links setup.
var geminiVar = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\$(?:(\w+)|{([^}]+?)(?::-([^}]*))?})`)
})

func checkGemini(opt Options) Finding {
	f := Finding{Agent: "gemini"}
	install := "sluice install gemini"
	var hooks []hookEntry
	mcp := false
	enabledFile, enabled := "", true
	var disabled []string
	folderTrust := false
	for _, sf := range geminiFiles(opt) {
		o := readSettings(&f, sf.path, jsonComments, notJSON(sf.path, Broken, "Gemini CLI does not start"))
		if o == nil {
			continue
		}
		for _, h := range findHooks(sf.path, sf.scope, o, "BeforeTool", "gemini", time.Millisecond) {
			h.command = geminiEnv(opt, h.command)
			hooks = append(hooks, h)
		}
		if len(sluiceServers(o.obj("mcpServers"))) > 0 {
			mcp = true
		}
		if hc := o.obj("hooksConfig"); hc != nil {
			if on, ok := hc.get("enabled"); ok {
				if b, ok := on.(bool); ok {
					enabledFile, enabled = sf.path, b
				}
			}
			dis, _ := hc.array("disabled")
			for _, d := range dis {
				if s, ok := d.(string); ok {
					disabled = append(disabled, s)
				}
			}
		}
		if sec := o.obj("security"); sec != nil {
			if ft := sec.obj("folderTrust"); ft != nil {
				if v, ok := ft.get("enabled"); ok {
					folderTrust = v == true
				}
			}
		}
	}
	f.Configured = len(hooks) > 0 || mcp
	if !f.Configured {
		return f
	}
	if len(hooks) == 0 {
		f.add(FailOpen, "sluice's MCP server is set up, but no sluice hook: Gemini CLI's own tools (run_shell_command, write_file, replace) run without sluice", install+" --mcp")
	}
	if !enabled {
		fix := install + " (it asks, then turns hooks on)"
		if enabledFile == geminiSystem(opt) {
			fix = "system settings are not sluice's to change: ask whoever manages Gemini CLI on this machine"
		}
		f.add(FailOpen, fmt.Sprintf("%s sets %s to false: Gemini CLI runs no hook, sluice's included", enabledFile, geminiHookOn), fix)
	}
	for _, d := range disabled {
		if d == geminiHookName || isSluiceHook(d, "gemini") {
			f.add(FailOpen, fmt.Sprintf("hooksConfig.disabled lists %q: sluice's hook does not run", d), install+" (it takes it off the list)")
		}
	}
	switch v := opt.env("GEMINI_CLI_TRUST_WORKSPACE"); {
	case opt.env("GEMINI_RESTRICTED_MODE") == "true" || v == "false":
		f.add(Warning, "GEMINI_RESTRICTED_MODE or GEMINI_CLI_TRUST_WORKSPACE=false is set here: Gemini CLI started from this environment trusts no folder and runs no hook, sluice's included (it asks before each tool itself)",
			"unset it where you start Gemini CLI")
	case folderTrust && v != "true":
		f.add(Warning, "security.folderTrust.enabled is true: in a folder you have not trusted Gemini CLI runs no hook, sluice's included (it asks before each tool itself)",
			"trust the folders you work in (Gemini CLI's /permissions)")
	}
	for _, h := range hooks {
		checkHook(&f, opt, h, 60*time.Second, install)
		all, known := matchesAll(h.matcher, "run_shell_command", "write_file", "replace")
		switch {
		case !known:
			f.add(Warning, fmt.Sprintf("%s: the matcher %q cannot be checked here", h.file, h.matcher), install)
		case !all:
			f.add(FailOpen, fmt.Sprintf("%s: the matcher %q leaves out some of run_shell_command, write_file and replace: those run without sluice", h.file, h.matcher), install)
		}
		if mcp && h.matcher != geminiMatcher {
			if all, _ := matchesAll(h.matcher, "mcp_sluice_run_command"); all {
				f.add(Warning, fmt.Sprintf("%s: the hook's matcher %q also matches sluice's own MCP tools: each MCP call is asked about twice", h.file, h.matcher),
					install+" --mcp (its matcher skips mcp_sluice_*)")
			}
		}
		if fb, from := fallback(opt, h.command); fb == "ask" {
			f.add(Hangs, fmt.Sprintf("%s: the hook answers ask when nobody decides (%s): Gemini CLI started headless (gemini -p) then waits for an answer nobody can give, and hangs until it is killed", h.file, from),
				install+" (with no --fallback the hook answers deny where Gemini CLI has no terminal)"+unsetFallback(from))
		}
	}
	if len(hooks) > 1 {
		f.add(Warning, fmt.Sprintf("%d sluice hooks are set up: each tool call is asked about %d times", len(hooks), len(hooks)), install+" (it keeps one)")
	}
	return f
}
