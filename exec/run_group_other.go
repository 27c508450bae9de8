//go:build unix && !linux

package exec

// groupAlive reports whether process group pgid still exists. Without
// /proc, unreaped zombies count as alive, so a kill sequence may wait out
// its bounds.
func groupAlive(pgid int) bool { return killZeroAlive(pgid) }
