//go:build linux

// Command crashhub is the fleet's crash suite (make crash-hub): the hub
// and two boxes SIGKILLed at random moments while agents ask and two
// consoles decide, then nothing lost, nothing run twice, every decision
// as the hub holds it, both chains verify. It is e2e.CrashHub's flags;
// see internal/e2e/crashhub_linux.go.
//
//	go run ./scripts/crashhub [-kills 30] [-quick] [-seed N] [-keep]
package main

import "github.com/sluice-dev/sluice/internal/e2e"

func main() { e2e.Main("crashhub", "8 kills (a smoke run)", e2e.CrashHubDefaults(), e2e.CrashHub) }
