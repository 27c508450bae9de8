package queue

import "golang.org/x/sys/unix"

// localFS reports whether dir is on a file system whose FIFOs only this
// kernel's processes open: the common local ones. Anything else (NFS,
// SMB, 9p, FUSE and so virtiofs, Ceph...) is taken for shared, where a
// writer's FIFO may be open on another machine.
func localFS(dir string) bool {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return false
	}
	switch uint32(st.Type) {
	case unix.TMPFS_MAGIC, unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC,
		unix.OVERLAYFS_SUPER_MAGIC, unix.F2FS_SUPER_MAGIC, unix.RAMFS_MAGIC, 0x2fc12fc1 /* zfs */, unix.BCACHEFS_SUPER_MAGIC:
		return true
	}
	return false
}
