package queue

import (
	"bytes"

	"golang.org/x/sys/unix"
)

// localFS reports whether dir is on a file system whose FIFOs only this
// kernel's processes open: APFS, HFS+, UFS, ZFS, tmpfs. Anything else
// (nfs, smbfs, afpfs, macfuse...) is taken for shared.
func localFS(dir string) bool {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return false
	}
	name := string(bytes.TrimRight(st.Fstypename[:], "\x00"))
	switch name {
	case "apfs", "hfs", "ufs", "zfs", "tmpfs":
		return true
	}
	return false
}
