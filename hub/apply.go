package hub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"

	"github.com/sluice-dev/sluice/queue"
)

// ExecApplier applies decisions by running the box's sluice: 'sluice
// approve --yes --digest D --as WHO [--run] ID' and 'sluice deny --as WHO
// --reason R ID', with the spool and audit log the box serves.
type ExecApplier struct {
	Sluice string   // the sluice binary
	Args   []string // global flags before the command (--spool DIR)
	Audit  string   // --audit for approve and deny; "" for the default
}

// Approve implements Applier.
func (a *ExecApplier) Approve(ctx context.Context, id, digest, actor string, out io.Writer) error {
	return a.ApproveScoped(ctx, id, digest, actor, "", out)
}

// ApproveScoped implements ScopedApplier: queue.ScopeRun adds --run.
func (a *ExecApplier) ApproveScoped(ctx context.Context, id, digest, actor string, scope queue.Scope, out io.Writer) error {
	// Values as --flag=VALUE: what the hub carries (a person's name) can
	// never be taken for a flag of its own.
	args := append(append([]string{}, a.Args...), "approve", "--yes", "--as="+actor, "--digest="+digest)
	if scope == queue.ScopeRun {
		args = append(args, "--run")
	}
	if a.Audit != "" {
		args = append(args, "--audit="+a.Audit)
	}
	return a.run(ctx, out, append(args, "--", id)...)
}

// Deny implements Applier.
func (a *ExecApplier) Deny(ctx context.Context, id, actor, reason string) error {
	if reason == "" {
		reason = "denied by " + actor
	}
	args := append(append([]string{}, a.Args...), "deny", "--as="+actor, "--reason="+reason)
	if a.Audit != "" {
		args = append(args, "--audit="+a.Audit)
	}
	return a.run(ctx, io.Discard, append(args, "--", id)...)
}

// run runs sluice; a nonzero exit is the command's own status for an
// approve (the run's result says what happened), so only a failure to
// start, or a refusal on stderr, is an error.
func (a *ExecApplier) run(ctx context.Context, out io.Writer, args ...string) error {
	cmd := osexec.CommandContext(ctx, a.Sluice, args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.Stdin = out, &stderr, nil
	err := cmd.Run()
	var ee *osexec.ExitError
	if errors.As(err, &ee) {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return fmt.Errorf("%s", lastLine(msg))
		}
		return nil
	}
	return err
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// SluiceBeside is the sluice binary next to this program, or the one on
// PATH.
func SluiceBeside() (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "sluice")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	p, err := osexec.LookPath("sluice")
	if err != nil {
		return "", errors.New("sluice is neither next to sluice-hub nor on PATH; install both from one build ('make build' puts them in bin/)")
	}
	return p, nil
}
