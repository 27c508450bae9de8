//go:build unix

package e2e

import (
	"flag"
	"fmt"
	"os"
)

// Options are a harness's knobs as its flag main sees them: a quick form
// for -quick.
type Options[O any] interface {
	Quick() O
}

// Main is the rest of a harness's flag main (scripts/crash, scripts/load,
// scripts/crashhub), once the flags that fill *o are declared: it adds -quick
// (quickUsage its help), parses the flags, refuses arguments, makes o
// quick when asked, refuses o when it can say what is wrong with it
// (a Valid() error method), runs the harness, removes the programs it
// built and exits: 2 for bad flags, 1 when a check failed.
func Main[O Options[O]](name, quickUsage string, opts *O, run func(O) (Failures, string)) {
	quick := flag.Bool("quick", false, quickUsage)
	flag.Parse()
	o := *opts
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, name+": takes no arguments")
		os.Exit(2)
	}
	if *quick {
		o = o.Quick()
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
