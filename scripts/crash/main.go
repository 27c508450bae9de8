// Command crash is sluice's crash-recovery suite (make crash): 'sluice
// serve' SIGKILLed at many random moments under load, then every request
// checked to have one result and to have run at most once. It is
// e2e.Crash's flags; see internal/e2e/crash.go for what it does and
// checks.
//
//	go run ./scripts/crash              # 200 kills, 1-2 minutes on 2 cores
//	go run ./scripts/crash -quick       # 20 kills, a smoke test
//	go run ./scripts/crash -kills 500 -writers 16 -seed 42
package main

import "github.com/sluice-dev/sluice/internal/e2e"

func main() { e2e.Main("crash", "a smoke test: 20 kills, 6 writers", e2e.CrashDefaults(), e2e.Crash) }
