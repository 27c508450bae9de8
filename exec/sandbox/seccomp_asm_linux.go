//go:build linux && !amd64

package sandbox

import (
	"golang.org/x/sys/unix"

	"github.com/sluice-dev/sluice/exec/sandbox/internal/seccompasm"
)

// programs assembles the seccomp programs at run time where none were
// generated ahead of time: [0] without network, [1] with, [2] read-only,
// [3] plain TCP only (a proxied run without namespaces).
func programs() ([4][]unix.SockFilter, error) {
	var out [4][]unix.SockFilter
	for i := range out {
		p, err := seccompasm.Assemble(i)
		if err != nil {
			return out, err
		}
		out[i] = p
	}
	return out, nil
}
