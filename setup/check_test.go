package setup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stringify is v as Claude Code and Gemini CLI write a settings file
// (JSON.stringify(v, null, 2): two spaces, no final newline).
func stringify(v any) string {
	return string(render(v, style{multiline: true, unit: "  ", colon: ": ", comma: ","}))
}

// obj builds an object from key, value pairs.
func obj(kv ...any) *object {
	o := &object{}
	for i := 0; i+1 < len(kv); i += 2 {
		o.members = append(o.members, member{kv[i].(string), kv[i+1]})
	}
	return o
}

// installed sets agent up as 'sluice install' does, in opt's HOME.
func installed(agent string, mcp bool) setupFn {
	return func(t *testing.T, opt Options) {
		opt.MCP = mcp
		p, err := Install(agent, opt)
		apply(t, p, err)
	}
}

// then runs the steps in order.
func then(steps ...setupFn) setupFn {
	return func(t *testing.T, opt Options) {
		for _, s := range steps {
			s(t, opt)
		}
	}
}

// editAt rewrites a file of opt's HOME (or project) with f.
func editAt(path func(Options) string, f func(string) string) setupFn {
	return func(t *testing.T, opt Options) {
		p := path(opt)
		data, _ := os.ReadFile(p)
		write(t, p, f(string(data)))
	}
}

func inHome(rel string) func(Options) string {
	return func(o Options) string { return filepath.Join(o.Home, rel) }
}

func inProject(rel string) func(Options) string {
	return func(o Options) string { return filepath.Join(o.Cwd, rel) }
}

func inSystem(rel string) func(Options) string {
	return func(o Options) string { return filepath.Join(o.SystemRoot, rel) }
}

// writeFile writes content at path(opt).
func writeAt(path func(Options) string, content string) setupFn {
	return func(t *testing.T, opt Options) { write(t, path(opt), content) }
}

// setKey adds `"key": value,` first in a JSON object file.
func setKey(key, value string) func(string) string {
	return func(s string) string { return strings.Replace(s, "{", "{\n  "+quote(key)+": "+value+",", 1) }
}

// TestCheckEverywhere: every place each agent reads its settings from,
// and every switch that turns its hooks off, is read, each fail-open
// (or hang) said with its fix. The files are written as the real CLIs
// write them: Claude Code's ~/.claude.json as 'claude mcp add' left it
// (2.1.330), settings as JSON.stringify(v, null, 2), Codex's TOML as
// its /hooks and trust screens write it.
func TestCheckEverywhere(t *testing.T) {
	claudeStateMCP := func(project string, name string) setupFn {
		return func(t *testing.T, opt Options) {
			dir := project
			if dir == "" {
				dir = opt.Cwd
			}
			// ~/.claude.json after `claude mcp add NAME -- sluice mcp` in dir.
			write(t, filepath.Join(opt.Home, ".claude.json"), stringify(obj(
				"firstStartTime", "2026-11-27T13:04:31.127Z",
				"firstStartVersion", "2.1.330",
				"machineID", "0fa6dea17f14c6442f6d01118bc8c7a4d8cf242d73b943341f0b4feb2366d647",
				"opusProMigrationComplete", true,
				"seenNotifications", obj(),
				"migrationVersion", 15,
				"projects", obj(dir, obj(
					"allowedTools", []any{},
					"mcpContextUris", []any{},
					"mcpServers", obj(name, obj("type", "stdio", "command", "sluice", "args", []any{"mcp"}, "env", obj())),
					"enabledMcpjsonServers", []any{},
					"disabledMcpjsonServers", []any{},
					"hasTrustDialogAccepted", false,
					"hasClaudeMdExternalIncludesApproved", false,
					"hasClaudeMdExternalIncludesWarningShown", false,
				)),
			)))
		}
	}
	managed := "etc/claude-code/managed-settings.json"
	tests := []struct {
		name, agent string
		setup       setupFn
		sev         Severity
		want, fix   string
	}{
		// Claude Code: the switch that turns hooks off, in each file.
		{"claude: disableAllHooks in the user's settings", "claude",
			then(installed("claude", false), editAt(inHome(".claude/settings.json"), setKey("disableAllHooks", "true"))),
			FailOpen, `.claude/settings.json sets "disableAllHooks": true: Claude Code runs no hook from your settings`, "sluice install claude (it asks, then takes it out)"},
		{"claude: disableAllHooks in the project's settings", "claude",
			then(installed("claude", false), writeAt(inProject(".claude/settings.json"), stringify(obj("disableAllHooks", true)))),
			FailOpen, `shop/.claude/settings.json sets "disableAllHooks": true`, "sluice install claude"},
		{"claude: disableAllHooks in the local settings", "claude",
			then(installed("claude", false), writeAt(inProject(".claude/settings.local.json"), stringify(obj("permissions", obj("allow", []any{"Bash(make test)"}), "disableAllHooks", true)))),
			FailOpen, `shop/.claude/settings.local.json sets "disableAllHooks": true`, "sluice install claude"},
		{"claude: disableAllHooks in managed settings", "claude",
			then(installed("claude", false), writeAt(inSystem(managed), stringify(obj("disableAllHooks", true)))),
			FailOpen, `managed-settings.json (managed settings) sets "disableAllHooks": true: Claude Code runs no hook at all`, "ask whoever manages Claude Code"},
		{"claude: disableAllHooks in a managed drop-in", "claude",
			then(installed("claude", false), writeAt(inSystem("etc/claude-code/managed-settings.d/20-hooks.json"), stringify(obj("disableAllHooks", true)))),
			FailOpen, `managed-settings.d/20-hooks.json (managed settings) sets "disableAllHooks": true`, "ask whoever manages Claude Code"},
		{"claude: managed allowManagedHooksOnly", "claude",
			then(installed("claude", false), writeAt(inSystem(managed), stringify(obj("allowManagedHooksOnly", true, "permissions", obj("deny", []any{"WebFetch"}))))),
			FailOpen, `sets "allowManagedHooksOnly": true: Claude Code runs only the hooks in managed settings, and sluice's is not one`, "add sluice's hook to the managed settings"},
		{"claude: safe mode in the environment", "claude",
			then(installed("claude", false), func(t *testing.T, opt Options) {}),
			FailOpen, "CLAUDE_CODE_SAFE_MODE=1 is set here", "unset CLAUDE_CODE_SAFE_MODE"},
		// Claude Code: an MCP server with no hook, wherever it is.
		{"claude: MCP server added the old way, no hook", "claude", claudeStateMCP("", "sluice"),
			FailOpen, `registers sluice's MCP server for the project`, "sluice install claude"},
		{"claude: MCP server for another project, no hook", "claude", claudeStateMCP("/home/you/src/blog", "sluice"),
			FailOpen, `for the project /home/you/src/blog (projects."/home/you/src/blog".mcpServers`, "sluice install claude"},
		{"claude: MCP server by another name, no hook", "claude", claudeStateMCP("", "gate"),
			FailOpen, `registers sluice's MCP server for the project`, "sluice install claude"},
		{"claude: project .mcp.json, no hook", "claude", writeAt(inProject(".mcp.json"), stringify(obj("mcpServers", obj("sluice", obj("type", "stdio", "command", "/usr/local/bin/sluice", "args", []any{"mcp"}, "env", obj()))))),
			FailOpen, `shop/.mcp.json registers sluice's MCP server, but no sluice hook`, "sluice install claude --mcp"},
		// Claude Code: a file it cannot read is one it ignores.
		{"claude: a truncated settings file", "claude",
			writeAt(inHome(".claude/settings.json"), "{\n  \"hooks\": {\n    \"PreToolUse\": [\n"),
			FailOpen, ".claude/settings.json is not valid JSON (line 4, column 1: the file ends before its JSON does): Claude Code ignores every setting in it, hooks included", "by hand"},
		{"claude: a comment in the settings", "claude",
			then(installed("claude", false), editAt(inHome(".claude/settings.json"), func(s string) string { return strings.Replace(s, "{", "{\n  // sluice", 1) })),
			FailOpen, "not valid JSON (line 2, column 3: invalid character '/' looking for beginning of object key string)", "by hand"},

		// Codex: every switch and layer.
		{"codex: [features] hooks = false", "codex",
			then(installed("codex", false), editAt(inHome(".codex/config.toml"), func(s string) string { return "[features]\nhooks = false\n\n" + s })),
			FailOpen, ".codex/config.toml sets [features] hooks = false: Codex runs no hook", "delete that line"},
		{"codex: the old name, codex_hooks = false", "codex",
			then(installed("codex", false), editAt(inHome(".codex/config.toml"), func(s string) string { return "[features]\ncodex_hooks = false\n\n" + s })),
			FailOpen, "sets [features] hooks = false", "delete that line"},
		{"codex: the selected profile turns hooks off", "codex",
			then(installed("codex", false), editAt(inHome(".codex/config.toml"), func(s string) string {
				return "profile = \"fast\"\n\n[profiles.fast]\nmodel = \"gpt-5.5-mini\"\n\n[profiles.fast.features]\nhooks = false\n\n" + s
			})),
			FailOpen, "config.toml [profiles.fast] sets [features] hooks = false", "delete that line"},
		{"codex: a trusted project turns hooks off", "codex",
			then(installed("codex", false),
				func(t *testing.T, opt Options) {
					// As Codex records a trusted project.
					p := filepath.Join(opt.Home, ".codex", "config.toml")
					write(t, p, "[projects."+tomlString(opt.Cwd)+"]\ntrust_level = \"trusted\"\n\n"+readString(t, p))
				},
				writeAt(inProject(".codex/config.toml"), "[features]\nhooks = false\n")),
			FailOpen, "shop/.codex/config.toml sets [features] hooks = false", "delete that line"},
		{"codex: the system's config turns hooks off", "codex",
			then(installed("codex", false), writeAt(inSystem("etc/codex/config.toml"), "[features]\nhooks = false\n")),
			FailOpen, "etc/codex/config.toml sets [features] hooks = false", "ask whoever manages Codex"},
		{"codex: managed_config.toml turns hooks off", "codex",
			then(installed("codex", false), writeAt(inSystem("etc/codex/managed_config.toml"), "[features]\nhooks = false\n")),
			FailOpen, "managed_config.toml sets [features] hooks = false", "ask whoever manages Codex"},
		{"codex: requirements allow managed hooks only", "codex",
			then(installed("codex", false), writeAt(inSystem("etc/codex/requirements.toml"), "allowed_approval_policies = [\"on-request\"]\nallow_managed_hooks_only = true\n")),
			FailOpen, "requirements.toml sets allow_managed_hooks_only = true", "ask whoever manages Codex"},
		{"codex: hooks.json Codex cannot parse", "codex",
			then(installed("codex", false), editAt(inHome(".codex/hooks.json"), func(s string) string { return strings.TrimSuffix(s, "}\n") })),
			FailOpen, "hooks.json is not valid JSON (line 16, column 1: the file ends before its JSON does): Codex skips every hook in it", "by hand"},
		{"codex: config.toml Codex cannot parse", "codex",
			then(installed("codex", false), editAt(inHome(".codex/config.toml"), func(s string) string { return "model = \n" + s })),
			Broken, "config.toml is not valid TOML", "by hand"},
		{"codex: SLUICE_HOOK_FALLBACK=ask where Codex starts", "codex", installed("codex", false),
			FailOpen, "SLUICE_HOOK_FALLBACK=ask (set here, and inherited by an agent started here)", "unset SLUICE_HOOK_FALLBACK"},
		{"codex: sluice's hook only in an untrusted project", "codex",
			writeAt(inProject(".codex/hooks.json"), stringify(obj("hooks", obj("PreToolUse", []any{obj("matcher", "Bash", "hooks", []any{obj("type", "command", "command", "/usr/local/bin/sluice hook codex --wait 1m50s", "timeout", 120)})})))),
			Warning, "shop/.codex/hooks.json: sluice's hook there does not run: Codex reads a project's .codex only where the project is trusted", "sluice install codex (for the user: every project)"},
		{"codex: a hook in config.toml, not trusted", "codex", writeAt(inHome(".codex/config.toml"),
			"model = \"gpt-5.5\"\n\n[[hooks.PreToolUse]]\nmatcher = \"Bash\"\n\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"/usr/local/bin/sluice hook codex --wait 1m50s\"\ntimeout = 120\n"),
			FailOpen, ".codex/config.toml: Codex has not been told to trust sluice's hook (no [hooks.state.", "sluice install codex"},

		// Gemini CLI: every file, and what turns hooks off.
		{"gemini: the workspace turns hooks off", "gemini",
			then(installed("gemini", false), writeAt(inProject(".gemini/settings.json"), stringify(obj("hooksConfig", obj("enabled", false))))),
			FailOpen, "shop/.gemini/settings.json sets hooksConfig.enabled to false", "sluice install gemini (it asks, then turns hooks on)"},
		{"gemini: the system settings turn hooks off", "gemini",
			then(installed("gemini", false), writeAt(inSystem("etc/gemini-cli/settings.json"), stringify(obj("hooksConfig", obj("enabled", false))))),
			FailOpen, "etc/gemini-cli/settings.json sets hooksConfig.enabled to false", "ask whoever manages Gemini CLI"},
		{"gemini: the system defaults disable sluice's hook by name", "gemini",
			then(installed("gemini", false), writeAt(inSystem("etc/gemini-cli/system-defaults.json"), "{\n  // site policy\n  \"hooksConfig\": {\n    \"disabled\": [\"sluice\"]\n  }\n}")),
			FailOpen, `hooksConfig.disabled lists "sluice"`, "sluice install gemini"},
		{"gemini: --fallback ask hangs gemini -p", "gemini",
			then(installed("gemini", false), editAt(inHome(".gemini/settings.json"), func(s string) string { return strings.Replace(s, "--wait 1m50s", "--wait 1m50s --fallback ask", 1) })),
			Hangs, "Gemini CLI started headless (gemini -p) then waits for an answer nobody can give, and hangs until it is killed", "sluice install gemini"},
		{"gemini: SLUICE_HOOK_FALLBACK=ask hangs gemini -p", "gemini", installed("gemini", false),
			Hangs, "(SLUICE_HOOK_FALLBACK=ask (set here, and inherited by an agent started here)): Gemini CLI started headless", "unset SLUICE_HOOK_FALLBACK"},
		{"gemini: a trailing comma", "gemini",
			then(installed("gemini", false), editAt(inHome(".gemini/settings.json"), func(s string) string { return strings.Replace(s, "120000\n", "120000,\n", 1) })),
			Broken, "settings.json is not valid JSON (line 11, column 30: a comma after the last member): Gemini CLI does not start", "by hand"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opt := testOptions(t)
			opt.Cwd = filepath.Join(opt.Home, "src", "shop")
			if err := os.MkdirAll(filepath.Join(opt.Cwd, ".git"), 0o755); err != nil {
				t.Fatal(err)
			}
			env := map[string]string{}
			switch {
			case strings.Contains(tt.name, "SAFE_MODE") || strings.Contains(tt.name, "safe mode"):
				env["CLAUDE_CODE_SAFE_MODE"] = "1"
			case strings.Contains(tt.name, "SLUICE_HOOK_FALLBACK"):
				env["SLUICE_HOOK_FALLBACK"] = "ask"
			}
			opt.Getenv = func(k string) string { return env[k] }
			tt.setup(t, opt)
			f := finding(t, opt, tt.agent)
			for _, p := range f.Problems {
				if p.Severity == tt.sev && strings.Contains(p.What, tt.want) {
					if !strings.Contains(p.Fix, tt.fix) {
						t.Errorf("fix %q, want it to say %q", p.Fix, tt.fix)
					}
					return
				}
			}
			t.Fatalf("want a %s problem %q, got %v", tt.sev, tt.want, f.Problems)
		})
	}
}

// TestCheckPrecedence: a switch a file of higher precedence turns back
// on is not a problem (Gemini CLI: the workspace over the user), and
// managed hooks run whatever the person's settings say.
func TestCheckPrecedence(t *testing.T) {
	opt := testOptions(t)
	opt.Cwd = filepath.Join(opt.Home, "src", "shop")
	installed("gemini", false)(t, opt)
	editAt(inHome(".gemini/settings.json"), setKey("hooksConfig", `{"enabled": false}`))(t, opt)
	writeAt(inProject(".gemini/settings.json"), stringify(obj("hooksConfig", obj("enabled", true))))(t, opt)
	if f := finding(t, opt, "gemini"); len(f.Problems) > 0 {
		t.Errorf("gemini, hooks on in the workspace: %v", f.Problems)
	}

	opt = testOptions(t)
	p, err := Install("claude", opt)
	if err != nil {
		t.Fatal(err)
	}
	// The hook an administrator put in managed settings, and the
	// person's disableAllHooks: the managed hook still runs.
	write(t, filepath.Join(opt.SystemRoot, "etc/claude-code/managed-settings.json"), string(p.Changes[0].After))
	write(t, filepath.Join(opt.Home, ".claude", "settings.json"), stringify(obj("disableAllHooks", true)))
	if f := finding(t, opt, "claude"); len(f.Problems) > 0 || !f.Configured {
		t.Errorf("claude, a managed hook and the user's disableAllHooks: %v", f.Problems)
	}
}

// TestCheckInvalidSaysOneThing: a settings file an agent cannot read is
// one problem, with where; the agent is then neither "set up" nor "not
// set up".
func TestCheckInvalidSaysOneThing(t *testing.T) {
	opt := testOptions(t)
	write(t, filepath.Join(opt.Home, ".claude", "settings.json"), "{\n  \"model\": \"opus\",\n  \"hooks\": {")
	f := finding(t, opt, "claude")
	if len(f.Problems) != 1 || f.Configured {
		t.Fatalf("configured %v, problems %v", f.Configured, f.Problems)
	}
	if want := "line 3, column 13: the file ends before its JSON does"; !strings.Contains(f.Problems[0].What, want) {
		t.Errorf("%s\nwant it to say %q", f.Problems[0].What, want)
	}
}

// TestCheckProgram: doctor says when the hook's sluice is not the one on
// PATH, and when it is a build inside a source clone that is not on
// PATH; a warning either way.
func TestCheckProgram(t *testing.T) {
	clone := filepath.Join(t.TempDir(), "sluice")
	write(t, filepath.Join(clone, "go.mod"), "module github.com/sluice-dev/sluice\n\ngo 1.26.0\n")
	built := filepath.Join(clone, "bin", "sluice")
	write(t, built, "#!/bin/sh\n")
	if err := os.Chmod(built, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		hook     string // the program the hook runs
		onPath   string // the sluice on PATH
		want     string
		wantNone bool
	}{
		{"clone build, none on PATH", built, "", "a build inside the source clone " + clone + ", and no sluice is on your PATH", false},
		{"clone build, another on PATH", built, "OTHER", "but the sluice on your PATH is", false},
		{"installed, another on PATH", "SLUICE", "OTHER", "but the sluice on your PATH is", false},
		{"installed, the one on PATH", "SLUICE", "SLUICE", "", true},
		{"installed, none on PATH", "SLUICE", "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt := testOptions(t)
			other := filepath.Join(t.TempDir(), "sluice")
			write(t, other, "#!/bin/sh\n")
			os.Chmod(other, 0o755)
			named := map[string]string{"SLUICE": opt.Sluice, "OTHER": other, "": ""}
			hookProg := tc.hook
			if p, ok := named[hookProg]; ok {
				hookProg = p
			}
			opt.PathSluice = named[tc.onPath]
			o := opt
			o.Sluice = hookProg
			installed("claude", false)(t, o)
			f := finding(t, opt, "claude")
			if tc.wantNone {
				if len(f.Problems) > 0 {
					t.Fatalf("want no problem, got %v", f.Problems)
				}
				return
			}
			for _, p := range f.Problems {
				if strings.Contains(p.What, tc.want) {
					if p.Severity != Warning {
						t.Errorf("severity %s, want a warning", p.Severity)
					}
					return
				}
			}
			t.Fatalf("want %q, got %v", tc.want, f.Problems)
		})
	}
}
