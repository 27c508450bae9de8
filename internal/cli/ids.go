package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/queue"
)

// Ids on the command line (protocol section 5): every command that takes
// an id (approve, deny, show, undo, trust revoke, hub approve and deny)
// takes the whole id, any prefix of it of 4 or more characters, or its
// last 8 or more characters, which is the short form the console shows,
// as long as what is given names one id only.
const (
	minIDPrefix = 4
	minIDSuffix = 8
	// idLen is the length of the ids sluice makes (ULIDs); a valid id this
	// long is taken as a whole id.
	idLen = 26
)

// MatchIDs returns those of ids that arg names: arg itself, the ids it
// starts (4 or more characters), and the ids it ends (8 or more). An id
// that equals arg is the only match. Each id is returned once, in the
// order given.
func MatchIDs(arg string, ids []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, id := range ids {
		if id == arg {
			return []string{id}
		}
		if id == "" || seen[id] {
			continue
		}
		if len(arg) >= minIDPrefix && strings.HasPrefix(id, arg) ||
			len(arg) >= minIDSuffix && strings.HasSuffix(id, arg) {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// errIDTooShort is the error for an id shorter than any form names.
func errIDTooShort(arg string) error {
	return fmt.Errorf("id %q is too short; give at least %d characters", Show(arg), minIDPrefix)
}

// Ambiguous says that arg names several ids (what: "pending requests").
func Ambiguous(arg string, what string, match []string) error {
	list := match
	more := ""
	if len(list) > 5 {
		list, more = list[:5], ", …"
	}
	return fmt.Errorf("%q matches %d %s (%s%s); give more of the id", Show(arg), len(match), what, strings.Join(list, ", "), more)
}

// ResolveID expands arg (a whole id, a prefix of 4+ characters or a
// suffix of 8+) to the id of a request in the spool. Pending requests
// are looked at first: a form that names one pending request names it,
// whatever else it matches. Otherwise the running and answered ones are:
// the command then says what became of the request. A whole id is
// returned as it is, pending or not, and so is a well-formed id that
// names nothing, so that the claim says what happened to it.
func ResolveID(sp *queue.Spool, arg string) (string, error) {
	if queue.ValidID(arg) && len(arg) >= idLen {
		return arg, nil
	}
	if len(arg) < minIDPrefix {
		return "", errIDTooShort(arg)
	}
	list, err := sp.List()
	if err != nil {
		return "", err
	}
	var pending, other []string
	for _, e := range list {
		if e.ID == arg {
			return arg, nil
		}
		if e.State == queue.StatePending {
			pending = append(pending, e.ID)
		} else {
			other = append(other, e.ID)
		}
	}
	switch m := MatchIDs(arg, pending); len(m) {
	case 1:
		return m[0], nil
	case 0:
	default:
		return "", Ambiguous(arg, "pending requests", m)
	}
	answered, err := answeredIDs(sp)
	if err != nil {
		return "", err
	}
	switch m := MatchIDs(arg, append(other, answered...)); len(m) {
	case 1:
		return m[0], nil
	case 0:
	default:
		return "", Ambiguous(arg, "requests, none of them pending", m)
	}
	if queue.ValidID(arg) {
		return arg, nil // let the claim say what became of it
	}
	return "", fmt.Errorf("no pending request matches %q; see 'sluice ls'", Show(arg))
}

// answeredIDs are the ids of the requests whose result is in out/.
func answeredIDs(sp *queue.Spool) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(sp.Dir(), "out"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var ids []string
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), ".json"); ok && queue.ValidID(id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// runEvents are the audit events that end a run which may have changed
// files (and an undo, which can be undone in turn).
var runEvents = []queue.EventName{queue.EventFinished, queue.EventTimeout, queue.EventKilled, queue.EventUndone}

// ResolveRunID expands arg (a whole id, a prefix of 4+ characters or a
// suffix of 8+) to the id of a run the audit log at logPath records as
// ended (or of an undo). A whole id is returned as it is.
func ResolveRunID(logPath, arg string) (string, error) {
	if queue.ValidID(arg) && len(arg) >= idLen {
		return arg, nil
	}
	if len(arg) < minIDPrefix {
		return "", errIDTooShort(arg)
	}
	f, err := os.Open(logPath)
	if err != nil {
		return "", fmt.Errorf("read the audit log: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	// Every run the log holds: a form is unique only if it is unique in
	// all of them.
	lines, _, err := audit.Last(f, fi.Size(), int(^uint(0)>>1), audit.Filter{Events: runEvents})
	if err != nil {
		return "", err
	}
	var ids []string
	for i := len(lines) - 1; i >= 0; i-- { // newest first
		if ev := lines[i].Event; ev != nil {
			ids = append(ids, ev.ID)
		}
	}
	switch m := MatchIDs(arg, ids); len(m) {
	case 0:
		return "", fmt.Errorf("no run %s in %s that changed files (see 'sluice audit tail')", Show(arg), logPath)
	case 1:
		return m[0], nil
	default:
		return "", Ambiguous(arg, "runs", m)
	}
}
