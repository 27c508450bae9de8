//go:build !linux

package main

// protectProcess does nothing here: only Linux has PR_SET_DUMPABLE.
func protectProcess() {}
