package main

import "syscall"

// childAttr: the bridge goes when serve goes, even killed (SIGKILL).
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM} }
