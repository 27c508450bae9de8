package exec

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// Turns: checkpointed runs whose roots overlap do not run at the same
// time. Each run's changed files are the difference between its project
// before and after it, so a second run inside that window would have its
// files listed as the first's, and 'sluice undo' of the first would
// revert them. The turns live in a directory every engine of the user
// shares (the checkpoint store's: the console, serve and sluice approve
// all use it):
//
//   - <root>.lock, one per root (named by a hash of its path), lists the
//     runs that hold the root, one id per line; it is flocked only while
//     it is read or written;
//   - run-<id>.lock is flocked by run id for as long as it holds a turn,
//     so that a run whose engine died (SIGKILL) holds nothing: a listed
//     run whose lock is free is gone;
//   - <id>.with lists the runs that went ahead while run id held its
//     turn, which its result names.
//
// A run takes its turn when no live run holds any of its roots; until
// then it waits, looking again every turnPoll, and its output says for
// which run. A person may let it go ahead (RunOptions.GoAhead): it then
// holds the roots beside the other, and each run's result names the
// other (Checkpoint.Overlapped). A kill ends the wait.

// turnPoll is how often a waiting run looks whether its turn came: a
// run's end frees it within this.
const turnPoll = 50 * time.Millisecond

// turn is one run's hold on its roots.
type turn struct {
	dir   string
	id    string
	locks []string // the roots' list files
	self  *os.File // run-<id>.lock, flocked while the turn is held
	with  []string // runs already holding a root when this one went ahead
}

// takeTurn holds roots for run id, waiting while another live run holds
// any of them. say is told once which run it waits for; ahead, when
// closed, lets it go ahead anyway. It returns ctx's error if ctx ends
// first.
func takeTurn(ctx context.Context, dir string, roots []string, id string, say func(holder string), ahead <-chan struct{}) (*turn, error) {
	if !queue.ValidID(id) {
		return nil, fmt.Errorf("turns: %q is not a request id", id)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	t := &turn{dir: dir, id: id}
	rs := slices.Clone(roots)
	slices.Sort(rs)
	for _, r := range slices.Compact(rs) {
		sum := sha256.Sum256([]byte(r))
		t.locks = append(t.locks, filepath.Join(dir, hex.EncodeToString(sum[:8])+".lock"))
	}
	self, err := os.OpenFile(t.runLock(id), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(self.Fd()), syscall.LOCK_EX); err != nil {
		self.Close()
		return nil, err
	}
	t.self = self
	// What a crashed run of this id left is not a record of this one.
	_ = os.Remove(t.withFile(id))
	said, passed := false, false
	var tick <-chan time.Time
	for {
		if !passed {
			select {
			case <-ahead:
				passed = true
			default:
			}
		}
		holders, err := t.tryTake(passed)
		if err != nil {
			t.release()
			return nil, err
		}
		if holders == nil {
			return t, nil
		}
		if !said {
			said = true
			say(holders[0])
			ticker := time.NewTicker(turnPoll)
			defer ticker.Stop()
			tick = ticker.C
		}
		select {
		case <-ctx.Done():
			t.release()
			return nil, ctx.Err()
		case <-ahead:
			passed = true
		case <-tick:
		}
	}
}

// tryTake locks every root's list (in a fixed order: no two runs wait
// for each other), drops runs that are gone, and adds this run unless
// another live run holds a root; it returns those holders (nil when it
// took the roots). With goAhead it takes them anyway, and the runs it
// joins and this one name each other.
func (t *turn) tryTake(goAhead bool) ([]string, error) {
	files := make([]*os.File, 0, len(t.locks))
	defer func() {
		for _, f := range files {
			f.Close() // drops the flock
		}
	}()
	lists := make([][]string, len(t.locks))
	var holders []string
	for i, p := range t.locks {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			return nil, err
		}
		for _, h := range readIDs(f) {
			if h == t.id || !t.alive(h) {
				continue
			}
			lists[i] = append(lists[i], h)
			if !slices.Contains(holders, h) {
				holders = append(holders, h)
			}
		}
	}
	if len(holders) > 0 && !goAhead {
		return holders, nil
	}
	for i, f := range files {
		if err := writeIDs(f, append(lists[i], t.id)); err != nil {
			return nil, err
		}
	}
	for _, h := range holders {
		if err := appendLine(t.withFile(h), t.id); err != nil {
			return nil, err
		}
	}
	t.with = holders
	return nil, nil
}

// alive says whether run h holds its run lock (its engine lives).
func (t *turn) alive(h string) bool {
	if !queue.ValidID(h) {
		return false
	}
	f, err := os.OpenFile(t.runLock(h), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	_ = os.Remove(t.runLock(h)) // a dead run's: nobody holds it
	return false
}

// release gives the roots back and returns the runs that overlapped this
// one: those it joined, and those that went ahead while it held them.
func (t *turn) release() []string {
	if t == nil || t.self == nil {
		return nil
	}
	for _, p := range t.locks {
		f, err := os.OpenFile(p, os.O_RDWR|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX) == nil {
			ids := readIDs(f)
			if i := slices.Index(ids, t.id); i >= 0 {
				_ = writeIDs(f, slices.Delete(ids, i, i+1))
			}
		}
		f.Close()
	}
	with := t.with
	if b, err := os.ReadFile(t.withFile(t.id)); err == nil {
		for _, id := range strings.Fields(string(b)) {
			if queue.ValidID(id) && !slices.Contains(with, id) {
				with = append(with, id)
			}
		}
	}
	_ = os.Remove(t.withFile(t.id))
	_ = os.Remove(t.runLock(t.id))
	t.self.Close()
	t.self = nil
	slices.Sort(with)
	return with
}

func (t *turn) runLock(id string) string  { return filepath.Join(t.dir, "run-"+id+".lock") }
func (t *turn) withFile(id string) string { return filepath.Join(t.dir, id+".with") }

// readIDs reads f's lines that are request ids.
func readIDs(f *os.File) []string {
	var b bytes.Buffer
	if _, err := f.Seek(0, 0); err != nil {
		return nil
	}
	if _, err := b.ReadFrom(f); err != nil {
		return nil
	}
	var ids []string
	for _, l := range strings.Fields(b.String()) {
		if queue.ValidID(l) && !slices.Contains(ids, l) {
			ids = append(ids, l)
		}
	}
	return ids
}

// writeIDs replaces f's content with ids, one per line.
func writeIDs(f *os.File, ids []string) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(id + "\n")
	}
	_, err := f.WriteAt([]byte(b.String()), 0)
	return err
}

// appendLine adds line to the file at path.
func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// waitsLine is what a run's output says while it waits for its turn.
func waitsLine(holder string) string {
	if holder == "" {
		holder = "another run"
	}
	return fmt.Sprintf("sluice: waits for %s, which runs in the same project, to end (each run's changed files and undo are its own)\r\n", holder)
}

// aheadLine is what a run's output says when a person let it go ahead of
// the runs in with.
func aheadLine(with []string) string {
	return fmt.Sprintf("sluice: goes ahead while %s runs in the same project (a person let it): each run's changed files may include the other's, and undo asks before restoring those\r\n", strings.Join(with, ", "))
}
