package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/hook"
	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/internal/engcmd"
	"github.com/sluice-dev/sluice/setup"
)

const installHelp = `Write an agent's own configuration so that every tool call it makes goes
through sluice, and so that it cannot fail open:

  claude   ~/.claude/settings.json: a PreToolUse hook for every tool but
           sluice's own MCP tools; with --mcp, sluice's MCP server in
           ~/.claude.json and its tools in permissions.allow
  codex    ~/.codex/hooks.json and ~/.codex/config.toml: a PreToolUse hook
           for Bash, apply_patch and MCP tools but sluice's, trusted the
           way Codex records trust; with --mcp, [mcp_servers.sluice] with
           the environment it needs to find the console's spool
  gemini   ~/.gemini/settings.json: a BeforeTool hook for every tool but
           sluice's own MCP tools; with --mcp, sluice's MCP server

With --project, the project's settings in the current directory instead
(.claude/settings.json and .mcp.json; .gemini/settings.json; Codex has no
project hooks). The hook runs this sluice by its absolute path, with
--wait DUR, and the agent's hook timeout is DUR plus 10s: sluice answers
(deny, or ask where the agent honours it) before the agent would kill the
hook and run the tool.

A setting of yours that turns every hook off, sluice's included, is
taken out too, and sluice asks first: Claude Code's "disableAllHooks":
true in the settings it reads here (user, project, local), Gemini CLI's
hooksConfig.enabled false. Managed and system settings are not for
install to change: it says what they decide.

sluice shows the diff of each file and asks before writing (--yes does
not ask, and says what it took out; --dry-run only shows it). Each file
is backed up first (FILE.sluice-backup-TIME), and only sluice's own
members are added or taken out: the rest of each file stays as it was,
byte for byte. Running it again changes nothing; 'sluice uninstall
AGENT' takes out what it wrote, removes a file it leaves empty, and
creates none.

Exit status: 0 when written, or nothing needed changing, or with --dry-run;
1 when not confirmed or a file cannot be read or written; 2 for bad flags.
`

const uninstallHelp = `Take sluice's hook, MCP server and permissions out of an agent's
configuration (see 'sluice install --help'), leaving everything else as it
is, byte for byte; a file left with nothing in it is removed, and no file
is created. Shows the diff and asks first; each file is backed up.
`

func cmdInstall(args []string, std cli.Stdio, g *cli.Globals) int {
	return runInstall("install", args, std, g)
}

func cmdUninstall(args []string, std cli.Stdio, g *cli.Globals) int {
	return runInstall("uninstall", args, std, g)
}

func runInstall(name string, args []string, std cli.Stdio, g *cli.Globals) int {
	help, synopsis := installHelp, "claude|codex|gemini [--project] [--mcp] [--wait DUR] [--dry-run] [--yes]"
	if name == "uninstall" {
		help, synopsis = uninstallHelp, "claude|codex|gemini [--project] [--dry-run] [--yes]"
	}
	fs := cli.NewFlags(name, synopsis, help, std, g)
	project := fs.Bool("project", false, "the project's settings in the current directory, not the user's")
	dryRun := fs.Bool("dry-run", false, "show the diff, write nothing")
	yes := fs.Bool("yes", false, "write without asking")
	var mcp *bool
	var wait *time.Duration
	if name == "install" {
		mcp = fs.Bool("mcp", false, "also register sluice's MCP server (run_command, write_file, edit_file)")
		wait = fs.Duration("wait", hook.DefaultWait, "how long the hook waits for a decision (`DUR`); the agent's timeout is this plus 10s")
	}
	pos, code, ok := fs.ParseArgs(args, true)
	if !ok {
		return code
	}
	if len(pos) != 1 || !setup.Known(pos[0]) {
		return cli.UsageErr(std, name, "which agent? claude, codex or gemini")
	}
	agent := pos[0]
	opt, err := setupOptions(g, *project)
	if err != nil {
		fmt.Fprintf(std.Err, "sluice %s: %v\n", name, err)
		return cli.ExitFail
	}
	var plan *setup.Plan
	if name == "install" {
		opt.MCP, opt.Wait = *mcp, *wait
		if opt.Wait <= 0 || opt.Wait+hook.Grace > 10*time.Minute {
			return cli.UsageErr(std, name, "--wait must be positive and under 10m")
		}
		plan, err = setup.Install(agent, opt)
	} else {
		plan, err = setup.Uninstall(agent, opt)
	}
	if err != nil {
		fmt.Fprintf(std.Err, "sluice %s: %v\n", name, err)
		return cli.ExitFail
	}
	if plan.Empty() {
		fmt.Fprintf(std.Out, "%s: nothing to change\n", agent)
		printNotes(std, plan)
		return cli.ExitOK
	}
	fmt.Fprint(std.Out, plan.Diff())
	for _, a := range plan.Asks {
		fmt.Fprintf(std.Out, "your setting: %s\n", a)
	}
	if *dryRun {
		printNotes(std, plan)
		return cli.ExitOK
	}
	if !*yes {
		for _, a := range plan.Asks {
			if !engcmd.Confirm(std, a.Question+" [y/N] ") {
				fmt.Fprintf(std.Err, "nothing written: while %s sets %s, %s\n", a.File, a.Setting, a.Why)
				return cli.ExitFail
			}
		}
		if !engcmd.Confirm(std, fmt.Sprintf("Write %s? [y/N] ", changedFiles(plan))) {
			fmt.Fprintln(std.Err, "nothing written")
			return cli.ExitFail
		}
	}
	backups, err := plan.Apply(time.Now())
	for _, b := range backups {
		fmt.Fprintf(std.Out, "backup: %s\n", b)
	}
	if err != nil {
		fmt.Fprintf(std.Err, "sluice %s: %v\n", name, err)
		return cli.ExitFail
	}
	fmt.Fprintf(std.Out, "%sed %s: %s\n", name, agent, changedFiles(plan))
	for _, a := range plan.Asks {
		fmt.Fprintf(std.Out, "%s: %s (while it was there, %s)\n", a.File, a.Done, lowerFirst(a.Why))
	}
	printNotes(std, plan)
	if name == "install" {
		fmt.Fprintf(std.Out, "check it with: sluice doctor\n")
	}
	return cli.ExitOK
}

// setupOptions are the paths every install and check uses.
func setupOptions(g *cli.Globals, project bool) (setup.Options, error) {
	var opt setup.Options
	home, err := os.UserHomeDir()
	if err != nil {
		return opt, err
	}
	self, err := os.Executable()
	if err != nil {
		return opt, fmt.Errorf("cannot tell where this sluice is: %w", err)
	}
	if self, err = filepath.EvalSymlinks(self); err != nil {
		return opt, err
	}
	opt.Home, opt.Sluice, opt.Spool = home, self, g.Spool
	opt.Getenv, opt.PathSluice = os.Getenv, setup.LookPath(os.Getenv("PATH"))
	if ch := os.Getenv("CODEX_HOME"); ch != "" && filepath.IsAbs(ch) {
		opt.CodexHome = ch
	}
	if opt.Cwd, err = os.Getwd(); err != nil {
		return opt, err
	}
	if opt.Spool != "" {
		if opt.Spool, err = filepath.Abs(opt.Spool); err != nil {
			return opt, err
		}
	}
	if project {
		opt.Project = opt.Cwd
	}
	return opt, nil
}

func changedFiles(p *setup.Plan) string {
	var names []string
	for _, c := range p.Changes {
		if c.Remove {
			names = append(names, c.Path+" (removed: nothing else was in it)")
			continue
		}
		names = append(names, c.Path)
	}
	return strings.Join(names, ", ")
}

func lowerFirst(s string) string {
	if s == "" || strings.HasPrefix(s, "Claude") || strings.HasPrefix(s, "Gemini") || strings.HasPrefix(s, "Codex") {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

func printNotes(std cli.Stdio, p *setup.Plan) {
	for _, n := range p.Notes {
		fmt.Fprintf(std.Out, "note: %s\n", n)
	}
}
