package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// ErrNoDecision says the log holds no decision for a request.
var ErrNoDecision = errors.New("audit: no decision recorded")

// decisionEvents are the events that decide a request.
var decisionEvents = []queue.EventName{queue.EventAutoAllowed, queue.EventApproved,
	queue.EventAutoDenied, queue.EventDenied}

// Decision returns the last decision (auto_allowed, approved,
// auto_denied, denied) the log at path holds for request id, reading
// backwards from the end no further than the first event before since
// (the request's creation, less a margin for clocks): a writer believes a
// result file only when the log the engine wrote holds the decision it
// reports (protocol section 6). ErrNoDecision when there is none.
//
// It looks at bytes, not decoded events: in a line of the log, the
// member "id":"ID" or "event":"NAME" cannot appear inside a string (its
// quotes would be escaped), and only the line it returns is decoded. A
// hook calls it once per allowed tool call, in a new process each time.
func Decision(path, id string, since time.Time) (*queue.Event, error) {
	_, raw, err := decision(path, id, since)
	if err != nil {
		return nil, err
	}
	return DecodeLine(raw)
}

// decision is Decision without decoding the line: the event's name (known
// from the bytes matched) and the raw line.
func decision(path, id string, since time.Time) (queue.EventName, []byte, error) {
	name, raw, err := last(path, id, since, decisionEvents)
	if errors.Is(err, errNoEvent) {
		err = ErrNoDecision
	}
	return name, raw, err
}

// errNoEvent: the log holds none of the events asked for.
var errNoEvent = errors.New("audit: no such event recorded")

// runEvents are the events of a run: its start, its ends, and a
// recovery's answer (recorded, its result perhaps not yet written).
var runEvents = []queue.EventName{queue.EventStarted, queue.EventFinished, queue.EventTimeout, queue.EventKilled,
	queue.EventInterrupted}

// LastRun returns the last of a request's run events (started,
// finished, timeout, killed, interrupted) the log at path holds, reading backwards no
// further than the request's creation (less a minute for clocks), or nil
// when there is none: what an engine recovering an orphaned claim
// answers from.
func LastRun(path string, req *queue.Request) (*queue.Event, error) {
	_, raw, err := last(path, req.ID, req.CreatedAt.Add(-time.Minute), runEvents)
	if errors.Is(err, errNoEvent) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return DecodeLine(raw)
}

// LastRun implements queue.RunLedger.
func (l *Log) LastRun(req *queue.Request) (*queue.Event, error) { return LastRun(l.path, req) }

// last is the last of events the log at path holds for request id, as
// its name and raw line, reading backwards no further than since.
func last(path, id string, since time.Time, events []queue.EventName) (queue.EventName, []byte, error) {
	if !queue.ValidID(id) {
		return "", nil, fmt.Errorf("audit: %q is not a request id", id)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", nil, fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", nil, fmt.Errorf("audit: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return "", nil, fmt.Errorf("audit: %s is not a regular file", path)
	}
	idMember := []byte(`"id":"` + id + `"`)
	// A writer looks as soon as it is answered: the line it wants is
	// among the last few (a decision, then a run's started and finished
	// lines), and the chunk doubles as it reads further back. A 4 KiB
	// first read, not 16: a hook's process pays for every page it
	// touches.
	b := newBackLines(f, fi.Size(), 4<<10)
	for {
		_, raw, _, err := b.prev()
		if err == io.EOF {
			return "", nil, errNoEvent
		}
		if err != nil {
			return "", nil, fmt.Errorf("audit: read log: %w", err)
		}
		if raw == nil { // over maxLine: not a line sluice wrote
			continue
		}
		if ts, ok := lineTime(raw); ok && ts.Before(since) {
			return "", nil, errNoEvent
		}
		if !bytes.Contains(raw, idMember) {
			continue
		}
		for _, name := range events {
			if bytes.Contains(raw, []byte(`"event":"`+string(name)+`"`)) {
				return name, bytes.Clone(raw), nil
			}
		}
	}
}

// lineTime is a line's "ts", which the log writes second, right after
// "seq": {"seq":N,"ts":"RFC3339",...}.
func lineTime(raw []byte) (time.Time, bool) {
	_, rest, ok := bytes.Cut(raw, []byte(`,"ts":"`))
	if !ok || len(rest) > 0 && bytes.IndexByte(raw[:len(raw)-len(rest)], '"') != 1 {
		return time.Time{}, false
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return time.Time{}, false
	}
	ts, err := time.Parse(time.RFC3339Nano, string(rest[:end]))
	return ts, err == nil
}

// CheckAllow says why the log at path does not back an allow that res
// reports for req (nil when it does): no decision recorded for the
// request, a denial recorded, or a command other than the one the
// person approved. A result file anyone able to write the spool could
// have made is not a decision; the engine records before it answers.
func CheckAllow(path string, req *queue.Request, res *queue.Result) error {
	if path == "" {
		return errors.New("the engine serving the spool did not say where its audit log is")
	}
	// The line is decoded only when a person edited the command: a
	// writer's first decode of an Event builds encoding/json's field
	// cache by reflection (~0.1 ms of every hook that was allowed).
	name, raw, err := decision(path, req.ID, req.CreatedAt.Add(-time.Minute))
	switch {
	case errors.Is(err, ErrNoDecision):
		return fmt.Errorf("the audit log %s holds no decision for request %s", path, req.ID)
	case err != nil:
		return fmt.Errorf("the audit log cannot be read: %w", err)
	case !json.Valid(raw):
		return fmt.Errorf("the audit log cannot be read: the decision's line for request %s is not JSON", req.ID)
	case name != queue.EventAutoAllowed && name != queue.EventApproved:
		return fmt.Errorf("the audit log says %s for request %s", name, req.ID)
	case res.Scope != "" && res.Scope != queue.ScopeOnce:
		// A wider allow than once must be the one the person gave.
		ev, err := DecodeLine(raw)
		if err != nil {
			return fmt.Errorf("the audit log cannot be read: %w", err)
		}
		if ev.Event != name || ev.Scope != res.Scope {
			return fmt.Errorf("the audit log does not hold an allow for this %s", res.Scope)
		}
	case res.Command != "" && res.Command != req.Command:
		ev, err := DecodeLine(raw)
		if err != nil {
			return fmt.Errorf("the audit log cannot be read: %w", err)
		}
		if ev.Event != name || ev.Command != res.Command {
			return errors.New("the audit log does not hold the edited command")
		}
	}
	return nil
}

// Verifier is the queue.Verifier of sluice's writers (the hooks, 'sluice
// run' and 'submit --wait', the MCP server): a result that says its
// request was allowed or ran is believed only when the audit log holds
// the decision (CheckAllow). It costs what CheckAllow does: a read back
// from the end of the log, once per allow.
type Verifier struct {
	// Path is the audit log; "" for the one the engine serving Spool
	// published (queue.Spool.AuditPath), read when the result comes.
	Path  string
	Spool *queue.Spool
}

var _ queue.Verifier = Verifier{}

// Verify is CheckAllow against v's audit log.
func (v Verifier) Verify(req *queue.Request, res *queue.Result) error {
	path := v.Path
	if path == "" && v.Spool != nil {
		path = v.Spool.AuditPath()
	}
	return CheckAllow(path, req, res)
}
