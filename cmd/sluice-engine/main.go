// Command sluice-engine runs what sluice hands over to it: 'sluice serve',
// 'sluice approve' and a networked 'sluice sandbox', the commands that run
// what agents ask and host a networked run's proxy.
//
// It is a program of its own so that the commands an agent starts once
// per tool call (sluice run, hook, sandbox, check) link no net/http, whose
// package inits and size cost each such process about 0.3 ms to start.
package main

import (
	"os"

	_ "github.com/sluice-dev/sluice/exec/proxyhost"
	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/internal/engcmd"
)

func main() {
	os.Exit(engcmd.Main(os.Args[1:], cli.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}
