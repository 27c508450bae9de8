package audit

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"os"

	"github.com/sluice-dev/sluice/queue"
)

// EachQueuedExec calls fn with each exec request the audit log saw queued
// (a missing log has none), for counting what a rule would have matched.
func EachQueuedExec(auditFile string, fn func(*queue.Event) error) error {
	return EachQueued(auditFile, queue.KindExec, fn)
}

// EachQueued calls fn with each request of kind the audit log saw queued
// (a missing log has none).
func EachQueued(auditFile string, kind queue.Kind, fn func(*queue.Event) error) error {
	f, err := os.Open(auditFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var ev queue.Event
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Event != queue.EventQueued || ev.Kind != kind {
			continue
		}
		if err := fn(&ev); err != nil {
			return err
		}
	}
	return sc.Err()
}
