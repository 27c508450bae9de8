package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/internal/app"
	"github.com/sluice-dev/sluice/queue"
	"github.com/sluice-dev/sluice/themes"
	"github.com/sluice-dev/sluice/tui"
)

// consoleOptions is o with what every console takes from the person's
// settings: the theme, the name, the grace period, bell, notifications.
func consoleOptions(styles *themes.Styles, auto bool, cfg *app.Config, o tui.Options) tui.Options {
	o.Styles, o.AutoTheme, o.Actor, o.Grace = styles, auto, audit.Login(), cfg.Console.Grace
	o.Bell = cfg.Console.Bell == nil || *cfg.Console.Bell
	o.Notify = cfg.Console.Notify == nil || *cfg.Console.Notify
	o.Tmux = os.Getenv("TMUX") != ""
	return o
}

// pickTheme chooses the styles: NO_COLOR wins, then --theme, then the
// config, then the terminal's background (auto).
func pickTheme(flagValue, configValue string) (*themes.Styles, bool, error) {
	if os.Getenv("NO_COLOR") != "" {
		return themes.Mono(), false, nil
	}
	name := flagValue
	if name == "" {
		name = configValue
	}
	if name == "" || name == "auto" {
		return themes.Default(true), true, nil
	}
	dir := filepath.Join(filepath.Dir(app.DefaultPolicyFile()), "themes")
	st, err := themes.Load(name, dir)
	return st, false, err
}

// watchSpoolWritable tells the console, at once and then whenever it
// changes, whether the spool can be written (a read-only or full file
// system: nothing can be claimed nor answered), looking every 2 s until
// ctx ends, so that the header clears by itself once it is fixed.
func watchSpoolWritable(ctx context.Context, sp *queue.Spool, tell func(error)) {
	last := ""
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		err := sp.CheckWritable()
		now := ""
		switch {
		case err == nil:
		case errors.Is(err, syscall.EROFS):
			now = "READ-ONLY: remount " + sp.Dir() + " read-write"
		case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
			now = "FULL: free space in " + sp.Dir()
		default:
			now = "NOT WRITABLE: " + err.Error()
		}
		if now != last {
			last = now
			if now == "" {
				tell(nil)
			} else {
				tell(errors.New(now))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
