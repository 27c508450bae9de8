//go:build !linux

package sandbox

import (
	"fmt"
	"os"
	"runtime"
)

// BoxPath is the helper's path for Spec.Box; namespaces are Linux's, so
// there is none here.
func BoxPath() string { return "" }

// BoxRefused says why runs are not boxed here: namespaces are Linux's.
func BoxRefused(box string) string { return "namespaces are Linux's" }

// BoxMain is sluice-box, which only Linux has.
func BoxMain(args []string) error {
	return fmt.Errorf("sluice-box: namespaces are Linux's; this is %s", runtime.GOOS)
}

// BoxExit is sluice-box's main, which only Linux has.
func BoxExit(args []string) {
	fmt.Fprintln(os.Stderr, BoxMain(args))
	os.Exit(125)
}

// ExecError is BoxMain's failure to exec the command.
type ExecError struct {
	Path string
	Err  error
}

func (e *ExecError) Error() string { return e.Path + ": " + e.Err.Error() }

// Status is the exit status a shell gives this failure.
func (e *ExecError) Status() int { return 126 }

// Fallback does nothing here: no run is boxed.
func (c *Confinement) Fallback(path string, argv []string) {}

// Boxed reports that no run is boxed here.
func (c *Confinement) Boxed() (bool, string) { return false, "" }
