package queue

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// benchFS is a filesystem a benchmark's spool can live on.
type benchFS struct {
	name string
	open func(b *testing.B) *Spool
}

// benchFilesystems are the disk (the test's temporary directory) and, where
// there is one, a tmpfs: the default spool lives in $XDG_RUNTIME_DIR, which
// is a tmpfs on most Linux systems, and creating a file on a disk costs
// far more than the rest of a round trip.
var benchFilesystems = []benchFS{
	{"disk", func(b *testing.B) *Spool { b.Helper(); return openTestSpool(b) }},
	{"tmpfs", openTmpfsSpool},
}

// openTmpfsSpool opens a new spool on a tmpfs ($XDG_RUNTIME_DIR, else
// /dev/shm), removed when the benchmark ends. It skips the benchmark where
// there is no tmpfs.
func openTmpfsSpool(b *testing.B) *Spool {
	b.Helper()
	for _, parent := range []string{os.Getenv("XDG_RUNTIME_DIR"), "/dev/shm"} {
		if parent == "" || !isTmpfs(parent) {
			continue
		}
		dir, err := os.MkdirTemp(parent, "sluice-bench-")
		if err != nil {
			continue
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		s, err := Open(filepath.Join(dir, "spool"))
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	b.Skip("no tmpfs ($XDG_RUNTIME_DIR or /dev/shm) to put the spool on")
	return nil
}

// fakeActor answers every pending request at once, as a console whose
// policy allows everything would, until events is closed. It returns the
// first error; the benchmark then stops.
func fakeActor(s *Spool, events <-chan WatchEvent) error {
	zero := 0
	for ev := range events {
		act, err := pending(ev)
		if err != nil {
			return fmt.Errorf("actor: %w", err)
		}
		if !act {
			continue
		}
		c, err := s.Claim(ev.ID, time.Now())
		if err != nil {
			return fmt.Errorf("actor: %w", err)
		}
		if err := c.Finish(Result{Status: StatusDone, Decision: Allow, DecidedBy: ByPolicy, ExitCode: &zero}); err != nil {
			return fmt.Errorf("actor: %w", err)
		}
	}
	return nil
}

// percentile returns the p-th percentile (0 < p <= 100) of sorted.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// BenchmarkRoundTrip measures one request's round trip between a
// long-lived client and an actor that answers at once: wake FIFO, submit,
// watch event, claim, result, wake. Compare with the floor of a files-only
// round trip of the floor in BENCHMARKS.md (0.15 ms median).
func BenchmarkRoundTrip(b *testing.B) {
	for _, fs := range benchFilesystems {
		b.Run(fs.name, func(b *testing.B) { benchRoundTrip(b, fs.open(b)) })
	}
}

func benchRoundTrip(b *testing.B, s *Spool) {
	ctx, cancel := context.WithCancel(context.Background())
	events := s.Watch(ctx, WatchOptions{})
	actorErr := make(chan error, 1)
	go func() { actorErr <- fakeActor(s, events) }()
	defer func() {
		cancel()
		if err := <-actorErr; err != nil {
			b.Error(err)
		}
	}()

	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		id := NewID()
		w, err := s.NewWaiter(id)
		if err != nil {
			b.Fatal(err)
		}
		req := &Request{ID: id, Kind: KindExec, Command: "go test ./...", Cwd: "/home/me/src/app",
			TimeoutS: 300, Agent: "claude-code", Session: "bench"}
		if err := s.Submit(req); err != nil {
			b.Fatal(err)
		}
		var res *Result
		for waited := time.Duration(0); res == nil; waited += time.Second {
			res, err = w.Wait(time.Second)
			switch {
			case err == nil:
			case !errors.Is(err, ErrNoResult):
				b.Fatal(err)
			case waited >= hangGuard:
				b.Fatalf("no result for %s within %s", id, hangGuard)
			}
			select {
			case err := <-actorErr:
				actorErr <- err
				b.Fatalf("the actor stopped: %v", err)
			default:
			}
		}
		w.Close()
		lat = append(lat, time.Since(start))
		if res.Status != StatusDone {
			b.Fatalf("result %+v, want done", res)
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(percentile(lat, 50))/1e6, "p50-ms")
	b.ReportMetric(float64(percentile(lat, 99))/1e6, "p99-ms")
}

// roleIngestWatcher watches the spool until it has seen SLUICE_TEST_ARG
// distinct pending requests, then prints how long that took from the
// earliest created_at it saw, and its peak RSS:
//
//	seen 10000 elapsed_ns 812345678 maxrss_kb 23456
//
// It prints "ready" once it is watching. On SIGTERM it prints what it saw
// so far and exits 1.
func roleIngestWatcher() int {
	s, total, err := roleSpoolCount()
	if err != nil {
		return childFail("ingest-watcher: %v", err)
	}
	events, stop := watchUntilTerm(s)
	defer stop()
	seen := make(map[string]bool, total)
	var first time.Time
	for ev := range events {
		act, err := pending(ev)
		if err != nil {
			fmt.Fprintf(os.Stderr, "ingest-watcher: %v\n", err)
		}
		if !act {
			continue
		}
		if seen[ev.ID] {
			continue
		}
		seen[ev.ID] = true
		if c := ev.Request.CreatedAt; first.IsZero() || c.Before(first) {
			first = c
		}
		if len(seen) == total {
			elapsed := time.Since(first)
			var ru syscall.Rusage
			if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
				return childFail("ingest-watcher: getrusage: %v", err)
			}
			fmt.Printf("seen %d elapsed_ns %d maxrss_kb %d\n", len(seen), elapsed.Nanoseconds(), ru.Maxrss)
			return 0
		}
	}
	fmt.Printf("seen %d elapsed_ns 0 maxrss_kb 0\n", len(seen))
	return childFail("ingest-watcher: stopped after %d of %d requests", len(seen), total)
}

// BenchmarkIngestBurst writes 10,000 requests into a spool as fast as
// several goroutines can submit them, while a watcher in another process
// reports each one. It reports how long the watcher took to see them all
// (from the first request's created_at), the watcher's peak RSS, and how
// long the submitting took. It fails only if a request is never seen.
// Run it with -benchtime=1x: each iteration is a whole burst.
func BenchmarkIngestBurst(b *testing.B) {
	for _, fs := range benchFilesystems {
		b.Run(fs.name, func(b *testing.B) { benchIngestBurst(b, fs.open) })
	}
}

func benchIngestBurst(b *testing.B, open func(*testing.B) *Spool) {
	const total, submitters = 10_000, 8
	var elapsed, submit time.Duration
	var peakKB int64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		s := open(b)
		watcher := startRole(b, "ingest-watcher", envSpool+"="+s.Dir(), envArg+"="+strconv.Itoa(total))
		watcher.expect(b, "ready")
		b.StartTimer()

		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, submitters)
		for g := range submitters {
			wg.Go(func() {
				for i := g; i < total; i += submitters {
					req := &Request{Kind: KindExec, Command: agentCommands[i%len(agentCommands)],
						Cwd: "/home/me/src/app", TimeoutS: 300, Agent: "claude-code", Session: "burst"}
					if err := s.Submit(req); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		submit += time.Since(start)
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}

		line, ok := watcher.next(hangGuard)
		b.StopTimer()
		if !ok {
			// Lost requests: make the watcher say how many it saw.
			watcher.signal(b, syscall.SIGTERM)
			line, _ = watcher.next(hangGuard)
		}
		var n int
		var ns, kb int64
		if _, err := fmt.Sscanf(line, "seen %d elapsed_ns %d maxrss_kb %d", &n, &ns, &kb); err != nil {
			b.Fatalf("watcher printed %q: %v; stderr:\n%s", line, err, watcher.stderr)
		}
		if n != total {
			b.Fatalf("watcher saw %d of %d requests; stderr:\n%s", n, total, watcher.stderr)
		}
		watcher.wait(b)
		elapsed += time.Duration(ns)
		peakKB = max(peakKB, kb)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(elapsed.Milliseconds())/float64(b.N), "ms/10k")
	b.ReportMetric(float64(submit.Milliseconds())/float64(b.N), "submit-ms/10k")
	b.ReportMetric(float64(peakKB)/1024, "peakRSS-MB")
}
