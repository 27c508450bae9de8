package queue

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// State is where a listed request stands.
type State string

// The states List reports.
const (
	StatePending  State = "pending"  // in new/, waiting for a decision
	StateRunning  State = "running"  // claimed; its actor is alive
	StateOrphaned State = "orphaned" // claimed, but its actor died; the next watcher answers it interrupted
	StateBad      State = "bad"      // in new/ but unreadable; the next watcher quarantines it
)

// Entry is one request as List sees it.
type Entry struct {
	ID      string   // empty for a bad file whose name is not an id
	Name    string   // the file name
	State   State    //
	Request *Request // nil for StateBad
	Err     error    // why, for StateBad
	Since   time.Time
}

// List returns the requests waiting in new/ and those running in cur/,
// oldest first. It only reads: it claims, quarantines and expires nothing.
func (s *Spool) List() ([]Entry, error) {
	var list []Entry
	news, err := os.ReadDir(s.path(dirNew, ""))
	if err != nil {
		return nil, fmt.Errorf("queue: list: %w", err)
	}
	for _, e := range news {
		ent := Entry{Name: e.Name(), ID: stemOf(e.Name()), State: StatePending}
		req, err := s.peek(e.Name())
		switch {
		case errors.Is(err, ErrNotFound):
			continue
		case err != nil:
			ent.State, ent.Err = StateBad, err
		default:
			ent.Request = req
		}
		ent.Since = since(ent.Request, e)
		list = append(list, ent)
	}
	curs, err := os.ReadDir(s.path(dirCur, ""))
	if err != nil {
		return nil, fmt.Errorf("queue: list: %w", err)
	}
	for _, e := range curs {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !ValidID(id) || exists(s.ResultPath(id)) {
			continue
		}
		ent, ok := s.running(id)
		if ok {
			ent.Since = since(ent.Request, e)
			list = append(list, ent)
		}
	}
	// Oldest first: ids need not sort by time (submit accepts any id).
	slices.SortStableFunc(list, func(a, b Entry) int { return a.Since.Compare(b.Since) })
	return list, nil
}

// running describes a claimed request without a result. A shared lock that
// can be taken means nobody holds the claim any more.
func (s *Spool) running(id string) (Entry, bool) {
	f, err := openNoFollow(s.path(dirCur, id+".json"))
	if err != nil {
		return Entry{}, false
	}
	defer f.Close()
	ent := Entry{ID: id, Name: id + ".json", State: StateRunning}
	if lockNB(f, false) == nil {
		ent.State = StateOrphaned
	}
	req, err := readRequestFile(f, id)
	if err != nil {
		return Entry{}, false
	}
	ent.Request = req
	return ent, true
}

// since is when a request was made: its created_at, unless that is missing
// or in the future (an agent's clock or an agent's lie), then the file's
// modification time.
func since(req *Request, e os.DirEntry) time.Time {
	if req != nil && !req.CreatedAt.IsZero() && !req.CreatedAt.After(time.Now()) {
		return req.CreatedAt
	}
	if fi, err := e.Info(); err == nil {
		return fi.ModTime()
	}
	return time.Time{}
}
