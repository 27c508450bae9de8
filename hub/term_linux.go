package hub

import "golang.org/x/sys/unix"

const ioctlGetTermios = unix.TCGETS
