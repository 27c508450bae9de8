package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/queue"
)

// cmdActor implements "actor [flags] STATUS [EXIT]" and "actor stop".
func cmdActor(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! actor")
	}
	st := stateOf(ts)
	if len(args) == 1 && args[0] == "stop" {
		if st.stopActor == nil {
			ts.Fatalf("actor stop: no actor is running")
		}
		errs := st.stopActor()
		st.stopActor = nil
		ts.Check(errors.Join(errs...))
		return
	}
	if st.stopActor != nil {
		ts.Fatalf("actor: one is running already; 'actor stop' it first")
	}
	a, err := parseActor(args)
	if err != nil {
		ts.Fatalf("actor: %v\nusage: actor [-output TEXT] [-reason TEXT] [-command TEXT] [-nolog] [-forge] STATUS [EXIT] | actor stop", err)
	}
	a.auditPath = ts.Getenv("SLUICE_AUDIT")
	stop := a.start(openSpool(ts))
	st.stopActor = stop
	ts.Defer(func() {
		// stop is idempotent: an actor stopped by "actor stop" returns
		// the errors it already reported.
		if err := errors.Join(stop()...); err != nil {
			if tb, ok := st.t.(testing.TB); ok {
				tb.Errorf("%v", err)
			} else {
				st.t.Log(err)
				st.t.FailNow()
			}
		}
	})
}

func parseActor(args []string) (*fakeActor, error) {
	fs := flag.NewFlagSet("actor", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	output := fs.String("output", "", "what the command printed")
	reason := fs.String("reason", "", "the result's reason")
	noLog := fs.Bool("nolog", false, "write no log, only output_tail")
	forge := fs.Bool("forge", false, "record nothing in the audit log: a result file anyone could write")
	command := fs.String("command", "", "the command as a person edited it before approving")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	a := &fakeActor{noLog: *noLog, forge: *forge, command: *command}
	var err error
	if a.output, err = unescape(*output); err != nil {
		return nil, fmt.Errorf("-output: %w", err)
	}
	if a.reason, err = unescape(*reason); err != nil {
		return nil, fmt.Errorf("-reason: %w", err)
	}
	rest := fs.Args()
	if len(rest) == 0 || len(rest) > 2 {
		return nil, errors.New("want STATUS [EXIT]")
	}
	switch s := queue.Status(rest[0]); s {
	case "hold":
		a.hold = true
	case queue.StatusDone, queue.StatusDenied, queue.StatusTimeout, queue.StatusKilled,
		queue.StatusFailed, queue.StatusInterrupted, queue.StatusDecided:
		a.status = s
	default:
		return nil, fmt.Errorf("unknown status %q", s)
	}
	if len(rest) == 2 {
		code, err := strconv.Atoi(rest[1])
		if err != nil {
			return nil, fmt.Errorf("bad exit code %q", rest[1])
		}
		a.exitCode = &code
	} else if a.status == queue.StatusDone {
		a.exitCode = new(int)
	}
	return a, nil
}

// unescape interprets Go escapes such as \n and \x1b in s.
func unescape(s string) (string, error) {
	return strconv.Unquote(`"` + strings.ReplaceAll(s, `"`, `\"`) + `"`)
}

// fakeActor answers every pending request of a spool the same way, as a
// console would once a person pressed a key, without running anything.
type fakeActor struct {
	status   queue.Status
	exitCode *int
	output   string // what the command printed; "" means "ran: COMMAND\n"
	reason   string
	noLog    bool // no out/<id>.log: the output is only in the result
	hold     bool // claim and keep the claim until stopped
	// auditPath, when set, is the audit log the actor records its
	// decisions in and publishes, as an engine does: writers believe
	// an allow only when the log holds it.
	auditPath string
	log       *audit.Log
	forge     bool // publish auditPath but record nothing in it
	// command, when set, is the command as a person edited it: what
	// "ran", in the result and the approval's audit line.
	command string
}

// start watches sp and answers what is pending until the returned stop is
// called; stop returns the errors met on the way.
func (a *fakeActor) start(sp *queue.Spool) (stop func() []error) {
	ctx, cancel := context.WithCancel(context.Background())
	// It stands in for an engine, so it says it serves the spool as one
	// does: writers check.
	if a.auditPath != "" {
		var err error
		if a.log, err = audit.Open(a.auditPath); err != nil {
			panic(err) // the test's own audit log
		}
	}
	release, err := sp.Present(a.auditPath)
	if err != nil {
		release = func() {}
	}
	events := sp.Watch(ctx, queue.WatchOptions{})
	done := make(chan []error, 1)
	go func() {
		var errs []error
		var held []*queue.Claim
		for ev := range events {
			if ev.Op != queue.Pending {
				continue
			}
			c, err := a.answer(sp, ev.ID)
			if err != nil {
				errs = append(errs, err)
			}
			if c != nil {
				held = append(held, c)
			}
		}
		for _, c := range held {
			c.Close()
		}
		done <- errs
	}()
	var once sync.Once
	var errs []error
	return func() []error {
		once.Do(func() {
			cancel()
			errs = <-done
			release()
			if a.log != nil {
				a.log.Close()
			}
		})
		return errs
	}
}

// answer claims request id and finishes it; with hold set it returns the
// claim instead. A request some other process acted on first is skipped.
func (a *fakeActor) answer(sp *queue.Spool, id string) (*queue.Claim, error) {
	start := time.Now()
	c, err := sp.Claim(id, start)
	switch {
	case errors.Is(err, queue.ErrNotFound), errors.Is(err, queue.ErrClaimed), errors.Is(err, queue.ErrResulted),
		errors.Is(err, queue.ErrBusy), errors.Is(err, queue.ErrExpired):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("actor: claim %s: %w", id, err)
	}
	if a.hold {
		return c, nil
	}
	res := queue.Result{Status: a.status, Decision: queue.Allow, DecidedBy: queue.ByHuman, Reason: a.reason}
	if a.status == queue.StatusDenied {
		res.Decision = queue.Deny
	} else {
		res.Command = a.command
	}
	if res.Ran() {
		out := a.output
		if out == "" {
			out = "ran: " + c.Request.Summary() + "\n"
		}
		if !a.noLog {
			if err := os.WriteFile(sp.LogPath(id), []byte(out), 0o600); err != nil {
				c.Close()
				return nil, fmt.Errorf("actor: %w", err)
			}
			res.Log = queue.LogRel(id)
		}
		if a.exitCode != nil {
			code := *a.exitCode
			res.ExitCode = &code
		}
		res.OutputTail, res.OutputBytes = out, int64(len(out))
		res.StartedAt, res.FinishedAt = start, time.Now()
		res.DurationMS = 1
		if a.status == queue.StatusTimeout && c.Request.TimeoutS > 0 {
			res.DurationMS = int64(c.Request.TimeoutS) * 1000
		}
	}
	if a.log != nil && !a.forge {
		name := queue.EventApproved
		if res.Decision == queue.Deny {
			name = queue.EventDenied
		}
		ev := queue.NewEvent(name, c.Request)
		ev.Actor = "tester"
		if res.Command != "" {
			ev.Command, ev.EditedFrom = res.Command, c.Request.Command
		}
		if err := a.log.Record(ev); err != nil {
			c.Close()
			return nil, fmt.Errorf("actor: %w", err)
		}
	}
	if err := c.Finish(res); err != nil {
		return nil, fmt.Errorf("actor: finish %s: %w", id, err)
	}
	return nil, nil
}
