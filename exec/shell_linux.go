package exec

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// openRegular opens path for reading if it is a regular file: it is
// opened as a path first (O_PATH opens nothing it names), checked, and
// only that very file is then opened for reading, through /proc, so a
// name swapped for a device in between is never opened.
func openRegular(path string) (int, error) {
	pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return -1, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return -1, unix.EINVAL
	}
	return unix.Open("/proc/self/fd/"+strconv.Itoa(pfd), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
}

// directStart: Linux starts a confined program itself (sandbox.Start), so
// a direct start fails where bash's exec would, and falls back to bash.
const directStart = true
