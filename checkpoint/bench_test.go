package checkpoint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkTake10k: a checkpoint of a 10,000-file project (100 directories
// of 100 small source files) in which 3 files changed since the last one:
// what every mutating run pays, twice. The first checkpoint, which copies
// every file into the shadow repository, is taken before the timer.
func BenchmarkTake10k(b *testing.B) {
	needGit(b)
	ctx := context.Background()
	dir := b.TempDir()
	for d := range 100 {
		for f := range 100 {
			p := filepath.Join(dir, fmt.Sprintf("pkg%03d", d), fmt.Sprintf("file%03d.go", f))
			if f == 0 {
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					b.Fatal(err)
				}
			}
			if err := os.WriteFile(p, []byte(fmt.Sprintf("package pkg%03d\n\n// F%d is generated.\nfunc F%d() int { return %d }\n", d, f, f, f)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	s := &Store{Dir: b.TempDir()}
	first := time.Now()
	if _, err := s.Take(ctx, dir, "first/pre"); err != nil {
		b.Fatal(err)
	}
	firstMS := float64(time.Since(first).Milliseconds())
	var took []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		for _, f := range []string{"pkg001/file001.go", "pkg050/file050.go", "pkg099/file099.go"} {
			if err := os.WriteFile(filepath.Join(dir, f), []byte(fmt.Sprintf("package x // edit %d\n", i)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		start := time.Now()
		if _, err := s.Take(ctx, dir, fmt.Sprintf("r%06d/pre", i)); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(firstMS, "first-ms")
}
