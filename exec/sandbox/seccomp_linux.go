package sandbox

import (
	"fmt"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

//go:generate go run ./internal/genseccomp

// filters are the four seccomp programs: [0] for mutating (no network),
// [1] for networked, [2] for read_only (no network, and no change of any
// file's mode, owner or extended attributes), [3] for networked through a
// proxy without namespaces (plain TCP streams only). On linux/amd64 they were assembled ahead of time
// (seccomp_gen_linux_amd64.go; a test keeps it equal to what the library
// assembles), elsewhere at first use.
var filters = sync.OnceValues(func() ([4]*unix.SockFprog, error) {
	var out [4]*unix.SockFprog
	progs, err := programs()
	if err != nil {
		return out, err
	}
	for i, p := range progs {
		out[i] = &unix.SockFprog{Len: uint16(len(p)), Filter: &p[0]}
	}
	return out, nil
})

// loadFilter installs prog on the calling thread only (no TSYNC).
func loadFilter(prog *unix.SockFprog) error {
	_, _, e := syscall.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(prog)))
	if e != 0 {
		return fmt.Errorf("sandbox: seccomp: %w", e)
	}
	return nil
}
