package cli

import "syscall"

// ChildAttr is what a child sluice keeps beside it (the hub bridge, the
// fleet console's feed) starts with: it goes when its parent goes, even
// when the parent is killed (SIGKILL).
func ChildAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM} }
