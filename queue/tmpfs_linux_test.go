package queue

import "golang.org/x/sys/unix"

// isTmpfs reports whether dir is on a tmpfs.
func isTmpfs(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == unix.TMPFS_MAGIC
}
