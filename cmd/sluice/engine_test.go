package main

import (
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/sluice-dev/sluice/queue"
)

// cmdWaitRunning implements "waitrunning": wait until a request is claimed
// and running (its actor alive), and set $RUNID to it.
func cmdWaitRunning(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) > 0 {
		ts.Fatalf("usage: waitrunning")
	}
	sp := openSpool(ts)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		list, err := sp.List()
		ts.Check(err)
		for _, e := range list {
			if e.State == queue.StateRunning {
				ts.Setenv("RUNID", e.ID)
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	ts.Fatalf("waitrunning: nothing running after 10s")
}

// cmdCountLines implements "countlines FILE N": FILE has exactly N lines.
func cmdCountLines(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: countlines FILE N")
	}
	data, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	got := strings.Count(string(data), "\n")
	if (got == n) == neg {
		ts.Fatalf("%s has %d lines, want %d", args[0], got, n)
	}
}

// cmdWaitFile implements "waitfile FILE": wait until FILE exists.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitfile FILE")
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(ts.MkAbs(args[0])); err == nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	ts.Fatalf("waitfile: %s did not appear in 10s", args[0])
}
