package audit

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// The floor (BENCHMARKS.md, "The physical floor") for one audit line on
// these machines: marshal and SHA-256 chain without a sync, and with an
// fsync.
const (
	floorNoSync = 3.8e-6
	floorFsync  = 79e-6
)

// tmpfsDir returns a fresh directory on /dev/shm, or skips.
func tmpfsDir(b *testing.B) string {
	b.Helper()
	fi, err := os.Stat("/dev/shm")
	if err != nil || !fi.IsDir() {
		b.Skip("no /dev/shm")
	}
	dir, err := os.MkdirTemp("/dev/shm", "sluice-audit-bench-")
	if err != nil {
		b.Skip(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// onBoth runs bench in a directory on tmpfs and in one on disk.
func onBoth(b *testing.B, bench func(b *testing.B, dir string)) {
	b.Run("tmpfs", func(b *testing.B) { bench(b, tmpfsDir(b)) })
	b.Run("disk", func(b *testing.B) { bench(b, b.TempDir()) })
}

// BenchmarkEncodeLine is an audit line's own work: marshal the event and
// hash it into the chain, with no file. The floor: 3.8 µs.
func BenchmarkEncodeLine(b *testing.B) {
	enc := newEncoder()
	ev := testEvent(3)
	ev.Prev = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	var buf []byte
	var err error
	b.ReportAllocs()
	for b.Loop() {
		ev.Seq++
		ev.TS = time.Now().UTC()
		if buf, err = enc.appendLine(buf[:0], &ev); err != nil {
			b.Fatal(err)
		}
		ev.Prev = ev.Hash
	}
	perLine := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(perLine/floorNoSync, "x-floor")
}

// BenchmarkAppend is one process appending with an fsync per line: lock,
// read the last line, write, fsync, unlock. The floor: 79 µs.
func BenchmarkAppend(b *testing.B) {
	onBoth(b, func(b *testing.B, dir string) {
		l, err := Open(filepath.Join(dir, "audit.jsonl"))
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			if _, err := l.Append(testEvent(i)); err != nil {
				b.Fatal(err)
			}
			i++
		}
		perLine := b.Elapsed().Seconds() / float64(b.N)
		b.ReportMetric(1/perLine, "appends/s")
		b.ReportMetric(perLine/floorFsync, "x-fsync-floor")
	})
}

// BenchmarkRawFsync is the baseline for BenchmarkAppend measured in the
// same run: one 420-byte write to an O_APPEND file and an fsync, nothing
// else. It is this machine's floor, which moves from hour to hour.
func BenchmarkRawFsync(b *testing.B) {
	onBoth(b, func(b *testing.B, dir string) {
		f, err := os.OpenFile(filepath.Join(dir, "raw"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		line := testLines(b, 4)[3]
		for b.Loop() {
			if _, err := f.Write(line); err != nil {
				b.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
	})
}

// BenchmarkAppend4Procs is four processes appending at once, 250 lines
// each per iteration, each line fsynced; the figure is lines per second
// for all four together, from the start signal to the last "done".
func BenchmarkAppend4Procs(b *testing.B) {
	const procs, each = 4, 250
	onBoth(b, func(b *testing.B, dir string) {
		log := filepath.Join(dir, "audit.jsonl")
		var busy time.Duration
		for b.Loop() {
			b.StopTimer()
			var kids []*child
			for range procs {
				c := startRole(b, "appender", log, envN+"="+strconv.Itoa(each))
				c.expect(b, "ready")
				kids = append(kids, c)
			}
			b.StartTimer()
			start := time.Now()
			for _, c := range kids {
				c.stdin.Close()
			}
			for _, c := range kids {
				c.expect(b, "done")
			}
			busy += time.Since(start)
			b.StopTimer()
			for _, c := range kids {
				if err := c.wait(); err != nil {
					b.Fatalf("appender: %v\n%s", err, c.stderr)
				}
			}
			b.StartTimer()
		}
		lines := float64(b.N * procs * each)
		b.ReportMetric(lines/busy.Seconds(), "appends/s")
		b.ReportMetric(busy.Seconds()/lines/floorFsync, "x-fsync-floor")
		if rep, err := VerifyFile(log); err != nil || rep.Events != int64(lines) {
			b.Fatalf("verify: %+v %v", rep, err)
		}
	})
}

// BenchmarkVerify verifies a log of 1,000,000 typical lines (written
// beforehand, so read from the page cache).
func BenchmarkVerify(b *testing.B) {
	const n = 1_000_000
	p := writeTestLog(b, b.TempDir(), n)
	fi, err := os.Stat(p)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	b.ReportAllocs()
	for b.Loop() {
		rep, err := VerifyFile(p)
		if err != nil || rep.Events != n {
			b.Fatalf("verify: %+v %v", rep, err)
		}
	}
	perLog := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(n/perLog, "lines/s")
	b.ReportMetric(perLog, "s/1M-lines")
}
