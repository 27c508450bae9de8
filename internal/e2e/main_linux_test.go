package e2e

import (
	"flag"
	"os"
	"testing"
)

// full runs the slow cases too ('make faults').
var full = flag.Bool("faults.full", false, "run every fault case, the slow ones too (make faults)")

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// slow skips a case in the quick run ('go test', make test).
func slow(t *testing.T) {
	t.Helper()
	if !*full {
		t.Skip("a slow case: run with -faults.full (make faults)")
	}
}
