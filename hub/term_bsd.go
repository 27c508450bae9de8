//go:build darwin || freebsd || netbsd || openbsd

package hub

import "golang.org/x/sys/unix"

const ioctlGetTermios = unix.TIOCGETA
