//go:build unix

package sandbox

import (
	"os"
	"syscall"
)

// fileID is the device and inode of fi.
func fileID(fi os.FileInfo) [2]uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return [2]uint64{uint64(st.Dev), st.Ino} //nolint:unconvert // Dev is int32 on darwin
	}
	return [2]uint64{}
}
