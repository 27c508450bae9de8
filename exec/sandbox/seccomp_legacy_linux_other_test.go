//go:build linux && !amd64

package sandbox

// legacy are the system calls the effect tests make where the
// architecture has them; here, none are listed.
var legacy = map[string]uintptr{}
