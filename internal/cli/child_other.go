//go:build !linux

package cli

import "syscall"

// ChildAttr: there is no parent-death signal here. serve stops the bridge
// when it stops; a serve killed outright leaves it running until it is
// stopped (it applies decisions through the box's sluice, which needs no
// engine running).
func ChildAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
