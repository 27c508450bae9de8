package web

import (
	"context"
	"errors"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// Source is where the page's queue comes from and where its decisions go:
// Spool for one box; Hub for every box of a fleet, decided through the
// hub. Implementations are safe for concurrent use.
type Source interface {
	// Queue returns the requests waiting and running now, oldest first.
	Queue() []Item
	// Item returns one request as it is now, with its diff for a file
	// request. Returns ErrGone when it is neither pending nor running.
	Item(id string) (*Item, error)
	// History returns the latest decisions and outcomes, newest first.
	History() []Past
	// Changed returns a channel that is closed at the next change of
	// Queue or History.
	Changed() <-chan struct{}
	// Output returns a run's output from offset on (at most max bytes),
	// the offset after it, and whether the run has ended and everything
	// it wrote was returned.
	Output(id string, offset int64, max int) (data []byte, next int64, done bool, err error)
	// Approve claims request id for by and has it carried out, if its
	// file still has digest (and a file request's diff diffDigest, the
	// SHA-256 of diff NUL error, "" without one, where the source can
	// tell). scope is how far the allow of a connect request reaches
	// (queue.ScopeOnce or queue.ScopeRun; other kinds ignore it). It returns once the request is claimed (the run
	// goes on), or with why it was not: ErrChanged when the file is not
	// the one with digest, another error (already decided...) else.
	Approve(ctx context.Context, id, digest, diffDigest, by string, scope queue.Scope) error
	// Deny answers request id denied with reason, recorded as by's.
	Deny(ctx context.Context, id, by, reason string) error
	// Winner says who decided request id and how, once the audit log has
	// it: ("approved"|"denied"|"auto_allowed"|..., actor).
	Winner(id string) (event, actor string, ok bool)
	// Result is how request id ended; queue.ErrNoResult while it has not.
	Result(id string) (*queue.Result, error)
}

// Errors a Source returns that the page words itself.
var (
	ErrGone    = errors.New("web: the request is no longer waiting")
	ErrChanged = errors.New("web: the request changed after it was shown; it was refused")
)

// Item is one request in the queue.
type Item struct {
	ID      string
	Box     string // "" on one box
	State   queue.State
	Since   time.Time
	Request *queue.Request // nil for a bad file
	Err     string         // why, for a bad file
	Verdict *queue.Verdict // as the engine recorded it (the queued line), nil until it has
	Digest  string         // of the request file as read
	Diff    string         // a file request's diff now (Item only)
	DiffErr string         // why there is none (Item only)
}

// Past is one request in History: its decision and, once it ended, its
// outcome.
type Past struct {
	ID       string
	Box      string
	Kind     queue.Kind
	What     string // command, path or tool
	Agent    string
	Decision queue.EventName // approved, denied, auto_allowed, auto_denied, expired...
	By       string
	Reason   string
	Status   queue.Status
	ExitCode *int
	At       time.Time
}
