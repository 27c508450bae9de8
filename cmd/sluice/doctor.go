package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sluice-dev/sluice/exec/sandbox"
	"github.com/sluice-dev/sluice/internal/app"
	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/queue"
	"github.com/sluice-dev/sluice/setup"
)

const doctorHelp = `Check sluice and every agent configured to use it for what would let a
tool run with nobody asked, or leave an agent waiting forever:

  each agent (Claude Code, Codex, Gemini CLI) with a sluice hook or MCP
  server anywhere it reads settings from: the user's files, the system's
  (managed) files, and the project's in the current directory (Claude
  Code's ~/.claude.json projects too): the hook's program is an absolute
  path that exists (and is the sluice on your PATH); the agent's hook
  timeout is above sluice's wait; the matcher covers the agent's tools
  and skips sluice's own MCP tools; no setting turns hooks off (Claude
  Code's disableAllHooks, managed allowManagedHooksOnly, Codex's
  [features] hooks = false, Gemini CLI's hooksConfig); an MCP server has
  a hook beside it; Codex trusts the hook (an untrusted or edited hook is
  skipped) and falls back to deny; Gemini CLI's fallback is not ask
  (headless, it would hang); the MCP server gets the environment it needs
  sluice itself: a console or 'sluice serve' on the spool; the spool an
  agent started from another environment would use; confinement

Each problem is printed with what fixes it: FAIL-OPEN (a tool can run
unasked), HANGS (an agent waits until killed), BROKEN (an agent does not
start as it is set up), or a warning. Exit status: 1 if there is any
problem but warnings, else 0.
`

func cmdDoctor(args []string, std cli.Stdio, g *cli.Globals) int {
	fs := cli.NewFlags("doctor", "", doctorHelp, std, g)
	pos, code, ok := fs.ParseArgs(args, true)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return cli.UsageErr(std, "doctor", "takes no arguments")
	}
	opt, err := setupOptions(g, false)
	if err != nil {
		fmt.Fprintf(std.Err, "sluice doctor: %v\n", err)
		return cli.ExitFail
	}
	worst := map[setup.Severity]bool{}
	report := func(p setup.Problem) {
		worst[p.Severity] = true
		fmt.Fprintln(std.Out, p.String())
	}
	for _, p := range sluiceProblems(g) {
		report(p)
	}
	configured, unknown := 0, 0
	for _, f := range setup.Check(opt) {
		if f.Configured {
			configured++
		} else if len(f.Problems) > 0 {
			unknown++ // its problems say why it cannot tell
		}
		switch {
		case !f.Configured && len(f.Problems) == 0:
			fmt.Fprintf(std.Out, "%s: not set up (sluice install %s)\n", f.Agent, f.Agent)
		case f.Configured && len(f.Problems) == 0:
			fmt.Fprintf(std.Out, "%s: ok\n", f.Agent)
		}
		for _, p := range f.Problems {
			report(p)
		}
	}
	if configured == 0 && unknown == 0 {
		fmt.Fprintln(std.Out, "no agent is set up to use sluice: run 'sluice install claude' (or codex, gemini)")
	}
	for _, s := range []struct {
		sev  setup.Severity
		what string
	}{
		{setup.FailOpen, "some tool calls can run with nobody asked"},
		{setup.Hangs, "an agent can wait until it is killed"},
		{setup.Broken, "an agent does not start as it is set up"},
	} {
		if worst[s.sev] {
			fmt.Fprintf(std.Out, "%s: fix the %s problems above\n", s.what, s.sev)
		}
	}
	if worst[setup.FailOpen] || worst[setup.Hangs] || worst[setup.Broken] {
		return cli.ExitFail
	}
	return cli.ExitOK
}

// sluiceProblems checks sluice's own side: someone serving the spool,
// the spool an agent would find, confinement.
func sluiceProblems(g *cli.Globals) []setup.Problem {
	var ps []setup.Problem
	add := func(failOpen bool, what, fix string) {
		sev := setup.Warning
		if failOpen {
			sev = setup.FailOpen
		}
		ps = append(ps, setup.Problem{Agent: "sluice", Severity: sev, What: what, Fix: fix})
	}
	sp, err := g.OpenSpool()
	if err != nil {
		add(false, fmt.Sprintf("the spool cannot be opened: %v", err), "see the message above")
		return ps
	}
	if !sp.Serving() {
		add(false, fmt.Sprintf("nothing serves the spool %s: every hook answers its fallback (ask or deny) and 'sluice run' waits", sp.Dir()),
			"start 'sluice console' (or 'sluice serve') in another terminal")
	}
	if env := os.Getenv("SLUICE_SPOOL"); env != "" && g.Spool == "" {
		add(false, fmt.Sprintf("SLUICE_SPOOL=%s is set here: an agent started where it is not set uses the default spool, and meets no console", env),
			"install the hooks with 'sluice --spool "+env+" install AGENT', or unset SLUICE_SPOOL")
	}
	if xdg := os.Getenv("XDG_RUNTIME_DIR"); xdg != "" && g.Spool == "" && os.Getenv("SLUICE_SPOOL") == "" {
		if run, ok := queue.RunUserDir(); ok && filepath.Clean(xdg) != run {
			add(false, fmt.Sprintf("XDG_RUNTIME_DIR=%s is not %s: an agent started without it uses %s/sluice, not %s/sluice", xdg, run, run, xdg),
				"unset XDG_RUNTIME_DIR, or give both sides one spool with SLUICE_SPOOL")
		} else if !ok {
			add(false, fmt.Sprintf("XDG_RUNTIME_DIR=%s is set here, and this machine has no /run/user/%d: an agent started without it uses the state directory's spool", xdg, os.Getuid()),
				"give both sides one spool: SLUICE_SPOOL, or 'sluice --spool DIR install AGENT'")
		}
	}
	cfg, err := app.LoadConfig(g.Config)
	if err != nil {
		add(false, err.Error(), "fix the configuration file")
		return ps
	}
	if how, off := app.SandboxStatus(cfg.Confine(sp.Dir())); off {
		add(false, "commands run unconfined: "+how, `a Linux kernel with Landlock (5.13 or later), or sandbox = "prefer" in config.toml`)
	}
	if _, err := sandbox.Available(); err == nil && !cfg.ConfineHook() {
		add(false, "hook_confine = false: commands an agent's hook allows run unconfined in the agent", "remove hook_confine from config.toml")
	}
	return ps
}
