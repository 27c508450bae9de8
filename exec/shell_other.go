//go:build unix && !linux

package exec

import "golang.org/x/sys/unix"

// openRegular opens path for reading if it is a regular file (checked
// before and after the open: without O_PATH a name swapped in between
// for a device is opened, non-blocking, and then refused).
func openRegular(path string) (int, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return -1, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return -1, unix.EINVAL
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return -1, err
	}
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return -1, unix.EINVAL
	}
	return fd, nil
}

// directStart is off where a confined start goes through sandbox-exec,
// which would fail for the program after the start succeeded (no fall
// back to bash's message and status) and show its full path as argv[0].
const directStart = false
