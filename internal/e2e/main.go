//go:build unix

package e2e

import (
	"flag"
	"fmt"
	"os"
)

// Options are a harness's knobs as its flag main sees them: a quick form
// for -quick, and its flags.
type Options[O any] interface {
	*O
	Quick() O
	Flags(fs *flag.FlagSet)
}

// Main is a harness's flag main (scripts/crash, scripts/load,
// scripts/crashhub, scripts/e2eagents): it declares o's flags and -quick
// (quickUsage its help), parses the command line, refuses arguments,
// makes o quick when asked, refuses o when it can say what is wrong with
// it (a Valid() error method), runs the harness, removes the programs it
// built and exits: 2 for bad flags, 1 when a check failed.
func Main[O any, P Options[O]](name, quickUsage string, o O, run func(O) (Failures, string)) {
	P(&o).Flags(flag.CommandLine)
	quick := flag.Bool("quick", false, quickUsage)
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, name+": takes no arguments")
		os.Exit(2)
	}
	if *quick {
		o = P(&o).Quick()
	}
	if v, ok := any(o).(interface{ Valid() error }); ok {
		if err := v.Valid(); err != nil {
			fmt.Fprintln(os.Stderr, name+": bad flags:", err)
			os.Exit(2)
		}
	}
	failed, _ := run(o)
	Cleanup()
	if len(failed) > 0 {
		os.Exit(1)
	}
}
