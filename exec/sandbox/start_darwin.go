//go:build darwin

package sandbox

import (
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
)

// sandboxExec applies a profile to itself and then execs the command, so
// the confined process keeps the pid Start reports: signals and Wait reach
// the command itself.
const sandboxExec = "/usr/bin/sandbox-exec"

// Available reports whether this machine can confine runs, and how, or why
// not.
func Available() (string, error) {
	if _, err := os.Stat(sandboxExec); err != nil {
		return "", fmt.Errorf("sandbox: no Seatbelt here: %w", err)
	}
	return "Seatbelt (sandbox-exec)", nil
}

// Confinement is a prepared Spec: the Seatbelt profile that sandbox-exec
// applies to one child.
type Confinement struct {
	spec    Spec
	profile string
	closed  bool
}

// Prepare builds the confinement for spec. It fails if sandbox-exec is
// missing or a path cannot be written into a profile. Close releases it.
func Prepare(spec Spec) (*Confinement, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if _, err := Available(); err != nil {
		return nil, err
	}
	resolved := withRealPaths(spec)
	profile, err := SeatbeltProfile(&resolved)
	if err != nil {
		return nil, err
	}
	return &Confinement{spec: spec, profile: profile}, nil
}

// Spec is what c confines to.
func (c *Confinement) Spec() Spec { return c.spec }

// Close releases c. A child started already stays confined.
func (c *Confinement) Close() error {
	if c != nil {
		c.closed = true
	}
	return nil
}

// Start starts cmd, confined by c when c is not nil: cmd is rewritten to
// run under sandbox-exec with c's profile. g is accepted for the same
// signature as on Linux; macOS has no cgroups, so it is always nil here.
func Start(cmd *osexec.Cmd, c *Confinement, g *Cgroup) error {
	if g != nil {
		g.prepare(cmd)
	}
	if c == nil {
		return cmd.Start()
	}
	if c.closed {
		return errors.New("sandbox: confinement used after Close")
	}
	if cmd.Path == "" {
		return cmd.Start() // exec's own "no command" error
	}
	path := cmd.Path
	// sandbox-exec looks a bare name up in PATH and takes a leading "-"
	// for an option, where exec.Cmd runs a relative Path from cmd.Dir as
	// it is (sandbox-exec starts in cmd.Dir too).
	if !filepath.IsAbs(path) {
		path = "./" + path
	}
	var rest []string
	if len(cmd.Args) > 1 {
		rest = cmd.Args[1:]
	}
	// The command's argv[0] becomes its path: sandbox-exec has no way to
	// pass another.
	args := append([]string{sandboxExec, "-p", c.profile, path}, rest...)
	cmd.Path, cmd.Args = sandboxExec, args
	return cmd.Start()
}

// DropIdle does nothing: Seatbelt keeps nothing between runs.
func DropIdle() {}

// Prewarm does nothing here: there is no thread to ready ahead of a run.
func Prewarm(Profile) {}
