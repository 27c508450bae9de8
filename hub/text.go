package hub

import (
	"bufio"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// isTerminal reports whether r is a terminal a person answers on.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios)
	return err == nil
}

// readYes reads one line and reports whether it says yes.
func readYes(r io.Reader) bool {
	line, _ := bufio.NewReader(r).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}
