//go:build !linux

package queue

// isTmpfs: the tmpfs benchmarks run on Linux only.
func isTmpfs(string) bool { return false }
