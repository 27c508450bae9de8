package engcmd

import "testing"

// The limit is the floor while little is live, and never below twice the
// live heap: a large queue is collected at the usual pace, not without
// end.
func TestMemoryLimit(t *testing.T) {
	for _, tc := range []struct{ live, want int64 }{
		{0, memoryFloor},
		{4 << 20, memoryFloor},
		{10 << 20, 36 << 20},
		{100 << 20, 216 << 20},
	} {
		if got := memoryLimit(tc.live); got != tc.want {
			t.Errorf("memoryLimit(%d MiB) = %d MiB, want %d MiB", tc.live>>20, got>>20, tc.want>>20)
		}
		if got := memoryLimit(tc.live); got < 2*tc.live {
			t.Errorf("memoryLimit(%d) = %d: under twice the live heap", tc.live, got)
		}
	}
}
