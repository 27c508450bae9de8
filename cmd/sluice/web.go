package main

import (
	"fmt"

	"github.com/sluice-dev/sluice/internal/app"
	"github.com/sluice-dev/sluice/internal/cli"
)

// cmdWeb hands 'sluice web' over to sluice-web (cmd/sluice-web, a program
// of its own: its web server, embedded page and WebAuthn stay out of every
// agent's process): the spool and config.toml's web keys first, then the
// person's own arguments (a flag given again wins). A configuration that
// does not load is said, and its web keys are left out.
func cmdWeb(args []string, std cli.Stdio, g *cli.Globals) int {
	argv := []string{"web"}
	if g.Spool != "" {
		argv = append(argv, "--spool="+g.Spool)
	}
	cfg, err := app.LoadConfig(g.Config)
	if err != nil {
		fmt.Fprintf(std.Err, "sluice web: warning: %v (its web_url, notify_url and web_require_passkey are not applied)\n", err)
	} else {
		argv = append(argv, cfg.WebArgs()...)
	}
	return cli.Handover(std, "web", cli.WebProgram, append(argv, args...))
}
