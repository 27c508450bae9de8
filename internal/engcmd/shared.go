package engcmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	osexec "os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/queue"
)

// What the engine's commands share with sluice's others (deny, undo, hook,
// install, trust, wait): who decides, what a claim held elsewhere means, a
// yes/no at a terminal, the hub bridge serve starts, a diff printed.

// ActorName is as, shown safely, when given (someone deciding elsewhere,
// named by the hub bridge), else the login name.
func ActorName(as string) string {
	if as == "" {
		return LoginName()
	}
	return cli.Show(as)
}

// ExplainClaim turns a failed claim into a message that says what happened
// to the request and what to do.
func ExplainClaim(sp *queue.Spool, id string, err error) error {
	var inv *queue.InvalidError
	switch {
	case errors.Is(err, queue.ErrResulted):
		if res, rerr := sp.ReadResult(id); rerr == nil {
			return fmt.Errorf("%s was already answered: %s", id, res.Status)
		}
		return fmt.Errorf("%s was already answered", id)
	case errors.Is(err, queue.ErrClaimed):
		return fmt.Errorf("%s was already claimed: it is running, or its actor died and a console will answer it interrupted; see 'sluice ls'", id)
	case errors.Is(err, queue.ErrBusy):
		return fmt.Errorf("another sluice process is acting on %s right now; see 'sluice ls'", id)
	case errors.Is(err, queue.ErrWriterGone):
		return fmt.Errorf("%s was not run: the process that submitted it stopped waiting (exited or was killed); it was withdrawn (answered expired)", id)
	case errors.Is(err, queue.ErrExpired):
		return fmt.Errorf("%s had expired; it was answered expired", id)
	case errors.Is(err, queue.ErrExists):
		return fmt.Errorf("%s reuses an id already answered; it was moved to bad/", id)
	case errors.As(err, &inv):
		return fmt.Errorf("%s is invalid (%s); it was moved to bad/ and answered invalid", id, cli.Show(inv.Reason))
	case errors.Is(err, queue.ErrNotFound):
		return fmt.Errorf("no request %s in %s; see 'sluice ls'", cli.Show(id), sp.Dir())
	}
	return err
}

// Confirm asks a yes/no question on stdin.
func Confirm(std cli.Stdio, question string) bool {
	fmt.Fprint(std.Err, question)
	// One line, a byte at a time: a second question reads the next.
	var b []byte
	var c [1]byte
	for len(b) < 64 {
		n, err := std.In.Read(c[:])
		if n == 1 {
			if c[0] == '\n' {
				break
			}
			b = append(b, c[0])
		}
		if err != nil {
			break
		}
	}
	a := strings.ToLower(strings.TrimSpace(string(b)))
	return a == "y" || a == "yes"
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

// PrintDiff writes a diff of files an agent wrote, line by line, as
// text: what a terminal would act on is shown escaped.
func PrintDiff(w io.Writer, diff string) {
	if diff == "" {
		return
	}
	for _, l := range strings.Split(strings.TrimRight(diff, "\n"), "\n") {
		fmt.Fprintln(w, cli.Show(strings.ReplaceAll(l, "\t", "    ")))
	}
}

// LoginName is the person acting, as the audit log records them.
func LoginName() string { return audit.Login() }
