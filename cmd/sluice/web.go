package main

import (
	"github.com/sluice-dev/sluice/internal/app"
	"github.com/sluice-dev/sluice/internal/cli"
)

// cmdWeb hands 'sluice web' over to sluice-web (cmd/sluice-web; net/http
// would cost every agent process ~1.5 ms to start): the spool and
// config.toml's web keys first, then the person's own arguments (a flag
// given again wins).
func cmdWeb(args []string, std cli.Stdio, g *cli.Globals) int {
	argv := []string{"web"}
	if g.Spool != "" {
		argv = append(argv, "--spool="+g.Spool)
	}
	if cfg, err := app.LoadConfig(g.Config); err == nil {
		argv = append(argv, cfg.WebArgs()...)
	}
	return cli.Handover(std, "web", cli.WebProgram, append(argv, args...))
}
