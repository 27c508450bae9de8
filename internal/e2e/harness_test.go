//go:build linux

package e2e

import (
	"bytes"
	"strings"
	"testing"
)

// TestCrashQuick is make crash's quick form (scripts/crash -quick): 20
// SIGKILLs of sluice serve under load, every checker over what is left.
func TestCrashQuick(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	o := CrashDefaults().Quick()
	o.Out = &out
	if failed, work := Crash(o); len(failed) > 0 {
		t.Errorf("%s\nfiles kept in %s:\n  %s", out.String(), work, strings.Join(failed, "\n  "))
	}
}

// TestCrashHubQuick is make crash-hub's quick form (scripts/crashhub
// -quick): the hub and two boxes SIGKILLed 8 times while agents ask and
// consoles decide, every checker over each box and the hub's decisions.
func TestCrashHubQuick(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	o := CrashHubDefaults().Quick()
	o.Out = &out
	if failed, work := CrashHub(o); len(failed) > 0 {
		t.Errorf("%s\nfiles kept in %s:\n  %s", out.String(), work, strings.Join(failed, "\n  "))
	}
}

// TestLoadQuick is make load's quick form (scripts/load -quick): 8
// agents x 20 requests against one engine, every checker over what is
// left.
func TestLoadQuick(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	o := LoadDefaults().Quick()
	o.Out = &out
	if failed, work := Load(o); len(failed) > 0 {
		t.Errorf("%s\nfiles kept in %s:\n  %s", out.String(), work, strings.Join(failed, "\n  "))
	}
}
