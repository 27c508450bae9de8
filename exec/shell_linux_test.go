package exec

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRunnableOpensNoDevice: a command named by the agent that leads,
// through a symlink, to something other than a regular file (here a
// FIFO; a device the same) is looked at but never opened: opening a
// device can act (a watchdog starts), and serve looks unconfined.
func TestRunnableOpensNoDevice(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fifo, filepath.Join(dir, "prog")); err != nil {
		t.Fatal(err)
	}
	in, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Skip("no inotify:", err)
	}
	defer unix.Close(in)
	if _, err := unix.InotifyAddWatch(in, fifo, unix.IN_OPEN); err != nil {
		t.Fatal(err)
	}
	if runnable(filepath.Join(dir, "prog")) {
		t.Error("a FIFO counts as a program")
	}
	if _, ok := lookProgram("./prog", dir, nil); ok {
		t.Error("lookProgram takes a FIFO for a program")
	}
	var buf [4096]byte
	if n, _ := unix.Read(in, buf[:]); n > 0 {
		t.Error("the FIFO was opened")
	}
	// A regular program through a symlink is still found.
	if err := os.Symlink("/bin/sh", filepath.Join(dir, "sh")); err != nil {
		t.Fatal(err)
	}
	if p, ok := lookProgram("./sh", dir, nil); !ok || p != "./sh" {
		t.Errorf("lookProgram(./sh) = %q, %v", p, ok)
	}
}
