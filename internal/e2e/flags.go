//go:build unix

package e2e

import "flag"

// The harnesses' flags, declared on their options for Main.

// Flags declares o's knobs as flags of fs, o's values their defaults
// (scripts/crash).
func (o *CrashOptions) Flags(fs *flag.FlagSet) {
	fs.IntVar(&o.Kills, "kills", o.Kills, "kill the engine `N` times")
	fs.IntVar(&o.Writers, "writers", o.Writers, "`N` writers submitting requests at once")
	fs.DurationVar(&o.MinGap, "min-gap", o.MinGap, "shortest time an engine works before it is killed")
	fs.DurationVar(&o.MaxGap, "max-gap", o.MaxGap, "longest time an engine works before it is killed")
	fs.Float64Var(&o.Long, "long", o.Long, "fraction of kills made after a long stretch, -max-gap to -long-gap, so that long runs can finish")
	fs.DurationVar(&o.LongGap, "long-gap", o.LongGap, "longest time an engine works before a long-stretch kill")
	fs.Float64Var(&o.Early, "early", o.Early, "fraction of kills made at a random moment of the engine's start-up (-early-window), served or not")
	fs.DurationVar(&o.EarlyWindow, "early-window", o.EarlyWindow, "the start-up window of the early kills")
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "random seed (default: from the clock; printed)")
	fs.StringVar(&o.Dir, "dir", o.Dir, "parent of the temporary directory (default /dev/shm if present, else $TMPDIR)")
	fs.StringVar(&o.Bin, "bin", o.Bin, "use this sluice binary instead of building one")
	fs.BoolVar(&o.Keep, "keep", o.Keep, "keep the temporary directory (it is always kept when a check fails)")
	fs.DurationVar(&o.ServeWait, "serve-wait", o.ServeWait, "how long an engine may take to serve its first request after a kill")
	fs.DurationVar(&o.DrainWait, "drain-wait", o.DrainWait, "how long the writers may take to finish after the last kill")
	fs.IntVar(&o.MaxAuto, "max-auto", o.MaxAuto, "pass --max-auto `N` to sluice serve (default: its own)")
	fs.DurationVar(&o.ApprovePoll, "approve-poll", o.ApprovePoll, "how often the approver runs 'sluice ls --json'")
	fs.BoolVar(&o.Verbose, "v", o.Verbose, "log every kill")
}

// Flags declares o's knobs as flags of fs, o's values their defaults
// (scripts/load).
func (o *LoadOptions) Flags(fs *flag.FlagSet) {
	fs.IntVar(&o.Agents, "agents", o.Agents, "concurrent agent processes")
	fs.IntVar(&o.Requests, "requests", o.Requests, "sequential requests per agent")
	fs.IntVar(&o.AllowPct, "allow", o.AllowPct, "percent of each agent's requests the policy allows")
	fs.IntVar(&o.DenyPct, "deny", o.DenyPct, "percent the policy denies (the rest ask and are approved)")
	fs.IntVar(&o.Approvers, "approvers", o.Approvers, "'sluice approve' processes at once")
	fs.IntVar(&o.DupEvery, "dup-every", o.DupEvery, "approve every Nth ask request twice at once (0: never)")
	fs.DurationVar(&o.Poll, "poll", o.Poll, "pause between 'sluice ls --json' polls that find nothing new")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "fail if the load has not finished by then")
	fs.IntVar(&o.MaxAuto, "max-auto", o.MaxAuto, "sluice serve --max-auto (0: its default)")
	fs.StringVar(&o.Bin, "bin", o.Bin, "use this sluice binary instead of building one")
	fs.StringVar(&o.Dir, "dir", o.Dir, "parent of the temporary directory (default: the system's)")
	fs.BoolVar(&o.Keep, "keep", o.Keep, "keep the temporary directory (it is always kept when a check fails)")
	fs.BoolVar(&o.DiskSpool, "disk-spool", o.DiskSpool, "put the spool beside the rest, not on /dev/shm")
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "seed for the order of each agent's mix")
}

// Flags declares o's knobs as flags of fs, o's values their defaults
// (scripts/e2eagents).
func (o *AgentsOptions) Flags(fs *flag.FlagSet) {
	fs.StringVar(&o.Agents, "agents", o.Agents, "the agents to drive, comma-separated")
	fs.StringVar(&o.Cache, "cache", o.Cache, "where the CLIs are installed (npm --prefix)")
	fs.StringVar(&o.Run, "run", o.Run, "run only the scenarios whose agent/name matches this regular expression")
	fs.BoolVar(&o.Keep, "keep", o.Keep, "keep each scenario's directory (HOME, project, spool) for a look after")
}
