//go:build unix

package exec

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluice-dev/sluice/exec/sandbox"
)

const (
	// groupPoll is how often the kill sequence looks for group members.
	groupPoll = 10 * time.Millisecond
	// reapMax bounds the wait for SIGKILLed members to be gone.
	reapMax = time.Second
)

// stop ends process group pgid, whose leader closes exited when reaped:
// SIGTERM (and SIGCONT, so stopped members see it) to the group; once the
// leader and the rest of the group are gone, or Grace has passed, SIGKILL
// to whatever is left; then SIGKILL once more after the leader is reaped,
// for stragglers, and a bounded wait until none is alive.
//
// The group's id cannot be reused while any member lives, so signalling
// -pgid after the leader is reaped reaches only our stragglers or nobody.
//
// With a cgroup, SIGKILL goes to every process in it as well, so members
// that left the group (setsid, a double fork) die too; without one, the
// leader's process tree is swept while its parent links still hold.
func (r *Runner) stop(pgid int, exited <-chan struct{}, cg *sandbox.Cgroup, grace time.Duration) {
	if grace <= 0 {
		grace = DefaultGrace
	}
	signalGroup(pgid, unix.SIGTERM)
	signalGroup(pgid, unix.SIGCONT)
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	select {
	case <-exited:
		waitGroup(pgid, deadline.C)
	case <-deadline.C:
	}
	if cg == nil {
		sweep(pgid)
	}
	signalGroup(pgid, unix.SIGKILL)
	cg.Kill(reapMax)
	<-exited
	signalGroup(pgid, unix.SIGKILL)
	t := time.NewTimer(reapMax)
	defer t.Stop()
	waitGroup(pgid, t.C)
}

// waitGroup polls until no live process is in group pgid or until is
// closed (or fires).
func waitGroup(pgid int, until <-chan time.Time) {
	tick := time.NewTicker(groupPoll)
	defer tick.Stop()
	for groupAlive(pgid) {
		select {
		case <-until:
			return
		case <-tick.C:
		}
	}
}
