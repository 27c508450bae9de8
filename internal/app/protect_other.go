//go:build !linux

package app

// ProtectProcess does nothing here: only Linux has PR_SET_DUMPABLE.
func ProtectProcess() {}
