package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"time"
)

// Event is an audit line, as much of it as the harness reads. The
// harness reads the log with its own decoder (plain encoding/json, line
// by line), not the audit package's, so that its checks do not share
// the code they check.
type Event struct {
	Seq      int64     `json:"seq"`
	TS       time.Time `json:"ts"`
	ID       string    `json:"id"`
	Event    string    `json:"event"`
	Actor    string    `json:"actor"`
	Command  string    `json:"command"`
	Status   string    `json:"status"`
	Reason   string    `json:"reason"`
	ExitCode *int      `json:"exit_code"`
}

// ReadAudit reads every event of the audit log at path. Lines that are
// not events (a torn tail a kill left) are skipped; a log not there yet
// is empty.
func ReadAudit(path string) ([]Event, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseEvents(data), nil
}

func parseEvents(data []byte) []Event {
	var evs []Event
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		var ev Event
		if len(line) == 0 || json.Unmarshal(line, &ev) != nil || ev.Event == "" {
			continue
		}
		evs = append(evs, ev)
	}
	return evs
}

// AuditTail reads the lines appended to an audit log since it last
// looked: a watcher of a log other processes write.
type AuditTail struct {
	Path    string
	off     int64
	partial []byte
}

// Poll returns the events appended since the last Poll; a line not yet
// whole waits for the next.
func (a *AuditTail) Poll() []Event {
	f, err := os.Open(a.Path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(a.off, io.SeekStart); err != nil {
		return nil
	}
	data, _ := io.ReadAll(f)
	a.off += int64(len(data))
	data = append(a.partial, data...)
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		a.partial = data
		return nil
	}
	a.partial = slices.Clone(data[end+1:])
	return parseEvents(data[:end+1])
}
