package engcmd

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/sluice-dev/sluice/internal/app"
	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/policy"
)

const serveHelp = `Watch the spool and act on what the policy decides alone: allowed requests
are run (at most --max-auto at once), denied ones are refused with the
policy's reason, and requests the policy asks about wait for a person
('sluice approve ID', 'sluice deny ID', or the console). Every step goes to
the audit log before it happens. Logs go to stderr.

SIGINT or SIGTERM stops it cleanly: the commands it started are killed and
answered "killed"; nothing is left claimed.

--hub URL also bridges this box to a fleet hub ('sluice hub --help'): what
waits for a person here is published there, and decisions made at the
hub's consoles are applied here, through this box's own claim, confinement
and audit log. The box's credentials come from --hub-creds (default
~/.config/sluice/hub.creds, written by 'sluice hub add-box NAME'). A hub
that is down changes nothing here: the box serves on, and publishes what
waits once the hub is back. The bridge is sluice-hub, run as a child.

Exit status: 0 when stopped; 1 when the spool or the audit log cannot be
used; 2 for bad flags, a configuration or policy file that does not load,
or an unsafe path.
`

func CmdServe(args []string, std cli.Stdio, g *cli.Globals) int {
	fs := cli.NewFlags("serve", "[--policy FILE] [--audit FILE] [--max-auto N] [--hub URL [--hub-creds FILE]]", serveHelp, std, g)
	a := app.New(g)
	a.RegisterEngine(fs)
	maxAuto := fs.Int("max-auto", 0, "run at most `N` auto-allowed requests at once (default max_auto in config.toml, else 4)")
	hubURL := fs.String("hub", "", "also bridge this box to the fleet hub at `URL` (nats://HOST:PORT)")
	hubCreds := fs.String("hub-creds", "", "the box's hub credentials `FILE` (default ~/.config/sluice/hub.creds)")
	pos, code, ok := fs.ParseArgs(args, true)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return cli.UsageErr(std, "serve", "takes no arguments")
	}
	if *maxAuto < 0 || *maxAuto > app.MaxMaxAuto {
		return cli.UsageErr(std, "serve", "--max-auto must be between 1 and %d", app.MaxMaxAuto)
	}
	cfg, err := a.Config()
	if err != nil {
		fmt.Fprintf(std.Err, "sluice serve: %v\n", err)
		return cli.ExitUsage
	}
	sp, err := a.Spool()
	if err != nil {
		return cli.SpoolErr(std, "serve", err)
	}
	logw := cli.NewLineWriter(std.Err)
	defer logw.Close()
	logf := func(format string, args ...any) {
		fmt.Fprintf(logw, "%s sluice serve: %s\n", time.Now().Format("15:04:05"), cli.Show(fmt.Sprintf(format, args...)))
	}
	a.Logf = logf
	eng, err := a.Engine()
	if err != nil {
		fmt.Fprintf(std.Err, "sluice serve: %v\n", err)
		return app.EngineErrExit(err)
	}
	defer a.Close()
	log := a.Log
	if *maxAuto > 0 {
		eng.MaxAuto = *maxAuto
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	logf("watching %s (audit log %s)", sp.Dir(), log.Path())
	if text, off := app.SandboxStatus(a.Actor.Runner.Confine); off {
		logf("commands run UNCONFINED: %s", text)
	} else {
		logf("commands run confined by %s", text)
	}
	cw := &app.ConfigWatch{FlagValue: g.Config,
		Apply: func(old, nw *app.Config) {
			a.Reconfigure(nw)
			logf("%s", app.ReloadedText(nw.Path, old, nw))
		},
		Problem: func(err error) {
			if err != nil {
				logf("configuration NOT reloaded, the last good one stays in force: %v", err)
			}
		}}
	cw.Start(ctx, cfg)
	go policy.TrustStoreFor(app.TrustPath()).ExpireEvery(ctx, app.TrustExpiry, log, logf)
	go softMemory(ctx)
	if *hubURL != "" || *hubCreds != "" {
		if err := hubBridge(ctx, *hubURL, *hubCreds, sp.Dir(), log.Path(), logf); err != nil {
			fmt.Fprint(std.Err, err)
			return cli.ExitUsage
		}
	}
	eng.Serve(ctx)
	logf("stopped")
	return cli.ExitOK
}
