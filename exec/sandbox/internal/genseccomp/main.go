//go:build linux

// Command genseccomp writes exec/sandbox's seccomp programs for linux/amd64
// as Go source (seccomp_gen_linux_amd64.go): run by go generate in
// package sandbox, on linux/amd64. Elsewhere the sandbox assembles them at
// run time.
package main

import (
	"fmt"
	"os"
	"runtime"

	"github.com/sluice-dev/sluice/exec/sandbox/internal/seccompasm"
)

func main() {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		fmt.Fprintf(os.Stderr, "genseccomp: programs are generated on linux/amd64 only (this is %s/%s); other architectures assemble them at run time\n", runtime.GOOS, runtime.GOARCH)
		os.Exit(1)
	}
	src, err := seccompasm.Render(runtime.GOARCH)
	if err != nil {
		fmt.Fprintln(os.Stderr, "genseccomp:", err)
		os.Exit(1)
	}
	if err := os.WriteFile("seccomp_gen_linux_amd64.go", []byte(src), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "genseccomp:", err)
		os.Exit(1)
	}
}
