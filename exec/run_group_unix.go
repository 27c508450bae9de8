//go:build unix

package exec

import "golang.org/x/sys/unix"

// signalGroup sends sig to every process in group pgid; a group that is
// already gone is not an error.
func signalGroup(pgid int, sig unix.Signal) {
	if pgid <= 1 {
		return // never kill(-1) or kill(0): that is everyone, or ourselves
	}
	// ESRCH: the group is gone. EPERM: a member changed uid; there is
	// nothing more this process can do about it.
	_ = unix.Kill(-pgid, sig)
}

// killZeroAlive reports whether kill(-pgid, 0) finds the group. It counts
// unreaped zombies as alive.
func killZeroAlive(pgid int) bool {
	return unix.Kill(-pgid, 0) == nil
}
