//go:build linux

// Command crashhub is the fleet's crash suite (make crash-hub): the hub
// and two boxes SIGKILLed at random moments while agents ask and two
// consoles decide, then nothing lost, nothing run twice, every decision
// as the hub holds it, both chains verify. It is e2e.CrashHub's flags;
// see internal/e2e/crashhub_linux.go.
//
//	go run ./scripts/crashhub [-kills 30] [-quick] [-seed N] [-keep]
package main

import (
	"flag"

	"github.com/sluice-dev/sluice/internal/e2e"
)

func main() {
	o := e2e.CrashHubDefaults()
	flag.IntVar(&o.Kills, "kills", o.Kills, "kills of the hub or a box")
	flag.IntVar(&o.Writers, "writers", o.Writers, "agents asking on each box at once")
	flag.Uint64Var(&o.Seed, "seed", 0, "random seed (0: from the clock)")
	flag.BoolVar(&o.Keep, "keep", false, "keep the directory")
	e2e.Main("crashhub", "8 kills (a smoke run)", &o, e2e.CrashHub)
}
