package exec

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Turns: checkpointed runs whose roots overlap do not run at the same
// time. Each run's changed files are the difference between its project
// before and after it, so a second run inside that window would have its
// files listed as the first's, and 'sluice undo' of the first would
// revert them. A checkpointed run takes a lock per root, in a directory
// every engine of the user shares (the checkpoint store's: the console,
// serve and sluice approve all use it), from before its first snapshot
// to after its last; the next one waits for it, and its output says for
// which run.

// turn is the locks one run holds.
type turn struct {
	files []*os.File
}

// takeTurn waits for every root's lock, in a fixed order (no two runs
// can wait for each other), writing the holder's request id into each.
// say is told once, before waiting, which run holds a lock.
func takeTurn(dir string, roots []string, id string, say func(holder string)) (*turn, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	rs := slices.Clone(roots)
	slices.Sort(rs)
	t := &turn{}
	for _, r := range slices.Compact(rs) {
		sum := sha256.Sum256([]byte(r))
		f, err := os.OpenFile(filepath.Join(dir, hex.EncodeToString(sum[:8])+".lock"), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			t.release()
			return nil, err
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			b := make([]byte, 64)
			n, _ := f.ReadAt(b, 0)
			say(strings.TrimSpace(string(b[:n])))
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		}
		if err != nil {
			f.Close()
			t.release()
			return nil, err
		}
		_ = f.Truncate(0)
		_, _ = f.WriteAt([]byte(id+"\n"), 0)
		t.files = append(t.files, f)
	}
	return t, nil
}

// release lets the next run go.
func (t *turn) release() {
	if t == nil {
		return
	}
	for _, f := range t.files {
		_ = f.Truncate(0)
		f.Close() // drops the lock
	}
	t.files = nil
}

// waitsLine is what a run's output says while it waits for its turn.
func waitsLine(holder string) string {
	if holder == "" {
		holder = "another run"
	}
	return fmt.Sprintf("sluice: waits for %s, which runs in the same project, to end (each run's changed files and undo are its own)\r\n", holder)
}
