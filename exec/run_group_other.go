//go:build unix && !linux

package exec

import "github.com/sluice-dev/sluice/exec/sandbox"

// groupAlive reports whether process group pgid still exists. Without
// /proc, unreaped zombies count as alive, so a kill sequence may wait out
// its bounds.
func groupAlive(pgid int) bool { return killZeroAlive(pgid) }

// cgroup returns nil: there are no cgroups here.
func (r *Runner) cgroup() *sandbox.Cgroup { return nil }

// uncgroup does nothing: there are no cgroups here.
func (r *Runner) uncgroup(*sandbox.Cgroup) {}

// Close removes the runs' temporary directories. Call it when no run is
// left.
func (r *Runner) Close() error {
	r.tmps.close()
	return nil
}

// limit does nothing here: a process's limits are set from inside it.
func (r *Runner) limit(int, *Confine) {}

// sweep does nothing here: without /proc the process tree is not read.
func sweep(int) {}
