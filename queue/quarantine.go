package queue

import (
	"fmt"
	"os"
	"strings"
)

// stemOf returns the id a file name in new/ claims, or "" if the name is not
// <id>.json.
func stemOf(name string) string {
	if id, ok := strings.CutSuffix(name, ".json"); ok && ValidID(id) {
		return id
	}
	return ""
}

// quarantine moves new/<name> to bad/ with a one-line reason beside it and,
// when the name carries an id, answers that id invalid so its writer is not
// left waiting. f, when not nil, is the locked open file; it guards against
// moving a file that was replaced meanwhile. It returns the *InvalidError.
func (s *Spool) quarantine(name string, f *os.File, reason string) error {
	id := stemOf(name)
	if s.moveToBad(name, f, reason) && id != "" && !exists(s.ResultPath(id)) {
		// The file is in bad/ already and cannot be taken back, so the
		// writer is answered even if the audit line could not be written:
		// a refused request must not leave its writer waiting.
		_ = s.note(EventInvalid, &Request{ID: id}, StatusInvalid, reason)
		// A result may exist by now (a duplicate id): the first one stands.
		_ = s.writeResult(Result{ID: id, Status: StatusInvalid, Decision: Deny, DecidedBy: ByPolicy, Reason: reason})
	}
	return &InvalidError{Reason: reason}
}

// quarantineDup moves aside a request whose id is already in use. It writes
// no result: the result slot belongs to the first request with that id.
func (s *Spool) quarantineDup(name string, f *os.File, reason string) error {
	s.moveToBad(name, f, "duplicate id: "+reason)
	return fmt.Errorf("%w: %s (%s)", ErrExists, stemOf(name), reason)
}

// moveToBad renames new/<name> into bad/ under a name that replaces nothing,
// and writes the reason to the .why file beside it. It reports whether this
// process moved the file (another one may have been first).
func (s *Spool) moveToBad(name string, f *os.File, reason string) bool {
	src := s.path(dirNew, name)
	if f != nil && !SameFile(f, src) {
		return false
	}
	base := stemOf(name)
	if base == "" {
		// The name is not an id: it may hold anything, so it is not reused.
		base = "unnamed-" + NewID()
		reason = fmt.Sprintf("file name %q is not <id>.json: %s", name, reason)
	}
	dst := s.path(dirBad, base+".json")
	if exists(dst) || exists(s.path(dirBad, base+".why")) {
		base += "." + NewID()
		dst = s.path(dirBad, base+".json")
	}
	if err := os.Rename(src, dst); err != nil {
		return false
	}
	// The file is aside already; failing to write the .why loses only the
	// reason, which the invalid result also carries.
	_ = s.linkNew(dirBad, "."+base+".*.tmp", s.path(dirBad, base+".why"), []byte(oneLine(reason)+"\n"))
	return true
}

// oneLine makes reason safe for a one-line .why file.
func oneLine(reason string) string {
	return strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(reason)
}

// note records a result the spool writes on its own, if it has a
// Recorder.
func (s *Spool) note(name EventName, req *Request, status Status, reason string) error {
	if s.Recorder == nil {
		return nil
	}
	ev := NewEvent(name, req)
	ev.Actor, ev.Status, ev.Reason, ev.Spool = string(ByPolicy), status, reason, s.dir
	if err := s.Recorder.Record(ev); err != nil {
		return fmt.Errorf("queue: audit %s %s: %w", name, req.ID, err)
	}
	return nil
}
