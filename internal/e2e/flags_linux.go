//go:build linux

package e2e

import "flag"

// Flags declares o's knobs as flags of fs, o's values their defaults
// (scripts/crashhub).
func (o *CrashHubOptions) Flags(fs *flag.FlagSet) {
	fs.IntVar(&o.Kills, "kills", o.Kills, "kills of the hub or a box")
	fs.IntVar(&o.Writers, "writers", o.Writers, "agents asking on each box at once")
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "random seed (0: from the clock)")
	fs.BoolVar(&o.Keep, "keep", o.Keep, "keep the directory")
}
