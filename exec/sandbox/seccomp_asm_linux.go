//go:build linux && !amd64

package sandbox

import (
	"golang.org/x/sys/unix"

	"github.com/sluice-dev/sluice/exec/sandbox/internal/seccompasm"
)

// programs assembles the seccomp programs at run time where none were
// generated ahead of time: [0] without network, [1] with.
func programs() ([2][]unix.SockFilter, error) {
	var out [2][]unix.SockFilter
	for i, net := range []bool{false, true} {
		p, err := seccompasm.Assemble(net)
		if err != nil {
			return out, err
		}
		out[i] = p
	}
	return out, nil
}
