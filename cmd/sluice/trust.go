package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/policy"
	"github.com/sluice-dev/sluice/queue"
)

// A trust window: for one agent session, a command pattern is allowed
// without asking until a time (T in the console: 15 minutes by default;
// the A dialog's "this session" scope: until the session is long over).
// Trusts live in $XDG_STATE_HOME/sluice/trust.json, so that every engine
// on the machine and 'sluice trust' see the same ones; granting, expiry
// and revoking are audited.

type trustEntry struct {
	ID      string    `json:"id"`
	Session string    `json:"session"`
	Agent   string    `json:"agent,omitempty"`
	Pattern string    `json:"pattern"`
	Until   time.Time `json:"until"`
	By      string    `json:"by"`
	Created time.Time `json:"created"`
}

// trustStore reads and writes the trust file; it is safe for concurrent
// use and re-reads the file only when it changed. It looks at the file at
// most every trustRecheck: an engine judging a flood stats it once rather
// than once a request, and a trust granted or revoked by another process
// is in force within that time.
type trustStore struct {
	path string

	mu      sync.Mutex
	st      stamp
	checked time.Time // when st was taken (monotonic); zero: never
	entries []trustEntry
}

// trustStores are this process's stores, one per file: the console grants
// through the same store its engine judges with, so a grant applies to the
// very next request.
var trustStores sync.Map // path -> *trustStore

// trustStoreFor is the process's store for the trust file at path.
func trustStoreFor(path string) *trustStore {
	ts, _ := trustStores.LoadOrStore(path, &trustStore{path: path})
	return ts.(*trustStore)
}

// trustRecheck is how long all trusts what it last read of the file.
const trustRecheck = 100 * time.Millisecond

func trustPath() string { return filepath.Join(filepath.Dir(checkpointDir()), "trust.json") }

// all returns the entries as the file holds them now (expired ones too).
func (t *trustStore) all() ([]trustEntry, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	if !t.checked.IsZero() && now.Sub(t.checked) < trustRecheck {
		return slices.Clone(t.entries), nil
	}
	st := statStamp(t.path)
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
	var es []trustEntry
	if err := json.Unmarshal(data, &es); err != nil {
		return nil, fmt.Errorf("trust: %s does not hold trusts (%v); remove it to start again", t.path, err)
	}
	t.st, t.entries, t.checked = st, es, now
	return slices.Clone(es), nil
}

// active are the trusts in force at now.
func (t *trustStore) active(now time.Time) []trustEntry {
	es, err := t.all()
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
func (t *trustStore) update(edit func([]trustEntry) ([]trustEntry, error)) error {
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
	t.st, t.checked = stamp{}, time.Time{} // read it again below
	t.mu.Unlock()
	es, err := t.all()
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

// grant adds a trust and records it in the audit log first.
func (t *trustStore) grant(rec queue.Recorder, e trustEntry, cwd string) error {
	ev := queue.Event{ID: e.ID, Event: queue.EventTrusted, Actor: e.By, Agent: e.Agent, Kind: queue.KindExec,
		Command: e.Pattern, Cwd: cwd, Reason: fmt.Sprintf("trusted for session %s until %s", e.Session, e.Until.Local().Format("15:04:05"))}
	if err := rec.Record(ev); err != nil {
		return err
	}
	return t.update(func(es []trustEntry) ([]trustEntry, error) { return append(es, e), nil })
}

// end removes the trusts that expired by now (or, with id, that one),
// recording each in the audit log, and returns them.
func (t *trustStore) end(rec queue.Recorder, now time.Time, id, actor string) ([]trustEntry, error) {
	var ended []trustEntry
	err := t.update(func(es []trustEntry) ([]trustEntry, error) {
		if id != "" {
			// The whole id, a unique prefix or the console's short form.
			ids := make([]string, len(es))
			for i, e := range es {
				ids[i] = e.ID
			}
			m := matchIDs(id, ids)
			if len(m) > 1 {
				return nil, ambiguous(id, "trusts", m)
			}
			if len(m) == 1 {
				id = m[0]
			}
		}
		keep := es[:0]
		for _, e := range es {
			switch {
			case id != "" && e.ID == id:
				ended = append(ended, e)
			case id == "" && !now.Before(e.Until):
				ended = append(ended, e)
			default:
				keep = append(keep, e)
			}
		}
		for _, e := range ended {
			why, who := "expired", string(queue.ByPolicy)
			if id != "" {
				why, who = "revoked", actor
			}
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

// trustRules are the patterns trusted for req's session now, with the
// origins a verdict names them by.
func (t *trustStore) trustRules(req *queue.Request, now time.Time) (patterns, origins []string) {
	if req.Session == "" || req.Kind != queue.KindExec {
		return nil, nil
	}
	for _, e := range t.active(now) {
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
func trusted(p *policy.Policy, req *queue.Request, v queue.Verdict, patterns, origins []string) queue.Verdict {
	if len(patterns) == 0 || v.Action != queue.ActionAsk || req.Kind != queue.KindExec {
		return v
	}
	q, err := p.With(patterns, origins)
	if err != nil {
		return v
	}
	// Only a plain allow: a checkpoint verdict here is one the engine
	// already found it cannot honour.
	if nv := q.CheckRequest(req).Queue(); nv.Action == queue.ActionAllow {
		return nv
	}
	return v
}

const trustHelp = `List or revoke trust windows. T in the console approves a request and
trusts its rule for that agent session for a while ([console] trust_minutes,
default 15); the A dialog's "this session" scope trusts it for the rest of
the session. Requests of that session that the rule covers then run without
asking (a deny still wins). Trusts expire on their own; granting, expiry
and revoking are recorded in the audit log.

  sluice trust ls             the trusts in force: id, session, pattern, time left
  sluice trust revoke ID      end one now (the id, any unique prefix of it
                              of 4 or more characters, or its last 8 or
                              more, as the console shows them)

Exit status: 0; 1 when there is no such trust or the file cannot be read; 2 usage.
`

func cmdTrust(args []string, std stdio, g *globals) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		w, code := std.out, exitOK
		if len(args) == 0 {
			w, code = std.err, exitUsage
		}
		fmt.Fprint(w, "Usage: sluice trust ls | revoke ID\n\n"+trustHelp)
		return code
	}
	ts := trustStoreFor(trustPath())
	now := time.Now()
	switch args[0] {
	case "ls":
		if len(args) > 1 {
			return usageErr(std, "trust ls", "takes no arguments")
		}
		es, err := ts.all()
		if err != nil {
			fmt.Fprintf(std.err, "sluice trust: %s\n", show(err.Error()))
			return exitFail
		}
		tw := tabwriter.NewWriter(std.out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSESSION\tAGENT\tPATTERN\tLEFT\tBY")
		n := 0
		for _, e := range es {
			if !now.Before(e.Until) {
				continue
			}
			n++
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.ID, show(e.Session), orDash(show(e.Agent)), show(e.Pattern),
				e.Until.Sub(now).Round(time.Second), show(e.By))
		}
		if n == 0 {
			fmt.Fprintln(std.err, "no trust in force")
			return exitOK
		}
		tw.Flush()
		return exitOK
	case "revoke":
		if len(args) != 2 {
			return usageErr(std, "trust revoke", "which trust? give its id (see 'sluice trust ls')")
		}
		path, err := auditPath("")
		if err != nil {
			fmt.Fprintf(std.err, "sluice trust: %v\n", err)
			return exitFail
		}
		log, err := audit.Open(path)
		if err != nil {
			fmt.Fprintf(std.err, "sluice trust: %v\n", err)
			return exitFail
		}
		defer log.Close()
		ended, err := ts.end(log, now, args[1], loginName())
		if err != nil {
			fmt.Fprintf(std.err, "sluice trust: %s\n", show(err.Error()))
			return exitFail
		}
		if len(ended) == 0 {
			fmt.Fprintf(std.err, "sluice trust: no trust %s (see 'sluice trust ls')\n", show(args[1]))
			return exitFail
		}
		for _, e := range ended {
			fmt.Fprintf(std.out, "revoked %s: %s for session %s\n", e.ID, show(e.Pattern), show(e.Session))
		}
		return exitOK
	}
	return usageErr(std, "trust", "unknown subcommand %q (ls or revoke)", args[0])
}
