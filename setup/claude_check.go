package setup

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// isSluiceMCP reports whether an MCP server entry ({command, args}) runs
// sluice's MCP server, whatever its name.
func isSluiceMCP(server any) bool {
	so, ok := server.(*object)
	if !ok {
		return false
	}
	switch filepath.Base(so.str("command")) {
	case "sluice-mcp":
		return true
	case "sluice":
		args, _ := so.array("args")
		for _, a := range args {
			if a == "mcp" {
				return true
			}
		}
	}
	return false
}

// sluiceServers are the names of the MCP servers in an mcpServers
// object that are sluice's (by name or by command), in order.
func sluiceServers(servers *object) []string {
	if servers == nil {
		return nil
	}
	var names []string
	for _, m := range servers.members {
		if m.key == "sluice" || isSluiceMCP(m.value) {
			names = append(names, m.key)
		}
	}
	return names
}

func checkClaude(opt Options) Finding {
	f := Finding{Agent: "claude"}
	install := "sluice install claude"
	var hooks []hookEntry
	allowed := map[string]bool{}
	type switchedOff struct{ file, key string }
	var off []switchedOff // non-managed disableAllHooks
	var managedOff, managedOnly string
	for _, sf := range claudeFiles(opt) {
		o := readSettings(&f, sf.path, strictJSON, notJSON(sf.path, FailOpen, "Claude Code ignores every setting in it, hooks included ('claude doctor' says so too)"))
		if o == nil {
			continue
		}
		hooks = append(hooks, findHooks(sf.path, sf.scope, o, "PreToolUse", "claude", time.Second)...)
		if po := o.obj("permissions"); po != nil {
			allow, _ := po.array("allow")
			for _, a := range allow {
				if s, ok := a.(string); ok {
					allowed[s] = true
				}
			}
		}
		if o.isTrue(disableAllHooks) {
			off = append(off, switchedOff{sf.path, disableAllHooks})
		}
	}
	managedHook := false
	for _, m := range claudeManagedFiles(opt) {
		o := readSettings(&f, m, strictJSON, func(err error) (Severity, string, string) {
			return Warning, fmt.Sprintf("%s (managed settings) is not valid JSON (%v): Claude Code does not apply it", m, err),
				"ask whoever manages Claude Code on this machine to fix it"
		})
		if o == nil {
			continue
		}
		hs := findHooks(m, "managed", o, "PreToolUse", "claude", time.Second)
		managedHook = managedHook || len(hs) > 0
		hooks = append(hooks, hs...)
		if o.isTrue(disableAllHooks) {
			managedOff = m
		}
		if o.isTrue("allowManagedHooksOnly") {
			managedOnly = m
		}
	}

	// MCP servers: ~/.claude.json (user scope, and each project's local
	// scope), and the project's .mcp.json.
	type registration struct {
		file, project string // project "" for every project
	}
	var mcp []registration
	state := claudeState(opt)
	if o := readSettings(&f, state, strictJSON, func(err error) (Severity, string, string) {
		return Warning, fmt.Sprintf("%s is not valid JSON (%v): sluice cannot tell which MCP servers Claude Code starts", state, err), "see 'claude doctor'"
	}); o != nil {
		if len(sluiceServers(o.obj("mcpServers"))) > 0 {
			mcp = append(mcp, registration{state, ""})
		}
		if projects := o.obj("projects"); projects != nil {
			for _, m := range projects.members {
				if po, ok := m.value.(*object); ok && len(sluiceServers(po.obj("mcpServers"))) > 0 {
					mcp = append(mcp, registration{state, m.key})
				}
			}
		}
	}
	if cwd := opt.cwd(); cwd != "" {
		p := filepath.Join(cwd, ".mcp.json")
		if o := readSettings(&f, p, strictJSON, notJSON(p, Warning, "Claude Code starts none of its MCP servers")); o != nil && len(sluiceServers(o.obj("mcpServers"))) > 0 {
			mcp = append(mcp, registration{p, cwd})
		}
	}

	f.Configured = len(hooks) > 0 || len(mcp) > 0
	if !f.Configured {
		return f
	}

	// Where a sluice hook applies: the user's and managed ones
	// everywhere, a project's in that project.
	hookFor := func(project string) bool {
		for _, h := range hooks {
			if h.scope == "user" || h.scope == "managed" {
				return true
			}
			if project != "" && strings.HasPrefix(h.file, filepath.Join(project, ".claude")+string(filepath.Separator)) {
				return true
			}
		}
		if project == "" || project == opt.cwd() {
			return false
		}
		for _, name := range []string{"settings.json", "settings.local.json"} {
			p := filepath.Join(project, ".claude", name)
			if o, err := readSettingsFile(p, strictJSON); err == nil && o != nil && len(findHooks(p, "project", o, "PreToolUse", "claude", time.Second)) > 0 {
				return true
			}
		}
		return false
	}
	for _, r := range mcp {
		if hookFor(r.project) {
			continue
		}
		switch {
		case r.project == "" && len(hooks) > 0:
			f.add(FailOpen, fmt.Sprintf("%s registers sluice's MCP server for every project, but sluice's hook is only in %s: in other projects Claude Code's own tools (Bash, Edit, Write) run without sluice", r.file, hooks[0].file), install+" --mcp")
		case r.project == "":
			f.add(FailOpen, fmt.Sprintf("%s registers sluice's MCP server for every project, but no sluice hook is set up: Claude Code's own tools (Bash, Edit, Write) run without sluice", r.file), install+" --mcp")
		case strings.HasSuffix(r.file, ".mcp.json"):
			f.add(FailOpen, fmt.Sprintf("%s registers sluice's MCP server, but no sluice hook is set up: Claude Code's own tools (Bash, Edit, Write) run without sluice", r.file), install+" --mcp")
		default:
			f.add(FailOpen, fmt.Sprintf("%s registers sluice's MCP server for the project %s (projects.%q.mcpServers: 'claude mcp add' writes it there), but no sluice hook is set up for it: Claude Code's own tools (Bash, Edit, Write) run there without sluice", r.file, r.project, r.project),
				install+" (its hook covers every project; the MCP server may stay)")
		}
	}

	// What turns the hooks off.
	switch {
	case managedOff != "":
		f.add(FailOpen, fmt.Sprintf("%s (managed settings) sets %q: true: Claude Code runs no hook at all, sluice's included", managedOff, disableAllHooks),
			"managed settings are not sluice's to change: ask whoever manages Claude Code on this machine to take it out")
	case managedOnly != "" && !managedHook:
		f.add(FailOpen, fmt.Sprintf("%s (managed settings) sets \"allowManagedHooksOnly\": true: Claude Code runs only the hooks in managed settings, and sluice's is not one", managedOnly),
			"ask whoever manages Claude Code on this machine to add sluice's hook to the managed settings ('"+install+" --dry-run' shows it)")
	case !managedHook:
		for _, s := range off {
			f.add(FailOpen, fmt.Sprintf("%s sets %q: true: Claude Code runs no hook from your settings, sluice's included", s.file, s.key),
				install+" (it asks, then takes it out), or delete that line")
		}
		if v := opt.env("CLAUDE_CODE_SAFE_MODE"); truthy(v) {
			f.add(FailOpen, "CLAUDE_CODE_SAFE_MODE="+v+" is set here: Claude Code started from this environment runs in safe mode, with no hook from your settings, sluice's included",
				"unset CLAUDE_CODE_SAFE_MODE (and start Claude Code without --safe-mode or --bare)")
		}
	}

	for _, h := range hooks {
		checkHook(&f, opt, h, 60*time.Second, install)
		all, known := matchesAll(h.matcher, "Bash", "Edit", "MultiEdit", "Write")
		switch {
		case !known:
			f.add(Warning, fmt.Sprintf("%s: the matcher %q cannot be checked here", h.file, h.matcher), install)
		case !all:
			f.add(FailOpen, fmt.Sprintf("%s: the matcher %q leaves out some of Bash, Edit, MultiEdit and Write: those run without sluice", h.file, h.matcher), install)
		}
		if len(mcp) > 0 && h.matcher != claudeMatcher {
			if all, _ := matchesAll(h.matcher, "mcp__sluice__run_command"); all {
				f.add(Warning, fmt.Sprintf("%s: the hook's matcher %q also matches sluice's own MCP tools: each MCP call is asked about twice", h.file, h.matcher),
					install+" --mcp (its matcher skips mcp__sluice__*)")
			}
		}
	}
	if len(hooks) > 1 {
		var files []string
		for _, h := range hooks {
			files = append(files, h.file)
		}
		sort.Strings(files)
		f.add(Warning, fmt.Sprintf("%d sluice hooks are set up (%s): each tool call is asked about %d times", len(hooks), strings.Join(files, ", "), len(hooks)), install+" (it keeps one)")
	}
	if len(mcp) > 0 {
		for _, t := range claudeMCPTools {
			if !allowed[t] && !allowed["mcp__sluice"] {
				f.add(Warning, fmt.Sprintf("sluice's MCP tool %s is not in permissions.allow: Claude Code asks its own question before sluice asks", t), install+" --mcp")
				break
			}
		}
	}
	return f
}
