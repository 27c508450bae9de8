//go:build linux

// Command mem measures what 'sluice serve' costs in memory and time:
//
//  1. its peak RSS (VmHWM) while one allowed command writes a lot of
//     output (100 MB and 1 GB by default), under a pty and with
//     "tty": false, against its peak after one `true` (target: flat);
//  2. its peak RSS with 10,000 pending requests the policy asks about
//     (target: under 32 MiB);
//  3. how long it takes to judge them (until the audit log holds a
//     queued line for each) against a baseline measured in the same run:
//     list the files, read each and decode each into queue.Request,
//     in-process with a warm cache (target: at most 2x).
//
// Each measurement gets a fresh directory (HOME, XDG dirs, spool, audit
// log, empty config.toml) on a tmpfs (/dev/shm) and/or on disk (/tmp),
// and a fresh 'sluice serve'.
//
//	go run ./bench/mem [-fs tmpfs|disk|both] [-sluice bin/sluice]
//
// It exits 1 when a figure misses its target, 2 when it could not
// measure.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// options are the command line.
type options struct {
	fs       []string // tmpfs, disk
	sluice   string   // absolute path of the binary under test
	sizes    []int64  // output sizes, bytes
	n        int      // pending requests
	runs     int      // pending-test repetitions
	tests    map[string]bool
	keep     bool
	serveEnv []string // extra KEY=VALUE for serve (an instrumented copy's knobs)
	idle     int      // seconds of idle CPU measured after judging
}

func main() {
	o, err := parseFlags()
	if err != nil {
		fmt.Fprintf(os.Stderr, "mem: %v\n", err)
		os.Exit(2)
	}
	rep := &report{}
	if err := run(o, rep); err != nil {
		fmt.Fprintf(os.Stderr, "mem: %v\n", err)
		os.Exit(2)
	}
	rep.print(os.Stdout)
	if rep.missed > 0 {
		os.Exit(1)
	}
}

func parseFlags() (*options, error) {
	fsFlag := flag.String("fs", "both", "where the test directories live: tmpfs (/dev/shm), disk (/tmp) or both")
	bin := flag.String("sluice", "bin/sluice", "the sluice binary under test (make build)")
	sizes := flag.String("sizes", "100000000,1000000000", "output sizes in bytes, comma-separated")
	n := flag.Int("n", 10000, "pending requests")
	runs := flag.Int("runs", 3, "repetitions of the pending test (the median is reported)")
	tests := flag.String("tests", "output,pending", "which measurements: output, pending")
	keep := flag.Bool("keep", false, "keep the test directories")
	idle := flag.Int("idle", 4, "seconds of serve's idle CPU measured after it judged the pending requests (0: skip)")
	var serveEnv multiFlag
	flag.Var(&serveEnv, "serve-env", "`KEY=VALUE` added to serve's environment (repeatable)")
	flag.Parse()
	if flag.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	o := &options{n: *n, runs: *runs, keep: *keep, serveEnv: serveEnv, idle: *idle, tests: map[string]bool{}}
	switch *fsFlag {
	case "tmpfs", "disk":
		o.fs = []string{*fsFlag}
	case "both":
		o.fs = []string{"tmpfs", "disk"}
	default:
		return nil, fmt.Errorf("-fs %q: want tmpfs, disk or both", *fsFlag)
	}
	abs, err := filepath.Abs(*bin)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(abs); err != nil || fi.IsDir() {
		return nil, fmt.Errorf("-sluice %s: not a binary (run make build): %v", abs, err)
	}
	o.sluice = abs
	for s := range strings.SplitSeq(*sizes, ",") {
		v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("-sizes: %q is not a positive byte count", s)
		}
		o.sizes = append(o.sizes, v)
	}
	for t := range strings.SplitSeq(*tests, ",") {
		switch t = strings.TrimSpace(t); t {
		case "output", "pending":
			o.tests[t] = true
		default:
			return nil, fmt.Errorf("-tests: unknown %q", t)
		}
	}
	if o.n <= 0 || o.runs <= 0 {
		return nil, errors.New("-n and -runs must be positive")
	}
	for _, kv := range o.serveEnv {
		if !strings.Contains(kv, "=") {
			return nil, fmt.Errorf("-serve-env %q: want KEY=VALUE", kv)
		}
	}
	return o, nil
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func run(o *options, rep *report) error {
	fmt.Printf("sluice %s, %d pending, output sizes %v, on %s\n", o.sluice, o.n, o.sizes, strings.Join(o.fs, ", "))
	for _, fsName := range o.fs {
		parent, err := fsParent(fsName)
		if err != nil {
			return err
		}
		if o.tests["output"] {
			if err := measureOutput(o, fsName, parent, rep); err != nil {
				return fmt.Errorf("%s output: %w", fsName, err)
			}
		}
		if o.tests["pending"] {
			if err := measurePending(o, fsName, parent, rep); err != nil {
				return fmt.Errorf("%s pending: %w", fsName, err)
			}
		}
	}
	return nil
}
