// Command sluice-box starts one confined run in namespaces of its own: a
// read-only view of the file system but for what the run may write,
// git's hooks and config bound read-only, a project's secrets read as
// empty files, an IPC namespace of its own, and, for a networked run
// held to its proxy, a network namespace of its own whose one way out is
// the listener on 127.0.0.1:3128 it hands back to sluice (exec/sandbox's
// network_linux.go). sluice execs it in place of a command whose verdict
// lets it write (see exec/sandbox's BoxPath); it mounts, confines itself
// with the Landlock rulesets and the seccomp filter sluice prepared,
// drops every capability and execs the command. It is not meant to be
// run by hand.
package main

import (
	"os"

	"github.com/sluice-dev/sluice/exec/sandbox"
)

func main() { sandbox.BoxExit(os.Args[1:]) }
