package sandbox

import "golang.org/x/sys/unix"

// legacy are the system calls the effect tests make where the
// architecture has them (arm64 has none of them).
var legacy = map[string]uintptr{
	"chmod": unix.SYS_CHMOD,
	"creat": unix.SYS_CREAT,
	"open":  unix.SYS_OPEN,
	"mkdir": unix.SYS_MKDIR,
	"mknod": unix.SYS_MKNOD,
}
