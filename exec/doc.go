// Package exec runs approved requests.
//
// A Runner starts an exec request as /bin/sh -c COMMAND in its own session
// on a fresh pseudo-terminal, appends every byte of its output to the
// request's log at the pty's own speed, hands live output to at most one
// subscriber through a bounded buffer that drops old bytes rather than wait,
// and answers with a queue.Result.
//
// The package never runs a request it was not handed by its caller (it does
// not read the spool or judge commands), never lets a child's process group
// outlive its timeout, and never passes the caller's secrets on: the child
// inherits only the names of an allow-list (DefaultEnvAllow and the
// configured ones, minus secret names; BuildEnv). With Runner.Confine set,
// every child is confined to its verdict's profile (exec/sandbox: Landlock
// and seccomp on Linux) in a private TMPDIR, and lives in a cgroup of its
// own where one can be made, so that nothing it started outlives the run,
// not even what left its session; without a cgroup, the kill sweeps the
// process group and tree.
//
// Write, edit and patch requests are carried out through package change
// (plan against the files as they are now, apply all or nothing within the
// jail). Actor is the queue.Runner over both halves.
//
// Output is raw: the pty's output post-processing (OPOST, so ONLCR) is off,
// so the log, the output tail and the SHA-256 are byte-for-byte what the
// child wrote. A terminal emulator fed from Options.Output must treat LF as
// CR LF (for example with line-feed/new-line mode, ESC [ 20 h).
package exec
