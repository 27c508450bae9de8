package hook

import (
	"os"
	"syscall"
)

// hasTTY reports whether this process has a controlling terminal.
func hasTTY() bool {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	f.Close()
	return true
}
