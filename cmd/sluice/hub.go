package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sluice-dev/sluice/internal/cli"
)

// hubProgram is the program 'sluice hub' runs (cmd/sluice-hub): the NATS
// packages would add over a millisecond to the start of every sluice
// process, and 'sluice run' and the hooks start once per agent command.
const hubProgram = "sluice-hub"

const hubMissing = `sluice hub: the fleet hub is a separate program, sluice-hub, not found next to
%s nor on $PATH. Install the programs together:
  go install github.com/sluice-dev/sluice/cmd/...@latest
or, in a checkout, 'make build' (bin/sluice, bin/sluice-hub, bin/sluice-mcp).
`

// cmdHub hands 'sluice hub' over to sluice-hub, with --spool passed on.
func cmdHub(args []string, std cli.Stdio, g *cli.Globals) int {
	self, _ := os.Executable()
	prog, err := findBeside(self, hubProgram)
	if err != nil {
		fmt.Fprintf(std.Err, hubMissing, self)
		return cli.ExitUsage
	}
	argv := []string{prog, "hub"}
	if g.Spool != "" && len(args) > 0 && args[0] == "box" {
		argv = append(argv, "box", "--spool", g.Spool)
		args = args[1:]
	}
	argv = append(argv, args...)
	err = syscall.Exec(prog, argv, os.Environ())
	fmt.Fprintf(std.Err, "sluice hub: run %s: %v\n", prog, err)
	return cli.ExitFail
}

// errHubMissing says sluice-hub is not installed, and how to install it.
type errHubMissing struct{ self string }

func (e errHubMissing) Error() string { return fmt.Sprintf(hubMissing, e.self) }

// findBeside looks for program next to this one, then on $PATH.
func findBeside(self, program string) (string, error) {
	if self != "" {
		p := filepath.Join(filepath.Dir(self), program)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := osexec.LookPath(program)
	if err != nil {
		return "", errors.New(program + " not found")
	}
	return filepath.Abs(p)
}

// hubBridge runs 'sluice-hub box' beside serve for as long as ctx lasts,
// restarting it if it stops: the box publishes what waits for a person
// and applies the decisions made at the hub. Its lines go to logf.
func hubBridge(ctx context.Context, url, creds, spool, auditPath string, logf func(string, ...any)) error {
	self, _ := os.Executable()
	prog, err := findBeside(self, hubProgram)
	if err != nil {
		return errHubMissing{self}
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
			cmd.SysProcAttr = childAttr()
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
