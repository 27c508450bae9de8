package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/term"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/change"
	"github.com/sluice-dev/sluice/checkpoint"
	"github.com/sluice-dev/sluice/exec"
	"github.com/sluice-dev/sluice/internal/app"
	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/policy"
	"github.com/sluice-dev/sluice/queue"
	"github.com/sluice-dev/sluice/tui"
)

const consoleHelp = `The console: what the agents ask, with the policy's verdict, one key to
approve or deny. What the policy allows runs on its own, what it denies is
refused with its reason; the rest waits for you. Approved commands run,
and their output shows in the output pane (a command runs in a pty, unless
its request says tty false: 'sluice run' whose output is not a terminal,
the MCP server); everything goes to the audit log.

Keys:
  a              approve the selected request
  d              deny it (with an optional reason)
  e              edit the command, then approve it (the edit is judged again)
  A              approve and keep a rule (a dialog shows the rule first); on a
                 run's connection to a host outside its set: allow it for the
                 rest of the run and add the host to network_allow in your
                 policy file, for every later run
  r              on a run's connection: allow that host for the rest of the run
                 (y allows it once, n refuses)
  T              approve and trust the command for the agent session, for a
                 while (a dialog shows the pattern first)
  space          mark a request; a with marks approves them together
  U              approve unconfined: no kernel confinement (asks first)
  x              kill the running command (asks first)
  p              let a run that waits for its turn go ahead now
  u              in History: undo what the selected run changed
  F              in the undo dialog: restore anyway (files changed since,
                 or changed by another run too)
  j/k ↑/↓        move
  tab            switch pane
  /              filter the queue (esc clears it)
  pgup/pgdn      scroll the request, or the output
  home/end g/G   top and end
  [ ]            previous and next diff hunk
  f              follow the output again
  W              the browsers paired with the web approver ('sluice web'):
                 when each was paired and last seen; enter, then y, revokes
                 one, as 'sluice web revoke' does
  ?              every key, in the console
  q              quit (asks if something runs)
In a dialog, y or enter means yes and esc means no.

Approve keys are inert for a moment after the selection changes or a new
request arrives, so a keystroke meant for something else cannot approve
what was just drawn.

--demo starts on a temporary spool and audit log with a built-in agent
that submits a realistic mix of requests: nothing of yours is touched.

--hub URL makes it the console of a fleet ('sluice hub --help'): the
requests waiting on every box of the hub, with a box column (filter one box
with /@NAME), decided with a and d (the first decision a hub gets for a
request stands; a later one is told who decided), the output and outcome
of what the boxes run; a run's connection is allowed once (y) or for the
rest of its run (r, or A, which keeps no rule from here). Edits, rules,
trusts, kills and undo are made on the box itself. Credentials: --hub-creds, from 'sluice hub add-console NAME'.

Exit status: 0 when quit (q, SIGTERM or SIGHUP); 1 when the spool, the
audit log, the terminal or (--hub) the hub cannot be used; 2 for bad flags,
sluice-hub not installed, a configuration, policy or theme that does not
load, or an unsafe path.
`

func cmdConsole(args []string, std cli.Stdio, g *cli.Globals) int {
	fs := cli.NewFlags("console", "[--policy FILE] [--audit FILE] [--theme NAME] [--demo | --hub URL [--hub-creds FILE]]", consoleHelp, std, g)
	a := app.New(g)
	a.RegisterEngine(fs)
	theme := fs.String("theme", "", "colour `THEME`: auto, dark, light, high-contrast, mono, or a user theme (default [console] theme in config.toml, else auto)")
	demo := fs.Bool("demo", false, "run on a temporary spool with a built-in fake agent")
	hubURL := fs.String("hub", "", "be the console of a fleet: every box's requests from the hub at `URL` (nats://HOST:PORT; see 'sluice hub --help')")
	hubCreds := fs.String("hub-creds", "", "the console's hub credentials `FILE` (default ~/.config/sluice/hub.creds, written by 'sluice hub add-console NAME')")
	pos, code, ok := fs.ParseArgs(args, true)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return cli.UsageErr(std, "console", "takes no arguments")
	}
	if !term.IsTerminal(os.Stdout.Fd()) || !term.IsTerminal(os.Stdin.Fd()) {
		fmt.Fprintln(std.Err, "sluice console: needs a terminal (run it in a terminal, a tmux pane or an ssh -t session); for a headless engine use 'sluice serve'")
		return cli.ExitUsage
	}
	cfg, err := a.Config()
	if err != nil {
		fmt.Fprintf(std.Err, "sluice console: %v\n", err)
		return cli.ExitUsage
	}
	styles, auto, err := pickTheme(*theme, cfg.Console.Theme)
	if err != nil {
		fmt.Fprintf(std.Err, "sluice console: %v\n", err)
		return cli.ExitUsage
	}

	if *hubURL != "" || *hubCreds != "" {
		switch {
		case *demo:
			return cli.UsageErr(std, "console", "--demo runs on a temporary spool of its own, not with --hub")
		case a.PolicyFile != "" || a.AuditFile != "":
			return cli.UsageErr(std, "console", "--policy and --audit are each box's own, not the fleet console's (--hub)")
		}
		return consoleFleet(std, *hubURL, *hubCreds, styles, auto, cfg)
	}

	var demoDir string
	if *demo {
		demoDir, err = os.MkdirTemp("", "sluice-demo-")
		if err != nil {
			fmt.Fprintf(std.Err, "sluice console: %v\n", err)
			return cli.ExitFail
		}
		defer os.RemoveAll(demoDir)
		g.Spool = filepath.Join(demoDir, "spool")
		a.AuditFile = filepath.Join(demoDir, "audit.jsonl")
		// A rule added with A goes here, not into the person's own
		// policy file.
		a.PolicyFile = filepath.Join(demoDir, "policy.toml")
		if err := os.WriteFile(a.PolicyFile, []byte("# sluice console --demo: rules added with A land here, and go with the demo\n"), 0o600); err != nil {
			fmt.Fprintf(std.Err, "sluice console: demo: %v\n", err)
			return cli.ExitFail
		}
		if err := demoProject(filepath.Join(demoDir, "project")); err != nil {
			fmt.Fprintf(std.Err, "sluice console: demo: %v\n", err)
			return cli.ExitFail
		}
	}
	sp, err := a.Spool()
	if err != nil {
		return cli.SpoolErr(std, "console", err)
	}
	shared := sp.Serving() // before this console's own engine joins
	eng, err := a.Engine()
	if err != nil {
		fmt.Fprintf(std.Err, "sluice console: %v\n", err)
		return app.EngineErrExit(err)
	}
	defer a.Close()
	actor, judge, log := a.Actor, a.Judge, a.Log
	sbText, sbOff := app.SandboxStatus(actor.Runner.Confine)

	rules := &consoleRules{judge: judge, file: a.UserPolicyFile(), trust: judge.Trusts, rec: log,
		actor: audit.Login(), trustOf: cfg.Console.TrustWindow()}
	undoer := &consoleUndo{st: cfg.CheckpointStore(), logPath: log.Path(), rec: log, actor: audit.Login()}
	if undoer.st == nil {
		undoer.st = &checkpoint.Store{Dir: app.CheckpointDir()} // off for new runs; old ones can still be undone
	}
	webDevs := newWebDevices(log, audit.Login())
	if *demo {
		webDevs.dir = filepath.Join(demoDir, "web") // none of the person's own devices
	}
	runCtx, killRuns := context.WithCancel(context.Background())
	defer killRuns()
	m := tui.New(consoleOptions(styles, auto, cfg, tui.Options{
		Engine:   eng,
		Preview:  tui.PreviewFunc(previewer(actor)),
		Terminal: actor.Runner,
		Rules: tui.RuleFuncs{
			Propose: policy.Proposals,
			Count:   matchCounter(judge, log.Path()),
			Text:    rules.text,
			Add:     rules.add,
			// A on a connect request: a network_allow entry.
			ProposeHost: policy.HostProposals,
			HostText:    rules.hostText,
			AddHost:     rules.addHost,
			CountHost:   hostCounter(log.Path()),
			Problem: func() string {
				if judge == nil {
					return ""
				}
				return judge.Problem()
			},
		},
		Trusts:     tui.TrustFuncs{Trust: rules.trustRule, List: rules.trusts},
		PolicyFile: app.HomeShort(a.UserPolicyFile()),
		Undo:       tui.UndoFuncs{Note: actor.CheckpointNote, Plan: undoer.plan, Apply: undoer.apply},
		Devices:    webDevs,
		Demo:       *demo,
		Ctx:        runCtx,
		Sandbox:    sbText,
		SandboxOff: sbOff,
		Spool:      app.HomeShort(sp.Dir()),
		Shared:     shared,
	}))
	actor.Runner.Size = func() (uint16, uint16) { return m.PaneSize() }

	serveCtx, stopServe := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		eng.Serve(serveCtx)
	}()
	go followHistory(serveCtx, log.Path(), cfg.Console.HistoryLen(), ownSpool(sp.Dir(), m.Logged))
	go watchSpoolWritable(serveCtx, sp, m.SpoolProblem)
	cw := &app.ConfigWatch{FlagValue: g.Config,
		Apply: func(old, nw *app.Config) {
			a.Reconfigure(nw)
			sb, off := app.SandboxStatus(actor.Runner.Confinement())
			m.Reconfigured(tui.Settings{Bell: nw.Console.Bell == nil || *nw.Console.Bell,
				Notify: nw.Console.Notify == nil || *nw.Console.Notify, Grace: nw.Console.Grace,
				Sandbox: sb, SandboxOff: off}, app.ReloadedText(nw.Path, old, nw))
		},
		Problem: m.ConfigProblem}
	cw.Start(serveCtx, cfg)
	go rules.trust.ExpireEvery(serveCtx, app.TrustExpiry, log, nil)
	if *demo {
		go func() {
			_, _ = demoAgent(serveCtx, sp, filepath.Join(demoDir, "project"), 1500*time.Millisecond)
		}()
	}
	// SIGTERM and SIGHUP end the console like q does: runs are killed
	// and answered, nothing is left claimed.
	sigCtx, stopSig := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGHUP)
	defer stopSig()
	p := tea.NewProgram(m, tea.WithContext(sigCtx))
	_, runErr := p.Run()
	// Quitting kills what runs; the audit log names the person who quit.
	eng.KillAllAs(audit.Login())
	killRuns()
	stopServe()
	<-served
	m.Wait()
	if runErr != nil && sigCtx.Err() == nil {
		fmt.Fprintf(std.Err, "sluice console: %v\n", runErr)
		return cli.ExitFail
	}
	return cli.ExitOK
}

// previewer computes a file request's diff against the files as they are.
func previewer(a *exec.Actor) func(*queue.Request) (string, error) {
	return func(req *queue.Request) (string, error) {
		var jail []string
		if a.Jail != nil && req.Cwd != "" {
			jail = a.Jail(req.Cwd)
		}
		return change.Preview(req, jail)
	}
}
