//go:build !linux && !darwin

package sandbox

import (
	"fmt"
	osexec "os/exec"
	"runtime"
)

// errUnsupported is why nothing can be confined here: the package knows
// only Landlock and Seatbelt.
var errUnsupported = fmt.Errorf("sandbox: confinement is not supported on %s", runtime.GOOS)

// Available reports whether this machine can confine runs, and how, or why
// not. Here it never can.
func Available() (string, error) { return "", errUnsupported }

// Confinement is a prepared Spec. None can be prepared here; the type
// exists so that callers build on every platform.
type Confinement struct {
	spec Spec
}

// Prepare fails: this platform cannot confine a run, and the package
// never runs one less confined than asked.
func Prepare(spec Spec) (*Confinement, error) { return nil, errUnsupported }

// Spec is what c confines to.
func (c *Confinement) Spec() Spec { return c.spec }

// Close releases c; there is nothing to release.
func (c *Confinement) Close() error { return nil }

// DropIdle does nothing: nothing is kept here.
func DropIdle() {}

// Prewarm does nothing here: there is no thread to ready ahead of a run.
func Prewarm(Profile) {}

// Start starts cmd unconfined. c must be nil, as Prepare never returns
// one: a Confinement that reached here by other means is refused rather
// than silently ignored.
func Start(cmd *osexec.Cmd, c *Confinement, g *Cgroup) error {
	if c != nil {
		return fmt.Errorf("sandbox: cannot start a confined run on %s", runtime.GOOS)
	}
	if g != nil {
		g.prepare(cmd)
	}
	return cmd.Start()
}
