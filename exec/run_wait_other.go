//go:build unix && !linux

package exec

import "syscall"

// pidFD is nil where there are no pidfds: Wait alone waits.
func pidFD(*syscall.SysProcAttr) *int { return nil }

// awaitExit returns at once: Wait waits.
func awaitExit(*int) {}
