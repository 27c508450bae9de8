package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/exec"
	"github.com/sluice-dev/sluice/exec/sandbox"
	"github.com/sluice-dev/sluice/hook"
	"github.com/sluice-dev/sluice/internal/app"
	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/internal/engcmd"
	"github.com/sluice-dev/sluice/policy"
	"github.com/sluice-dev/sluice/queue"
	"github.com/sluice-dev/sluice/setup"
)

// 'sluice hook AGENT' is flags and wiring around package hook: the hook
// answers an agent's "may I run this tool?" question, and exits 0
// whatever happens except on a usage error of its own command line (2,
// which every agent treats as "blocked").

const hookHelp = `Answer an AI coding agent's pre-tool hook: the tool call the agent is about
to make (a shell command, a file edit, any other tool) is queued as a
decide-mode request; the console or 'sluice serve' decides it by policy or
by a person; the decision goes back to the agent, which runs the tool
itself.

Usage: sluice hook AGENT [--wait DUR] [--fallback ask|deny] [--audit FILE] < hook-input.json

Agents:
  claude   Claude Code PreToolUse hook
  gemini   Gemini CLI BeforeTool hook
  codex    Codex PreToolUse hook (Claude Code's format; Bash, apply_patch, MCP)

Run 'sluice install AGENT' to set an agent up (it writes the agent's own
configuration so that it cannot fail open), and 'sluice hook AGENT --help'
for what the agent is answered.
`

func cmdHook(args []string, std cli.Stdio, g *cli.Globals) int {
	if len(args) == 0 {
		fmt.Fprint(std.Err, hookHelp)
		return cli.ExitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(std.Out, hookHelp)
		return cli.ExitOK
	}
	a := hook.Lookup(args[0])
	if a == nil {
		return cli.UsageErr(std, "hook", "unknown agent %q (want claude, gemini or codex)", cli.Show(args[0]))
	}
	return runHook(a, args[1:], std, g)
}

// runHook is one hook call for agent a.
func runHook(a *hook.Agent, args []string, std cli.Stdio, g *cli.Globals) int {
	// The agent kills a hook it has given up on: withdraw the request
	// then, so that nobody approves it after the agent moved on (armed
	// once the wait lasts: an engine's own verdict comes sooner).
	ctx := cli.NewSignals().ArmFor(true)
	fs := cli.NewFlags("hook "+a.Name, a.Synopsis, a.Help, std, g)
	wait := fs.Duration("wait", hook.DefaultWait, "answer the fallback if nobody decides within `DUR`; keep it under the agent's hook timeout ('sluice install' sets both)")
	fallback := fs.String("fallback", "", "what to answer when nobody decides: `ask` (the agent's own prompt) or deny (env SLUICE_HOOK_FALLBACK; default: "+a.FallbackHelp+")")
	auditFile := fs.String("audit", "", "the audit log an allow must be recorded in (env SLUICE_AUDIT; default: the one the console or serve publishes in the spool)")
	pos, code, ok := fs.ParseArgs(args, true)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return cli.UsageErr(std, "hook "+a.Name, "takes the hook input on stdin, not as arguments")
	}
	if *wait <= 0 || *wait > queue.MaxTimeout {
		return cli.UsageErr(std, "hook "+a.Name, "--wait must be between 1ms and %s", queue.MaxTimeout)
	}
	fb, err := hookFallback(*fallback, a)
	if err != nil {
		if *fallback != "" {
			return cli.UsageErr(std, "hook "+a.Name, "%v", err)
		}
		// A bad environment is not the agent's usage error: refuse every
		// call, loudly, rather than guess.
		a.Write(std.Out, hook.Answer{Decision: hook.Deny, Reason: "sluice: " + err.Error()})
		return cli.ExitOK
	}
	opt := hook.Options{Wait: *wait, Fallback: fb, Actor: engcmd.LoginName}
	var sp *queue.Spool
	if sp, err = g.OpenSpool(); err != nil {
		ans := hook.Answer{Decision: fb, Reason: "sluice: " + err.Error()}
		a.Write(std.Out, ans)
		return cli.ExitOK
	}
	opt.Verify = verifier(*auditFile, sp)
	// How an allowed command is confined is worked out while the request
	// waits for its decision (the configuration, the kernel's support,
	// this program's path): the hook is idle then.
	var confine func(*queue.Request, *queue.Result) string
	var cfgErr error
	confined := make(chan struct{})
	go func() {
		defer close(confined)
		var cfg *app.Config
		if cfg, cfgErr = app.LoadConfig(g.Config); cfgErr == nil {
			confine = hookConfine(cfg, sp.Dir())
		}
	}()
	opt.Confine = func(req *queue.Request, res *queue.Result) string {
		<-confined
		if confine == nil {
			return ""
		}
		return confine(req, res)
	}
	ans := hook.Decide(ctx, a, std.In, sp, opt)
	if <-confined; cfgErr != nil && ans.Decision == hook.Allow {
		// The configuration says how allowed commands run: unreadable,
		// nothing is allowed.
		ans = hook.Answer{Decision: hook.Deny, Reason: "sluice: " + cfgErr.Error()}
	}
	ans.Reason = cli.Show(ans.Reason)
	a.Write(std.Out, ans)
	return cli.ExitOK
}

// verifier is what a writer believes an allow by: the audit log named by
// flagValue, else SLUICE_AUDIT, else the one the engine serving sp
// publishes (protocol section 3).
func verifier(flagValue string, sp *queue.Spool) queue.Verifier {
	if flagValue == "" {
		flagValue = os.Getenv("SLUICE_AUDIT")
	}
	return audit.Verifier{Path: flagValue, Spool: sp}
}

// hookFallback reads --fallback, else SLUICE_HOOK_FALLBACK, else the
// agent's default (what it honours: deny for Codex, which runs the tool on
// ask).
func hookFallback(flagValue string, a *hook.Agent) (hook.Decision, error) {
	v, from := flagValue, "--fallback"
	if v == "" {
		v, from = os.Getenv("SLUICE_HOOK_FALLBACK"), "SLUICE_HOOK_FALLBACK"
	}
	switch hook.Decision(v) {
	case "":
		return a.Fallback(), nil
	case hook.Ask, hook.Deny:
		return hook.Decision(v), nil
	}
	return "", fmt.Errorf("%s=%q is not ask or deny", from, v)
}

// agentProjectDir is the project directory the agent's hook says it
// works in (Claude Code's CLAUDE_PROJECT_DIR, Gemini CLI's
// GEMINI_PROJECT_DIR), or "".
func agentProjectDir() string {
	for _, v := range []string{"CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR"} {
		if d := os.Getenv(v); d != "" && filepath.IsAbs(d) {
			return filepath.Clean(d)
		}
	}
	return ""
}

// boundRoots bounds a run's roots by the agent's project directory: a
// root above it (the git top level of a home directory kept in git, a
// monorepo the project is one directory of) becomes the project
// directory itself. Roots inside it, or beside it, stay as they are.
func boundRoots(roots []string, project string) []string {
	if project == "" {
		return roots
	}
	var out []string
	for _, r := range roots {
		r = filepath.Clean(r)
		if r != project && (r == "/" || strings.HasPrefix(project, r+"/")) {
			r = project
		}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// hookConfine wraps a shell command a hook allows in 'sluice sandbox',
// so that the agent runs it confined to its verdict's profile, when
// confinement is on (hook_confine and sandbox in config.toml) and the
// kernel can confine; nil otherwise.
func hookConfine(cfg *app.Config, spool string) func(*queue.Request, *queue.Result) string {
	if !cfg.ConfineHook() || cfg.SandboxMode() == exec.SandboxOff {
		return nil
	}
	if _, err := sandbox.Available(); err != nil {
		return nil
	}
	self, err := os.Executable()
	if err != nil || !filepath.IsAbs(self) {
		return nil
	}
	return func(req *queue.Request, res *queue.Result) string {
		profile := string(sandbox.Mutating)
		if res.Verdict != nil && res.Verdict.Profile != "" {
			profile = res.Verdict.Profile
		}
		var b strings.Builder
		b.WriteString(setup.ShellQuote(self))
		if spool != "" {
			b.WriteString(" --spool " + setup.ShellQuote(spool))
		}
		b.WriteString(" sandbox --profile " + setup.ShellQuote(profile))
		for _, r := range boundRoots(policy.Roots(req.Cwd), agentProjectDir()) {
			b.WriteString(" --root " + setup.ShellQuote(r))
		}
		if res.Verdict != nil && profile == string(sandbox.Networked) {
			for _, h := range res.Verdict.Hosts {
				b.WriteString(" --host " + setup.ShellQuote(h))
			}
		}
		b.WriteString(" -- " + exec.Shell() + " -c " + setup.ShellQuote(req.Command))
		return b.String()
	}
}
