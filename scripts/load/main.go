// Command load is sluice's load test (make load): many agent processes at
// once against one 'sluice serve', a scripted person approving what the
// policy asks about, then every request checked to have one result and
// to have run at most once. It is e2e.Load's flags; see
// internal/e2e/load.go for what it does, measures and checks.
//
//	go run ./scripts/load              # 50 agents x 100 requests
//	go run ./scripts/load -quick       # 8 agents x 20 requests, a smoke test
//	go run ./scripts/load -agents 200 -requests 20 -max-auto 16
package main

import (
	"flag"

	"github.com/sluice-dev/sluice/internal/e2e"
)

func main() {
	o := e2e.LoadDefaults()
	flag.IntVar(&o.Agents, "agents", o.Agents, "concurrent agent processes")
	flag.IntVar(&o.Requests, "requests", o.Requests, "sequential requests per agent")
	flag.IntVar(&o.AllowPct, "allow", o.AllowPct, "percent of each agent's requests the policy allows")
	flag.IntVar(&o.DenyPct, "deny", o.DenyPct, "percent the policy denies (the rest ask and are approved)")
	flag.IntVar(&o.Approvers, "approvers", o.Approvers, "'sluice approve' processes at once")
	flag.IntVar(&o.DupEvery, "dup-every", o.DupEvery, "approve every Nth ask request twice at once (0: never)")
	flag.DurationVar(&o.Poll, "poll", o.Poll, "pause between 'sluice ls --json' polls that find nothing new")
	flag.DurationVar(&o.Timeout, "timeout", o.Timeout, "fail if the load has not finished by then")
	flag.IntVar(&o.MaxAuto, "max-auto", 0, "sluice serve --max-auto (0: its default)")
	flag.StringVar(&o.Bin, "bin", "", "use this sluice binary instead of building one")
	flag.StringVar(&o.Dir, "dir", "", "parent of the temporary directory (default: the system's)")
	flag.BoolVar(&o.Keep, "keep", false, "keep the temporary directory (it is always kept when a check fails)")
	flag.BoolVar(&o.DiskSpool, "disk-spool", false, "put the spool beside the rest, not on /dev/shm")
	flag.Uint64Var(&o.Seed, "seed", o.Seed, "seed for the order of each agent's mix")
	e2e.Main("load", "a smoke test: 8 agents x 20 requests", &o, e2e.Load)
}
