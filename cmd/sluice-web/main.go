// Command sluice-web is sluice's web approver: the box's queue in a phone
// or laptop browser ('sluice web' runs it). It is a program of its own
// because net/http and its TLS stack would add ~1.5 ms to the start of
// every sluice process, and 'sluice run' and the hooks start once per
// command an agent runs.
package main

import (
	"os"

	"github.com/sluice-dev/sluice/policy"
	"github.com/sluice-dev/sluice/web"
)

func main() {
	// Which directories a file change may touch is policy's decision.
	os.Exit(web.Main(os.Args[1:], os.Stdout, os.Stderr, policy.Roots))
}
