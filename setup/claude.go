package setup

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// Claude Code (2.1) reads its settings, lowest precedence first, from
// the user's settings.json in ~/.claude ($CLAUDE_CONFIG_DIR), the
// project's .claude/settings.json in the directory it starts in, the
// local .claude/settings.local.json there (and at the git root), a
// --settings file, and the managed settings an administrator keeps in
// /etc/claude-code (/Library/Application Support/ClaudeCode on macOS):
// managed-settings.json, then managed-settings.d/*.json in name order.
// A file that is not strict JSON (a comment, a trailing comma) is
// "Invalid or malformed JSON": none of its settings apply, hooks
// included. Hooks are turned off by "disableAllHooks": true: in managed
// settings every hook, anywhere else every hook but the managed ones;
// managed "allowManagedHooksOnly": true runs only managed hooks, and so
// does safe mode (CLAUDE_CODE_SAFE_MODE, --safe-mode, --bare).
//
// MCP servers are in ~/.claude.json ($CLAUDE_CONFIG_DIR/.claude.json):
// "mcpServers" (user scope, every project) and projects.<dir>.mcpServers
// (local scope, the default of 'claude mcp add': that directory only),
// and in the project's .mcp.json (project scope, which a person must
// approve, or the project's settings list in enabledMcpjsonServers).
// Claude Code writes these files as JSON.stringify(v, null, 2), with no
// final newline.
//
// A hook's timeout is in seconds (default 60); a matcher that is not a
// plain tool name is a JavaScript regular expression tested against the
// tool's name; MCP tools are named mcp__<server>__<tool>. A hook command
// that fails to start (not found: exit 127) is a non-blocking error, and
// the tool runs.

// claudeMatcher matches every tool but sluice's own MCP tools, which
// the MCP server already puts in front of a person.
const claudeMatcher = "^(?!mcp__sluice__).*"

// claudeMCPTools are sluice's MCP tools as Claude Code names them.
var claudeMCPTools = []string{"mcp__sluice__run_command", "mcp__sluice__write_file", "mcp__sluice__edit_file"}

// claudeDir is the user's Claude Code directory: $CLAUDE_CONFIG_DIR, or
// ~/.claude.
func claudeDir(opt Options) string {
	if d := opt.env("CLAUDE_CONFIG_DIR"); d != "" && filepath.IsAbs(d) {
		return d
	}
	return filepath.Join(opt.Home, ".claude")
}

// claudeState is Claude Code's own state file, ~/.claude.json (in
// $CLAUDE_CONFIG_DIR when set).
func claudeState(opt Options) string {
	if d := opt.env("CLAUDE_CONFIG_DIR"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, ".claude.json")
	}
	return filepath.Join(opt.Home, ".claude.json")
}

func claudeSettings(opt Options) string { return settingsPath(opt, ".claude", claudeDir(opt)) }

// settingsPath is the settings.json install edits: in the project's
// dotDir when installing into a project, else in the agent's userDir.
func settingsPath(opt Options, dotDir, userDir string) string {
	if opt.Project != "" {
		return filepath.Join(opt.Project, dotDir, "settings.json")
	}
	return filepath.Join(userDir, "settings.json")
}

func claudeMCPFile(opt Options) string {
	if opt.Project != "" {
		return filepath.Join(opt.Project, ".mcp.json")
	}
	return claudeState(opt)
}

// claudeManagedDir is where an administrator keeps Claude Code's
// managed settings.
func claudeManagedDir(opt Options) string {
	if runtime.GOOS == "darwin" {
		return opt.system("/Library/Application Support/ClaudeCode")
	}
	return opt.system("/etc/claude-code")
}

// settingsFile is a settings file an agent reads, and its scope.
type settingsFile struct{ path, scope string }

// claudeFiles are the settings files Claude Code reads for a session
// started in opt's working directory but the managed ones, lowest
// precedence first.
func claudeFiles(opt Options) []settingsFile {
	files := []settingsFile{{filepath.Join(claudeDir(opt), "settings.json"), "user"}}
	if cwd := opt.cwd(); cwd != "" {
		files = append(files,
			settingsFile{filepath.Join(cwd, ".claude", "settings.json"), "project"},
			settingsFile{filepath.Join(cwd, ".claude", "settings.local.json"), "local"})
		if root := gitRoot(cwd); root != "" && root != cwd {
			files = append(files, settingsFile{filepath.Join(root, ".claude", "settings.local.json"), "local"})
		}
	}
	var out []settingsFile
	seen := map[string]bool{}
	for _, f := range files {
		if !seen[f.path] {
			seen[f.path] = true
			out = append(out, f)
		}
	}
	return out
}

// claudeManagedFiles are Claude Code's managed settings files, in the
// order it merges them.
func claudeManagedFiles(opt Options) []string {
	dir := claudeManagedDir(opt)
	files := []string{filepath.Join(dir, "managed-settings.json")}
	if ents, err := os.ReadDir(filepath.Join(dir, "managed-settings.d")); err == nil {
		var names []string
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), ".") {
				names = append(names, e.Name())
			}
		}
		sort.Strings(names)
		for _, n := range names {
			files = append(files, filepath.Join(dir, "managed-settings.d", n))
		}
	}
	return files
}

// gitRoot is the top of the git work tree holding dir, "" when none.
func gitRoot(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

// claudeHookEntry is the hook entry install writes.
func claudeHookEntry(opt Options) *object {
	return &object{members: []member{
		{"matcher", claudeMatcher},
		{"hooks", []any{&object{members: []member{
			{"type", "command"},
			{"command", hookCommand(opt, "claude")},
			{"timeout", int((opt.Wait + Margin).Seconds())},
		}}}},
	}}
}

// claudeMCPServer is the MCP server install registers.
func claudeMCPServer(opt Options) *object {
	return &object{members: []member{
		{"type", "stdio"},
		{"command", opt.Sluice},
		{"args", mcpArgs(opt)},
		{"env", &object{}},
	}}
}

// disableAllHooks is the setting that turns Claude Code's hooks off.
const disableAllHooks = "disableAllHooks"

// claude writes (install) or removes sluice's hook, permissions and MCP
// server in Claude Code's settings. Install also takes
// "disableAllHooks": true out of the settings Claude Code reads where it
// is started (the person is asked: Plan.Asks).
func claude(opt Options, install bool) (*Plan, error) {
	p := &Plan{Agent: "claude"}
	settings := claudeSettings(opt)
	hooksOn := func(d *doc, path string) {
		if install {
			if v, ok := d.top().get(disableAllHooks); ok && v.read() == true {
				d.del(d.top(), disableAllHooks)
				setting := fmt.Sprintf("%q: true", disableAllHooks)
				p.Asks = append(p.Asks, Ask{File: path, Setting: setting,
					Why:      "Claude Code runs none of the hooks in your settings, sluice's included",
					Question: fmt.Sprintf("Take %s out of %s?", setting, path), Done: "took out " + setting})
			}
		}
	}
	err := editJSON(p, settings, strictJSON, !install, func(d *doc) error {
		top := d.top()
		var want *object
		if install {
			want = claudeHookEntry(opt)
		}
		if _, err := editHooks(d, top, "PreToolUse", "claude", want); err != nil {
			return err
		}
		if err := claudePermissions(d, top, install && opt.MCP); err != nil {
			return err
		}
		if opt.Project != "" {
			if err := editList(d, top, "enabledMcpjsonServers", []string{"sluice"}, install && opt.MCP); err != nil {
				return err
			}
		}
		hooksOn(d, settings)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if install {
		// The other files Claude Code reads where it is started.
		for _, f := range claudeFiles(opt) {
			if f.path == settings || samePath(f.path, settings) {
				continue
			}
			data, existed, _, err := readFile(f.path)
			if err != nil || !existed {
				continue
			}
			if d, err := parseDoc(data, strictJSON); err != nil || d.top().object() == nil {
				continue
			} else if v, ok := d.top().get(disableAllHooks); !ok || v.read() != true {
				continue
			}
			if err := editJSON(p, f.path, strictJSON, false, func(d *doc) error { hooksOn(d, f.path); return nil }); err != nil {
				return nil, err
			}
		}
		for _, m := range claudeManagedFiles(opt) {
			o, err := readSettingsFile(m, strictJSON)
			if err != nil || o == nil {
				continue
			}
			if o.isTrue(disableAllHooks) {
				p.Notes = append(p.Notes, fmt.Sprintf("%s (managed settings) sets %q: true: Claude Code runs no hook at all, sluice's included; install cannot change managed settings: ask whoever manages Claude Code on this machine to take it out", m, disableAllHooks))
			} else if o.isTrue("allowManagedHooksOnly") {
				p.Notes = append(p.Notes, fmt.Sprintf("%s (managed settings) sets \"allowManagedHooksOnly\": true: Claude Code runs only the hooks in managed settings, not sluice's; install cannot change managed settings: ask whoever manages Claude Code on this machine to add sluice's hook to them", m))
			}
		}
	}
	if !opt.MCP && install {
		return p, nil
	}
	err = editJSON(p, claudeMCPFile(opt), strictJSON, !install, func(d *doc) error {
		top := d.top()
		if install {
			servers, err := d.child(top, "mcpServers")
			if err != nil {
				return err
			}
			d.set(servers, "sluice", claudeMCPServer(opt))
			return nil
		}
		servers, ok := top.get("mcpServers")
		if ok && d.del(servers, "sluice") && servers.empty() {
			d.del(top, "mcpServers")
		}
		return nil
	})
	return p, err
}

// claudePermissions puts sluice's MCP tools in permissions.allow (with
// add), or takes them out.
func claudePermissions(d *doc, top node, add bool) error {
	perms, ok := top.get("permissions")
	if !ok {
		if !add {
			return nil
		}
		perms = d.set(top, "permissions", &object{})
	}
	if perms.object() == nil {
		return fmt.Errorf("%q is not an object", "permissions")
	}
	if err := editList(d, perms, "allow", claudeMCPTools, add); err != nil {
		return fmt.Errorf("permissions: %w", err)
	}
	if perms.empty() {
		d.del(top, "permissions")
	}
	return nil
}

// samePath reports whether two paths name one file.
func samePath(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// readSettingsFile reads a settings file as an object: nil when it is
// missing.
func readSettingsFile(path string, dl dialect) (*object, error) {
	data, existed, _, err := readFile(path)
	if err != nil || !existed {
		return nil, err
	}
	d, err := parseDoc(data, dl)
	if err != nil {
		return nil, err
	}
	o, _ := d.top().read().(*object)
	return o, nil
}

// LookPath is the sluice program a shell with this PATH runs, resolved
// ("" when there is none).
func LookPath(path string) string {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, "sluice")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				return real
			}
			return p
		}
	}
	return ""
}
