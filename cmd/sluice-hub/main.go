// Command sluice-hub is sluice's fleet hub and the bridges to it (NATS
// JetStream): 'sluice hub' runs it. It is a program of its own because the
// NATS packages add over a millisecond to the start of every process that
// links them, and 'sluice run' and the hooks start once per command an
// agent runs.
package main

import (
	"os"

	"github.com/sluice-dev/sluice/hub"
	"github.com/sluice-dev/sluice/policy"
)

func main() {
	// Which directories a file change may touch is policy's decision.
	os.Exit(hub.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, policy.Roots))
}
