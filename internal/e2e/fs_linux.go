package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Tmpfs mounts a tmpfs of size (a mount option: "1m", "256k") in a
// temporary directory for the test, unmounted after it; it skips the test
// where that cannot be done (not root, no mount allowed).
func Tmpfs(t testing.TB, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	fs := t.TempDir()
	if err := syscall.Mount("tmpfs", fs, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(fs, syscall.MNT_DETACH) })
	return fs
}

// Remount remounts the file system mounted at dir read-only or
// read-write, as 'mount -o remount,ro' does. The kernel refuses to make a
// file system read-only while a file on it is open for writing (EBUSY).
func Remount(dir string, readOnly bool) error {
	flags := uintptr(syscall.MS_REMOUNT)
	if readOnly {
		flags |= syscall.MS_RDONLY
	}
	return syscall.Mount("", dir, "", flags, "")
}

// Fill fills the file system dir is on with a file in dir until a write
// fails with ENOSPC; free removes it. It fails the test on any other
// error.
func Fill(t testing.TB, dir string) (free func()) {
	t.Helper()
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 4096)
	for {
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	return func() {
		t.Helper()
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
	}
}
