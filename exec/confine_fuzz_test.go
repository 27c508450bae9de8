//go:build unix

package exec

import (
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/exec/sandbox"
)

// FuzzExplain: whatever a confined command printed, the refusal line is
// one line that starts with "sluice: the sandbox", or nothing; it never
// panics.
func FuzzExplain(f *testing.F) {
	for _, s := range []string{
		"/bin/sh: 1: cannot create out.txt: Permission denied\n",
		"PermissionError: [Errno 13] Permission denied: '/etc/x'",
		"dial tcp 127.0.0.1:9: socket: permission denied",
		"cat: /root/.ssh/id_rsa: Permission denied",
		"'': Permission denied", "\x00: Operation not permitted", "Permission denied: '\n'",
		"curl: (6) Could not resolve host: example.com",
	} {
		f.Add(s, 1)
	}
	spec := &sandbox.Spec{Profile: sandbox.ReadOnly, Roots: []string{"/proj"}, TmpDir: "/tmp/run"}
	f.Fuzz(func(t *testing.T, out string, code int) {
		got := explain("read_only", []string{"/root/.ssh"}, "/proj", code, []byte(out), spec)
		if got == "" {
			return
		}
		if !strings.HasPrefix(got, "sluice: the sandbox") || !strings.HasSuffix(got, "\n") || strings.Count(got, "\n") != 1 {
			t.Fatalf("explain = %q", got)
		}
	})
}
