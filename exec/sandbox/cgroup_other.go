//go:build !linux

package sandbox

import (
	"fmt"
	osexec "os/exec"
	"runtime"
	"time"
)

// Cgroup stands for a run's cgroup where there are none: NewCgroup never
// returns one, and its methods do nothing, on a nil *Cgroup too, so that
// callers need no build tags of their own.
type Cgroup struct {
	// Limited reports whether pids.max bounds the run's processes; never
	// here.
	Limited bool
}

// NewCgroup fails: there are no cgroups outside Linux. The caller kills
// by process group and tree instead.
func NewCgroup(name string, maxProcs int) (*Cgroup, error) {
	return nil, fmt.Errorf("sandbox: no cgroups on %s", runtime.GOOS)
}

func (g *Cgroup) prepare(cmd *osexec.Cmd) {}

// Kill reports that no process is left: a Cgroup here holds none.
func (g *Cgroup) Kill(wait time.Duration) bool { return true }

// Empty reports that no process is left: a Cgroup here holds none.
func (g *Cgroup) Empty() bool { return true }

// Close does nothing: there is nothing to remove.
func (g *Cgroup) Close() error { return nil }

// Cgroups hands out no cgroups here: Get fails, and the caller kills by
// process group and tree.
type Cgroups struct {
	MaxProcs int
}

// Get fails: there are no cgroups outside Linux.
func (p *Cgroups) Get() (*Cgroup, error) { return NewCgroup("", p.MaxProcs) }

// Put does nothing.
func (p *Cgroups) Put(g *Cgroup) {}

// Close does nothing.
func (p *Cgroups) Close() error { return nil }

// SweepStale does nothing: there are no cgroups here.
func SweepStale() {}

// KillOrphans does nothing: there are no cgroups here.
func KillOrphans() {}
