package main

import (
	"bufio"
	"context"
	osexec "os/exec"
	"syscall"
	"time"

	"github.com/sluice-dev/sluice/internal/cli"
)

// cmdHub hands 'sluice hub' over to sluice-hub, with --spool passed on.
func cmdHub(args []string, std cli.Stdio, g *cli.Globals) int {
	argv := []string{"hub"}
	if g.Spool != "" && len(args) > 0 && args[0] == "box" {
		argv = append(argv, "box", "--spool", g.Spool)
		args = args[1:]
	}
	return cli.Handover(std, "hub", cli.HubProgram, append(argv, args...))
}

// hubBridge runs 'sluice-hub box' beside serve for as long as ctx lasts,
// restarting it if it stops: the box publishes what waits for a person
// and applies the decisions made at the hub. Its lines go to logf.
func hubBridge(ctx context.Context, url, creds, spool, auditPath string, logf func(string, ...any)) error {
	prog, err := cli.Program(cli.HubProgram)
	if err != nil {
		return err
	}
	args := []string{"hub", "box", "--spool", spool, "--audit", auditPath}
	if url != "" {
		args = append(args, "--hub", url)
	}
	if creds != "" {
		args = append(args, "--hub-creds", creds)
	}
	go func() {
		for ctx.Err() == nil {
			cmd := osexec.Command(prog, args...)
			cmd.SysProcAttr = cli.ChildAttr()
			stderr, err := cmd.StderrPipe()
			if err == nil {
				err = cmd.Start()
			}
			if err != nil {
				logf("the hub bridge does not start: %v", err)
			} else {
				done := make(chan struct{})
				go func() {
					sc := bufio.NewScanner(stderr)
					for sc.Scan() {
						line := sc.Text()
						// serve stamps its lines itself.
						if len(line) > 9 && line[2] == ':' && line[5] == ':' && line[8] == ' ' {
							line = line[9:]
						}
						logf("%s", line)
					}
					close(done)
				}()
				stop := context.AfterFunc(ctx, func() { _ = cmd.Process.Signal(syscall.SIGTERM) })
				<-done
				err := cmd.Wait()
				stop()
				if ctx.Err() != nil {
					return
				}
				logf("the hub bridge stopped (%v); starting it again in 5 s", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(5 * time.Second):
			}
		}
	}()
	return nil
}
