package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluice-dev/sluice/queue"
)

// A trust window: for one agent session, a command pattern is allowed
// without asking until a time (T in the console: 15 minutes by default;
// the A dialog's "this session" scope: until the session is long over).
// Trusts live in one file ($XDG_STATE_HOME/sluice/trust.json), so that
// every engine on the machine and 'sluice trust' see the same ones;
// granting, expiry and revoking are audited.

// TrustEntry is one trust window.
type TrustEntry struct {
	ID      string    `json:"id"`
	Session string    `json:"session"`
	Agent   string    `json:"agent,omitempty"`
	Pattern string    `json:"pattern"`
	Until   time.Time `json:"until"`
	By      string    `json:"by"`
	Created time.Time `json:"created"`
}

// TrustStore reads and writes the trust file; it is safe for concurrent
// use and re-reads the file only when it changed. It looks at the file at
// most every trustRecheck: an engine judging a flood stats it once rather
// than once a request, and a trust granted or revoked by another process
// is in force within that time.
type TrustStore struct {
	path string

	mu      sync.Mutex
	st      fileStamp
	checked time.Time // when st was taken (monotonic); zero: never
	entries []TrustEntry
}

// trustStores are this process's stores, one per file: the console grants
// through the same store its engine judges with, so a grant applies to the
// very next request.
var trustStores sync.Map // path -> *TrustStore

// TrustStoreFor is the process's store for the trust file at path.
func TrustStoreFor(path string) *TrustStore {
	ts, _ := trustStores.LoadOrStore(path, &TrustStore{path: path})
	return ts.(*TrustStore)
}

// trustRecheck is how long all trusts what it last read of the file.
const trustRecheck = 100 * time.Millisecond

// All returns the entries as the file holds them now (expired ones too).
func (t *TrustStore) All() ([]TrustEntry, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	if !t.checked.IsZero() && now.Sub(t.checked) < trustRecheck {
		return slices.Clone(t.entries), nil
	}
	st := stampOf(t.path)
	if st == t.st && (st.exists || t.entries == nil) {
		t.checked = now
		return slices.Clone(t.entries), nil
	}
	data, err := os.ReadFile(t.path)
	if errors.Is(err, fs.ErrNotExist) {
		t.st, t.entries, t.checked = st, nil, now
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("trust: %w", err)
	}
	var es []TrustEntry
	if err := json.Unmarshal(data, &es); err != nil {
		return nil, fmt.Errorf("trust: %s does not hold trusts (%v); remove it to start again", t.path, err)
	}
	t.st, t.entries, t.checked = st, es, now
	return slices.Clone(es), nil
}

// Active are the trusts in force at now.
func (t *TrustStore) Active(now time.Time) []TrustEntry {
	es, err := t.All()
	if err != nil {
		return nil // a broken file trusts nothing
	}
	out := es[:0]
	for _, e := range es {
		if now.Before(e.Until) {
			out = append(out, e)
		}
	}
	return out
}

// update changes the file under an exclusive lock: edit gets the entries
// and returns the new ones.
func (t *TrustStore) update(edit func([]TrustEntry) ([]TrustEntry, error)) error {
	if err := os.MkdirAll(filepath.Dir(t.path), 0o700); err != nil {
		return fmt.Errorf("trust: %w", err)
	}
	lock, err := os.OpenFile(t.path+".lock", os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("trust: %w", err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("trust: lock: %w", err)
	}
	t.mu.Lock()
	t.st, t.checked = fileStamp{}, time.Time{} // read it again below
	t.mu.Unlock()
	es, err := t.All()
	if err != nil {
		return err
	}
	es, err = edit(es)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(es, "", "  ")
	if err != nil {
		return err
	}
	tmp := t.path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("trust: %w", err)
	}
	if err := os.Rename(tmp, t.path); err != nil {
		return fmt.Errorf("trust: %w", err)
	}
	t.mu.Lock()
	t.checked = time.Time{} // this process sees its own change at once
	t.mu.Unlock()
	return nil
}

// Grant adds a trust and records it in the audit log first; cwd is the
// directory of the request it was granted on.
func (t *TrustStore) Grant(rec queue.Recorder, e TrustEntry, cwd string) error {
	ev := queue.Event{ID: e.ID, Event: queue.EventTrusted, Actor: e.By, Agent: e.Agent, Kind: queue.KindExec,
		Command: e.Pattern, Cwd: cwd, Reason: fmt.Sprintf("trusted for session %s until %s", e.Session, e.Until.Local().Format("15:04:05"))}
	if err := rec.Record(ev); err != nil {
		return err
	}
	return t.update(func(es []TrustEntry) ([]TrustEntry, error) { return append(es, e), nil })
}

// Expire removes the trusts that expired by now, recording each in the
// audit log, and returns them.
func (t *TrustStore) Expire(rec queue.Recorder, now time.Time) ([]TrustEntry, error) {
	return t.end(rec, func([]string) (string, error) { return "", nil }, func(e TrustEntry, _ string) bool {
		return !now.Before(e.Until)
	}, "expired", string(queue.ByPolicy))
}

// Revoke removes one trust for actor, recording it in the audit log, and
// returns it (none when pick names none). pick chooses the trust's id
// from the ids the file holds, under the file's lock; "" names none.
func (t *TrustStore) Revoke(rec queue.Recorder, actor string, pick func(ids []string) (string, error)) ([]TrustEntry, error) {
	return t.end(rec, pick, func(e TrustEntry, id string) bool { return id != "" && e.ID == id }, "revoked", actor)
}

// end removes the trusts that ends says end (given pick's id), recording
// each in the audit log with why and who, and returns them.
func (t *TrustStore) end(rec queue.Recorder, pick func([]string) (string, error), ends func(TrustEntry, string) bool,
	why, who string) ([]TrustEntry, error) {
	var ended []TrustEntry
	err := t.update(func(es []TrustEntry) ([]TrustEntry, error) {
		ids := make([]string, len(es))
		for i, e := range es {
			ids[i] = e.ID
		}
		id, err := pick(ids)
		if err != nil {
			return nil, err
		}
		keep := es[:0]
		for _, e := range es {
			if ends(e, id) {
				ended = append(ended, e)
			} else {
				keep = append(keep, e)
			}
		}
		for _, e := range ended {
			ev := queue.Event{ID: e.ID, Event: queue.EventTrustEnded, Actor: who, Agent: e.Agent, Kind: queue.KindExec,
				Command: e.Pattern, Reason: why + " (session " + e.Session + ")"}
			if err := rec.Record(ev); err != nil {
				return nil, err
			}
		}
		return keep, nil
	})
	return ended, err
}

// ExpireEvery ends the trusts whose time is up, every interval, and audits
// each, until ctx ends; logf (nil: none) hears of what fails.
func (t *TrustStore) ExpireEvery(ctx context.Context, interval time.Duration, rec queue.Recorder, logf func(string, ...any)) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		es, err := t.All()
		if err != nil || len(es) == 0 {
			continue
		}
		if _, err := t.Expire(rec, time.Now()); err != nil && logf != nil {
			logf("trust: %v", err)
		}
	}
}

// trustRules are the patterns trusted for req's session now, with the
// origins a verdict names them by.
func (t *TrustStore) trustRules(req *queue.Request, now time.Time) (patterns, origins []string) {
	if req.Session == "" || req.Kind != queue.KindExec {
		return nil, nil
	}
	for _, e := range t.Active(now) {
		if e.Session == req.Session && (e.Agent == "" || e.Agent == req.Agent) {
			patterns = append(patterns, e.Pattern)
			origins = append(origins, fmt.Sprintf("trust %s, session %s, until %s", shortTrust(e.ID), e.Session, e.Until.Local().Format("15:04")))
		}
	}
	return patterns, origins
}

func shortTrust(id string) string {
	if len(id) > 8 {
		return id[len(id)-8:]
	}
	return id
}

// trusted is the verdict with req's session's trusts in force, when they
// loosen it; p is the policy for req's cwd.
func trusted(p *Policy, req *queue.Request, v *Verdict, patterns, origins []string) *Verdict {
	if len(patterns) == 0 || v.Action != Ask || req.Kind != queue.KindExec {
		return v
	}
	q, err := p.With(patterns, origins)
	if err != nil {
		return v
	}
	// Only a plain allow: a checkpoint verdict here is one the engine
	// already found it cannot honour.
	if nv := q.CheckRequest(req); nv.Action == Allow {
		return nv
	}
	return v
}
