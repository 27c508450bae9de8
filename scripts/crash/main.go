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

import (
	"flag"

	"github.com/sluice-dev/sluice/internal/e2e"
)

func main() {
	o := e2e.CrashDefaults()
	flag.IntVar(&o.Kills, "kills", o.Kills, "kill the engine `N` times")
	flag.IntVar(&o.Writers, "writers", o.Writers, "`N` writers submitting requests at once")
	flag.DurationVar(&o.MinGap, "min-gap", o.MinGap, "shortest time an engine works before it is killed")
	flag.DurationVar(&o.MaxGap, "max-gap", o.MaxGap, "longest time an engine works before it is killed")
	flag.Float64Var(&o.Long, "long", o.Long, "fraction of kills made after a long stretch, -max-gap to -long-gap, so that long runs can finish")
	flag.DurationVar(&o.LongGap, "long-gap", o.LongGap, "longest time an engine works before a long-stretch kill")
	flag.Float64Var(&o.Early, "early", o.Early, "fraction of kills made at a random moment of the engine's start-up (-early-window), served or not")
	flag.DurationVar(&o.EarlyWindow, "early-window", o.EarlyWindow, "the start-up window of the early kills")
	flag.Uint64Var(&o.Seed, "seed", 0, "random seed (default: from the clock; printed)")
	flag.StringVar(&o.Dir, "dir", "", "parent of the temporary directory (default /dev/shm if present, else $TMPDIR)")
	flag.StringVar(&o.Bin, "bin", "", "use this sluice binary instead of building one")
	flag.BoolVar(&o.Keep, "keep", false, "keep the temporary directory (it is always kept when a check fails)")
	flag.DurationVar(&o.ServeWait, "serve-wait", o.ServeWait, "how long an engine may take to serve its first request after a kill")
	flag.DurationVar(&o.DrainWait, "drain-wait", o.DrainWait, "how long the writers may take to finish after the last kill")
	flag.IntVar(&o.MaxAuto, "max-auto", 0, "pass --max-auto `N` to sluice serve (default: its own)")
	flag.DurationVar(&o.ApprovePoll, "approve-poll", o.ApprovePoll, "how often the approver runs 'sluice ls --json'")
	flag.BoolVar(&o.Verbose, "v", false, "log every kill")
	e2e.Main("crash", "a smoke test: 20 kills, 6 writers", &o, e2e.Crash)
}
