package main

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-dev/sluice/checkpoint"
	"github.com/sluice-dev/sluice/internal/app"
	"github.com/sluice-dev/sluice/internal/cli"
)

const checkpointsHelp = `Prune the checkpoints taken around runs: keep the newest runs'
(checkpoint_keep in config.toml, default 200; --keep) no older than
checkpoint_max_age (default 720h; --max-age), drop the rest, and let git
reclaim their space. A run whose checkpoints are gone can no longer be
undone.

Exit status: 0; 1 when the checkpoints cannot be read; 2 usage.
`

func cmdCheckpoints(args []string, std cli.Stdio, g *cli.Globals) int {
	if len(args) == 0 || args[0] != "prune" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprintf(std.Out, "Usage: sluice checkpoints prune [--keep N] [--max-age DUR]\n\n%s", checkpointsHelp)
			return cli.ExitOK
		}
		return cli.UsageErr(std, "checkpoints", "the subcommand is prune: sluice checkpoints prune [--keep N] [--max-age DUR]")
	}
	fs := cli.NewFlags("checkpoints prune", "[--keep N] [--max-age DUR]", checkpointsHelp, std, g).Unused("spool")
	keep := fs.Int("keep", 0, "keep the newest `N` runs' checkpoints (default checkpoint_keep)")
	maxAge := fs.Duration("max-age", 0, "drop checkpoints older than `DUR` (default checkpoint_max_age)")
	pos, code, ok := fs.ParseArgs(args[1:], true)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return cli.UsageErr(std, "checkpoints prune", "takes no arguments")
	}
	cfg, err := app.LoadConfig(g.Config)
	if err != nil {
		fmt.Fprintf(std.Err, "sluice checkpoints: %v\n", err)
		return cli.ExitUsage
	}
	k, age := cfg.CheckpointRetention()
	if *keep < 0 || *maxAge < 0 {
		return cli.UsageErr(std, "checkpoints prune", "--keep and --max-age must be positive")
	}
	if *keep > 0 {
		k = *keep
	}
	if *maxAge > 0 {
		age = *maxAge
	}
	st := &checkpoint.Store{Dir: app.CheckpointDir()}
	n, err := st.Prune(context.Background(), k, age, time.Now())
	if err != nil {
		fmt.Fprintf(std.Err, "sluice checkpoints: %s\n", cli.Show(err.Error()))
		return cli.ExitFail
	}
	fmt.Fprintf(std.Out, "pruned the checkpoints of %d run(s); the newest %d, no older than %s, are kept in %s\n", n, k, age, app.CheckpointDir())
	return cli.ExitOK
}
