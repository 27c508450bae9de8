package main

import "golang.org/x/sys/unix"

// protectProcess makes this process undumpable: a process of the same user
// can then neither read its /proc/PID/environ or memory nor ptrace it (the
// commands it runs are confined by Landlock too, which also refuses that,
// even to root).
func protectProcess() {
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}
