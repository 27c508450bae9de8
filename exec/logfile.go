package exec

import (
	"fmt"
	"os"
	"syscall"
)

// OpenLog opens a request's output log for appending. The spool is
// writable by the agent, so the path is hostile: it must not be a symlink
// (O_NOFOLLOW), and what is opened must be a regular file of ours with a
// single link, or a hard link to another file would have the command's
// output appended to it.
func OpenLog(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("exec: open log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("exec: open log: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.Mode().IsRegular() || !ok || st.Nlink != 1 || int(st.Uid) != os.Geteuid() {
		f.Close()
		return nil, fmt.Errorf("exec: log %s is not a regular file of ours with one link; refusing to write to it", path)
	}
	return f, nil
}
