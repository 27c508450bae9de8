package main

import (
	"context"
	"errors"
	"fmt"
	"os/signal"
	"syscall"

	tea "charm.land/bubbletea/v2"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/hub/link"
	"github.com/sluice-dev/sluice/internal/app"
	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/themes"
	"github.com/sluice-dev/sluice/tui"
)

// startHubLink starts the console's link to the hub: a 'sluice-hub hub
// feed' child (NATS stays out of this program).
func startHubLink(url, creds string) (*link.Link, error) {
	prog, err := cli.Program(cli.HubProgram)
	if err != nil {
		return nil, err
	}
	return link.Start(link.Feed{Program: prog, Hub: url, Creds: creds, SysProcAttr: cli.ChildAttr()})
}

// consoleFleet runs the console over a hub: no spool or engine of its own.
func consoleFleet(std cli.Stdio, url, creds string, styles *themes.Styles, auto bool, cfg *app.Config) int {
	fleet, err := startHubLink(url, creds)
	if err != nil {
		fmt.Fprintf(std.Err, "sluice console: --hub: %v\n", err)
		if errors.As(err, new(*cli.MissingError)) {
			return cli.ExitUsage
		}
		return cli.ExitFail
	}
	defer fleet.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := tui.New(consoleOptions(styles, auto, cfg, tui.Options{Fleet: fleet, Preview: fleet, Ctx: ctx,
		Devices: newWebDevices(auditFile{}, audit.Login())}))
	go fleet.Run(m)
	sigCtx, stopSig := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGHUP)
	defer stopSig()
	_, runErr := tea.NewProgram(m, tea.WithContext(sigCtx)).Run()
	cancel()
	m.Wait()
	if runErr != nil && sigCtx.Err() == nil {
		fmt.Fprintf(std.Err, "sluice console: %v\n", runErr)
		return cli.ExitFail
	}
	return cli.ExitOK
}
