package hub

import (
	"encoding/json"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// Pending is what a box publishes for a request that waits for a person
// (bucket sluice-pending, key BOX.ID).
type Pending struct {
	Box      string          `json:"box"`
	ID       string          `json:"id"`
	Request  json.RawMessage `json:"request"` // the request as the box read it
	Verdict  *queue.Verdict  `json:"verdict,omitempty"`
	Digest   string          `json:"digest"` // SHA-256 of the request file, hex
	QueuedAt time.Time       `json:"queued_at"`
}

// Decision is what a console writes (bucket sluice-decisions, key BOX.ID):
// the first one for a key is the one that counts.
type Decision struct {
	Decision string    `json:"decision"` // approve or deny
	By       string    `json:"by"`       // person@console
	Reason   string    `json:"reason,omitempty"`
	Digest   string    `json:"digest"` // of the request as shown: a changed request is not run
	At       time.Time `json:"at"`
}

// The decisions.
const (
	Approve = "approve"
	Deny    = "deny"
)

// Outcome is what a box did with a decision (bucket sluice-results, key
// BOX.ID).
type Outcome struct {
	Status    queue.Status `json:"status"`
	Decision  string       `json:"decision,omitempty"` // the decision applied, if one was
	By        string       `json:"by,omitempty"`
	ExitCode  *int         `json:"exit_code,omitempty"`
	Reason    string       `json:"reason,omitempty"`
	Applied   bool         `json:"applied"` // false: the request had left before the decision came
	At        time.Time    `json:"at"`
	DecidedBy string       `json:"decided_by,omitempty"` // policy or human, from the box's result
}

// OutputSubject is where a box streams the output of a run it carries out
// for a decision (core NATS, best effort: the box's out/ID.log is the
// record).
func OutputSubject(box, id string) string { return "sluice.out." + box + "." + id }
