package app

import "golang.org/x/sys/unix"

// ProtectProcess makes this process undumpable: a process of the same user
// can then neither read its /proc/PID/environ or memory nor ptrace it (the
// commands it runs are confined by Landlock too, which also refuses that,
// even to root). It also turns core dumps off for good, here and in every
// process it starts (they inherit the limit from their first instruction,
// and cannot raise a hard limit of 0): a core file is memory written out.
func ProtectProcess() {
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
}
