package setup

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Problem is something in an agent's configuration that a person should
// fix, and how.
type Problem struct {
	Agent string
	// FailOpen: with it, a tool can run that neither the policy nor a
	// person allowed (or an agent waits forever).
	FailOpen bool
	What     string
	Fix      string
}

func (p Problem) String() string {
	sev := "warning"
	if p.FailOpen {
		sev = "FAIL-OPEN"
	}
	return fmt.Sprintf("%s: %s: %s\n  fix: %s", p.Agent, sev, p.What, p.Fix)
}

// Finding is what Check found for one agent.
type Finding struct {
	Agent      string
	Configured bool     // a sluice hook is set up in some file
	Files      []string // the settings files read
	Problems   []Problem
}

// defaultWait is the hook's --wait when its command line gives none
// (hook.DefaultWait), and hookGrace how long past it the hook may still
// wait for an actor caught mid-answer (hook.Grace).
const (
	defaultWait = 110 * time.Second
	hookGrace   = 2 * time.Second
)

// Check reads each agent's configuration (the user's, and the project's
// in opt.Project when set) and reports what would let a tool run unasked.
func Check(opt Options) []Finding {
	return []Finding{checkClaude(opt), checkCodex(opt), checkGemini(opt)}
}

// checkHook checks one sluice hook entry: the program, the timeout
// against the wait. agentTimeout is the agent's default hook timeout.
func checkHook(f *Finding, h hookEntry, agentTimeout time.Duration, install string) {
	fail := func(what, fix string) {
		f.Problems = append(f.Problems, Problem{Agent: f.Agent, FailOpen: true, What: h.file + ": " + what, Fix: fix})
	}
	words := strings.Fields(h.command)
	prog := strings.Trim(words[0], `'"`)
	switch {
	case !filepath.IsAbs(prog):
		fail(fmt.Sprintf("the hook runs %q by a relative name: where it is not on the agent's PATH the hook fails to start, and the agent runs the tool", prog),
			install+" (it writes the absolute path of sluice)")
	default:
		if fi, err := os.Stat(prog); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			fail(fmt.Sprintf("the hook runs %s, which is missing or not executable: the hook fails to start, and the agent runs the tool", prog),
				install+" (from the sluice you mean to use)")
		}
	}
	wait := defaultWait
	for i, w := range words {
		if (w == "--wait" || w == "-wait") && i+1 < len(words) {
			if d, err := time.ParseDuration(words[i+1]); err == nil {
				wait = d
			}
		} else if v, ok := strings.CutPrefix(w, "--wait="); ok {
			if d, err := time.ParseDuration(v); err == nil {
				wait = d
			}
		}
	}
	timeout := h.timeout
	if timeout == 0 {
		timeout = agentTimeout
	}
	if timeout <= wait+hookGrace {
		fail(fmt.Sprintf("the agent kills the hook after %s, before sluice answers (it waits up to %s for a decision): the agent then runs the tool", timeout, wait+hookGrace),
			install+fmt.Sprintf(" (it sets the timeout to the wait plus %s)", Margin))
	}
}

// matchesAll reports whether a hook matcher (a tool name, names joined by
// |, * or empty for all, or a regular expression) matches every tool in
// names; known is false when the expression is one Go cannot read
// (JavaScript's lookahead).
func matchesAll(matcher string, names ...string) (all, known bool) {
	switch matcher {
	case "", "*", ".*", claudeMatcher, geminiMatcher:
		return true, true
	}
	if regexp.MustCompile(`^[A-Za-z0-9_|]+$`).MatchString(matcher) {
		for _, n := range names {
			if !strings.Contains("|"+matcher+"|", "|"+n+"|") {
				return false, true
			}
		}
		return true, true
	}
	re, err := regexp.Compile(matcher)
	if err != nil {
		return false, false
	}
	for _, n := range names {
		if !re.MatchString(n) {
			return false, true
		}
	}
	return true, true
}

// readObject reads a settings file as an object; nil when it is missing
// or unreadable (the problem is added to f then).
func readObject(f *Finding, path string) *object {
	data, existed, _, err := readFile(path)
	if err != nil {
		f.Problems = append(f.Problems, Problem{Agent: f.Agent, What: fmt.Sprintf("cannot read %s: %v", path, err), Fix: "make it readable"})
		return nil
	}
	if !existed {
		return nil
	}
	f.Files = append(f.Files, path)
	o, err := parseObject(data)
	if err != nil {
		f.Problems = append(f.Problems, Problem{Agent: f.Agent, FailOpen: true,
			What: fmt.Sprintf("%s is not valid JSON (%v): the agent may ignore it, hooks and all", path, err), Fix: "fix the file by hand"})
		return nil
	}
	return o
}

func checkClaude(opt Options) Finding {
	f := Finding{Agent: "claude"}
	install := "sluice install claude"
	paths := []string{filepath.Join(opt.Home, ".claude", "settings.json")}
	if opt.Project != "" {
		paths = append(paths, filepath.Join(opt.Project, ".claude", "settings.json"), filepath.Join(opt.Project, ".claude", "settings.local.json"))
	}
	var hooks []hookEntry
	allowed := map[string]bool{}
	for _, p := range paths {
		o := readObject(&f, p)
		if o == nil {
			continue
		}
		hooks = append(hooks, findHooks(p, o, "PreToolUse", "claude", time.Second)...)
		if perms, ok := o.get("permissions"); ok {
			if po, ok := perms.(*object); ok {
				allow, _ := po.array("allow")
				for _, a := range allow {
					if s, ok := a.(string); ok {
						allowed[s] = true
					}
				}
			}
		}
	}
	mcp := false
	for _, p := range []string{filepath.Join(opt.Home, ".claude.json"), filepath.Join(opt.Project, ".mcp.json")} {
		if p == ".mcp.json" && opt.Project == "" {
			continue
		}
		data, existed, _, err := readFile(p)
		if err != nil || !existed {
			continue
		}
		if o, err := parseObject(data); err == nil {
			if s, ok := o.get("mcpServers"); ok {
				if so, ok := s.(*object); ok {
					_, mcp = so.get("sluice")
				}
			}
		}
		if mcp {
			break
		}
	}
	f.Configured = len(hooks) > 0 || mcp
	if !f.Configured {
		return f
	}
	if len(hooks) == 0 {
		f.Problems = append(f.Problems, Problem{Agent: "claude", FailOpen: true,
			What: "sluice's MCP server is set up, but no sluice hook: Claude Code's own tools (Bash, Edit, Write) run without sluice",
			Fix:  install + " --mcp"})
	}
	for _, h := range hooks {
		checkHook(&f, h, 60*time.Second, install)
		all, known := matchesAll(h.matcher, "Bash", "Edit", "MultiEdit", "Write")
		switch {
		case !known:
			f.Problems = append(f.Problems, Problem{Agent: "claude", What: fmt.Sprintf("%s: the matcher %q cannot be checked here", h.file, h.matcher), Fix: install})
		case !all:
			f.Problems = append(f.Problems, Problem{Agent: "claude", FailOpen: true,
				What: fmt.Sprintf("%s: the matcher %q leaves out some of Bash, Edit, MultiEdit and Write: those run without sluice", h.file, h.matcher), Fix: install})
		}
		if mcp && h.matcher != claudeMatcher {
			if all, _ := matchesAll(h.matcher, "mcp__sluice__run_command"); all {
				f.Problems = append(f.Problems, Problem{Agent: "claude",
					What: fmt.Sprintf("%s: the hook's matcher %q also matches sluice's own MCP tools: each MCP call is asked about twice", h.file, h.matcher),
					Fix:  install + " --mcp (its matcher skips mcp__sluice__*)"})
			}
		}
	}
	if len(hooks) > 1 {
		f.Problems = append(f.Problems, Problem{Agent: "claude", What: fmt.Sprintf("%d sluice hooks are set up: each tool call is asked about %d times", len(hooks), len(hooks)), Fix: install + " (it keeps one)"})
	}
	if mcp {
		for _, t := range claudeMCPTools {
			if !allowed[t] && !allowed["mcp__sluice"] {
				f.Problems = append(f.Problems, Problem{Agent: "claude",
					What: fmt.Sprintf("sluice's MCP tool %s is not in permissions.allow: Claude Code asks its own question before sluice asks", t),
					Fix:  install + " --mcp"})
				break
			}
		}
	}
	return f
}

// fallbackOf is a hook command line's --fallback value, "" when not
// given.
func fallbackOf(command string) string {
	words := strings.Fields(command)
	for i, w := range words {
		if (w == "--fallback" || w == "-fallback") && i+1 < len(words) {
			return strings.Trim(words[i+1], `'"`)
		}
		if v, ok := strings.CutPrefix(w, "--fallback="); ok {
			return strings.Trim(v, `'"`)
		}
	}
	return ""
}
