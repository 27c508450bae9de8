package engcmd

import (
	"context"
	"runtime"
	"runtime/debug"
	"time"
)

// softMemory keeps a long-running engine's memory small while little is
// live: the Go runtime's soft memory limit is held at memoryFloor, and
// raised with the live heap (to twice it, plus room) so that a large queue
// gets the usual collection pacing rather than a collector that never
// stops. The heap in use stands for the live heap (it holds the garbage of
// the cycle under way too, so the limit is somewhat looser): reading the
// live heap itself takes runtime/metrics, whose package init (~0.12 ms,
// describing every GODEBUG setting) every agent process would pay for an
// engine's once-a-second reading. (Measured with 10,000 pending requests:
// peak RSS 29-33 MiB without it, 25-27 MiB with it read from the live
// heap, 27-28 MiB from the heap in use, the judging time unchanged;
// BENCHMARKS.md, go run ./bench/mem -fs tmpfs.)
func softMemory(ctx context.Context) {
	var ms runtime.MemStats
	set := func() {
		runtime.ReadMemStats(&ms)
		debug.SetMemoryLimit(memoryLimit(int64(ms.HeapAlloc)))
	}
	set()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			set()
		}
	}
}

// memoryFloor is the soft limit while the live heap is small.
const memoryFloor = 24 << 20

// memoryLimit is the soft limit for a live heap of live bytes.
func memoryLimit(live int64) int64 {
	return max(memoryFloor, 2*live+16<<20)
}
