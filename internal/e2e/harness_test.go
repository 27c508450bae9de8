//go:build linux

package e2e

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// quick runs a harness's quick form with its report in a buffer, which
// the test prints with the failures and the directory kept.
func quick(t *testing.T, run func(out io.Writer) (Failures, string)) {
	t.Helper()
	t.Parallel()
	var out bytes.Buffer
	if failed, work := run(&out); len(failed) > 0 {
		t.Errorf("%s\nfiles kept in %s:\n  %s", out.String(), work, strings.Join(failed, "\n  "))
	}
}

// TestCrashQuick is make crash's quick form (scripts/crash -quick): 20
// SIGKILLs of sluice serve under load, every checker over what is left.
func TestCrashQuick(t *testing.T) {
	quick(t, func(out io.Writer) (Failures, string) {
		o := CrashDefaults().Quick()
		o.Out = out
		return Crash(o)
	})
}

// TestCrashHubQuick is make crash-hub's quick form (scripts/crashhub
// -quick): the hub and two boxes SIGKILLed 8 times while agents ask and
// consoles decide, every checker over each box and the hub's decisions.
func TestCrashHubQuick(t *testing.T) {
	quick(t, func(out io.Writer) (Failures, string) {
		o := CrashHubDefaults().Quick()
		o.Out = out
		return CrashHub(o)
	})
}

// TestLoadQuick is make load's quick form (scripts/load -quick): 8
// agents x 20 requests against one engine, every checker over what is
// left.
func TestLoadQuick(t *testing.T) {
	quick(t, func(out io.Writer) (Failures, string) {
		o := LoadDefaults().Quick()
		o.Out = out
		return Load(o)
	})
}
