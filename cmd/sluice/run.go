package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/queue"
)

const runHelp = `Queue COMMAND as an exec request and wait until a person (or the policy)
decides. While it runs, its output streams to stdout; then sluice exits with
the command's own exit code.

The words after -- are joined with spaces and run with bash -c (/bin/sh
-c where there is no bash), so
  sluice run -- 'go test ./... && go vet ./...'
  sluice run -- go test ./...
both work.

When a person edited the command before approving it, the edited command
is what runs, and sluice run says so on stderr, naming it.

Exit status:
  the command's    it ran
  126              denied (the reason goes to stderr)
  124              killed at its timeout
  123              stopped part way: it started, and the sluice process
                   running it stopped (crash or kill); check its effects
                   before running it again
  125              not run: expired, invalid, interrupted, failed, killed,
                   an allow the audit log does not hold, or sluice itself
                   failed
  130, 143         sluice run got SIGINT or SIGTERM (a request nobody had
                   claimed yet is withdrawn)
  2                usage error
`

func cmdRun(args []string, std cli.Stdio, g *cli.Globals) int {
	fs := cli.NewFlags("run", "[flags] -- COMMAND...", runHelp, std, g).Unused("config")
	cwd := fs.String("cwd", "", "run in `DIR` (default: the current directory)")
	timeout := fs.Duration("timeout", 0, "kill the command after `DUR`, such as 30s, 5m or 1h (default: the console's configured default)")
	expires := fs.Duration("expires", 10*time.Minute, "give up if nobody decides within `DUR`")
	note := fs.String("note", "", "a note for the person deciding: why the command is needed")
	agent := fs.String("agent", os.Getenv("SLUICE_AGENT"), "the agent's `NAME` (env SLUICE_AGENT)")
	session := fs.String("session", os.Getenv("SLUICE_SESSION"), "the agent's session `ID` (env SLUICE_SESSION)")
	asJSON := fs.Bool("json", false, "print the result JSON instead of the output")
	// The command's own words must reach it untouched, so flags end at the
	// first word that is not one ('sluice run ls -la').
	words, code, ok := fs.ParseArgs(args, false)
	if !ok {
		return code
	}
	if len(words) == 0 || strings.TrimSpace(strings.Join(words, "")) == "" {
		return cli.UsageErr(std, "run", "no command given (sluice run -- COMMAND...)")
	}
	if *timeout < 0 || *timeout > queue.MaxTimeout {
		return cli.UsageErr(std, "run", "--timeout must be between 1s and %s", queue.MaxTimeout)
	}
	if *expires <= 0 {
		return cli.UsageErr(std, "run", "--expires must be positive")
	}
	dir, err := cli.AbsDir(*cwd)
	if err != nil {
		return cli.UsageErr(std, "run", "%v", err)
	}
	if *agent == "" {
		*agent = "cli"
	}
	now := time.Now().UTC()
	req := &queue.Request{
		Version:   queue.Version,
		ID:        queue.NewID(),
		Kind:      queue.KindExec,
		Mode:      queue.ModeExecute,
		Command:   strings.Join(words, " "),
		Cwd:       dir,
		TimeoutS:  int((*timeout + time.Second - 1) / time.Second),
		Agent:     *agent,
		Session:   *session,
		Note:      *note,
		CreatedAt: now,
		ExpiresAt: now.Add(*expires),
	}
	// A terminal only when the output goes to one: a script or an agent
	// reading it gets it through pipes, without colour codes.
	if !cli.StdoutIsTerminal(std) {
		req.TTY = new(bool)
	}
	if err := req.Validate(); err != nil {
		return cli.UsageErr(std, "run", "%v", err)
	}
	sp, err := g.OpenSpool()
	if err != nil {
		fmt.Fprintf(std.Err, "sluice run: %v\n", err)
		return cli.ExitNotRun
	}
	serving := sp.Serving()
	if !serving {
		// The request still waits (an engine may start), but the agent's
		// person should not wait in silence.
		fmt.Fprintf(std.Err, "sluice run: nothing serves the spool %s yet: start 'sluice console' (or 'sluice serve') with the same spool; waiting up to %s\n", cli.Show(sp.Dir()), *expires)
	}
	var logTo io.Writer = std.Out
	if *asJSON {
		logTo = nil
	}
	ctx := cli.NewSignals().ArmFor(serving)
	res, err := submitAndWait(ctx, sp, req, logTo, std.Err, "run")
	if err != nil {
		fmt.Fprintf(std.Err, "sluice run: %s\n", cli.Show(err.Error()))
		if code, ok := cli.InterruptCode(err); ok {
			return code
		}
		return cli.ExitNotRun
	}
	// (Output the log lacks, none kept or some lost, came from the
	// result's tail as the wait ended: queue's logFollower.fill.)
	if *asJSON {
		cli.WriteJSON(std.Out, res)
	}
	return cli.RunExit(res, std)
}
