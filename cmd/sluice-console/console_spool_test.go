//go:build linux

package main

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/internal/e2e"
	"github.com/sluice-dev/sluice/queue"
)

// TestWatchSpoolWritable: a spool on a file system remounted read-only is
// told to the console at once, with what to do, and cleared by itself
// once it is read-write again.
func TestWatchSpoolWritable(t *testing.T) {
	fs := e2e.Tmpfs(t, "1m")
	sp, err := queue.Open(filepath.Join(fs, "spool"))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("", fs, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var told []string
	tell := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			told = append(told, "")
		} else {
			told = append(told, err.Error())
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); watchSpoolWritable(ctx, sp, tell) }()
	defer func() { cancel(); <-done }()
	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second) // a hang guard
		for {
			mu.Lock()
			got := append([]string(nil), told...)
			mu.Unlock()
			if len(got) > 0 && got[len(got)-1] == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("told %q, want last %q", got, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("READ-ONLY: remount " + sp.Dir() + " read-write")
	if err := syscall.Mount("", fs, "", syscall.MS_REMOUNT, ""); err != nil {
		t.Fatal(err)
	}
	waitFor("")
}

// TestWatchSpoolFull: a full spool is told too (an empty file fits on a
// full disk; a byte does not), and cleared once there is space.
func TestWatchSpoolFull(t *testing.T) {
	fs := e2e.Tmpfs(t, "256k")
	sp, err := queue.Open(filepath.Join(fs, "spool"))
	if err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(fs, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = f.Write(make([]byte, 4096))
	}
	f.Close()
	if err := sp.CheckWritable(); err == nil {
		t.Fatal("a full spool is said writable")
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := sp.CheckWritable(); err != nil {
		t.Fatalf("once there is space: %v", err)
	}
}
