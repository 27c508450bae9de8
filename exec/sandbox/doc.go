// Package sandbox confines one child process to what a verdict allows.
//
// A Spec names a profile (read_only, mutating, networked) and the paths it
// concerns: the jail roots a mutating run may write, the caches every run
// may write, the secret paths no run may read, the run's private temporary
// directory and terminal. On Linux, Start applies it with Landlock (file
// system, TCP) and a seccomp filter (what Landlock does not govern: socket
// families and MPTCP, io_uring, keyrings, set-id modes, typing into the
// terminal, other processes' limits and priorities; internal/seccompasm
// lists the rules) to a fresh OS thread locked for the purpose, starts the
// child from that thread and lets the thread die with its goroutine: the calling process is never
// confined. As root, that thread also drops every capability, so the child
// cannot step around the rules with root's powers. On macOS, Start runs the
// child under sandbox-exec with a Seatbelt profile of the same meaning.
//
// Landlock only grants; it never excludes a sub-path. "Read everything but
// ~/.ssh" is therefore planned (Plan) as a set of grants that covers every
// sibling on the way down to each hidden path and nothing inside it. That
// base layer is built once and kept: a new entry in a carved directory
// adds one rule to it. A new process for each command (sluice sandbox)
// keeps its plan in a file instead (Spec.PlanCache), which the next one
// uses only once every grant in it checks out against the file system as
// it is then.
//
// A networked run with Spec.Proxy reaches nothing but a proxy the caller
// serves on Confinement.ProxyListener, at Confinement.ProxyURL (ProxyEnv
// names it to the run's tools): boxed, from a network namespace of its
// own whose loopback is the run's; else through one TCP port that
// Landlock allows and a seccomp filter that allows plain TCP alone.
// Confinement.Network says which, for the sandbox line.
//
// Cgroup puts a run's processes into a cgroup of their own (cgroup v2, and
// the v1 pids controller where that is the one mounted), so that a kill
// takes every process the run started, including those that left its
// session, and a fork bomb meets pids.max.
//
// The package refuses to do anything it cannot do fully: a Spec that the
// kernel cannot enforce is an error from Prepare, never a silently weaker
// confinement. Whether to run unconfined then is the caller's decision.
package sandbox
