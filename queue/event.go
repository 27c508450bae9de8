package queue

import "time"

// EventName names one step in a request's life, as the audit log records
// it (protocol section 6).
type EventName string

// The events of protocol section 6, and the log's own repair note.
const (
	EventQueued      EventName = "queued"       // a request reached new/
	EventAutoAllowed EventName = "auto_allowed" // the policy allowed it alone
	EventAutoDenied  EventName = "auto_denied"  // the policy denied it alone
	EventApproved    EventName = "approved"     // a person allowed it
	EventDenied      EventName = "denied"       // a person denied it
	EventStarted     EventName = "started"      // the command was started
	EventFinished    EventName = "finished"     // the command exited (any code)
	EventTimeout     EventName = "timeout"      // the command was killed at its timeout
	EventKilled      EventName = "killed"       // a person stopped the command
	EventExpired     EventName = "expired"      // not decided before expires_at
	EventInterrupted EventName = "interrupted"  // its actor died while acting on it
	EventInvalid     EventName = "invalid"      // the request file was refused
	// EventUndone: a person restored the files a run (or an undo)
	// changed to its checkpoint; its id is the undo's own, Reason names
	// what was undone, ChangedFiles what the undo changed.
	EventUndone EventName = "undone"
	// EventTrusted: a person trusted a command pattern for one agent
	// session for a while (id: the trust's own; command: the pattern;
	// reason: for how long); EventTrustEnded: it expired or was revoked.
	EventTrusted    EventName = "trusted"
	EventTrustEnded EventName = "trust_ended"

	// EventAuditRepaired is written by the log itself, not by the engine:
	// the bytes named in Torn were a line cut short (a crash mid-append)
	// and are skipped by the chain; nothing before them was touched.
	EventAuditRepaired EventName = "audit_repaired"

	// The web approver's (sluice web): a device paired, a device revoked,
	// a device's passkey added. The id is the device's, the actor the
	// person who made the code or revoked it.
	EventWebPaired  EventName = "web_paired"
	EventWebRevoked EventName = "web_revoked"
	EventWebPasskey EventName = "web_passkey_added"
)

// EventNames lists every event name, in the order of a request's life.
func EventNames() []EventName {
	return []EventName{EventQueued, EventAutoAllowed, EventAutoDenied, EventApproved,
		EventDenied, EventStarted, EventFinished, EventTimeout, EventKilled, EventExpired,
		EventInterrupted, EventInvalid, EventUndone, EventTrusted, EventTrustEnded, EventAuditRepaired,
		EventWebPaired, EventWebRevoked, EventWebPasskey}
}

// Event is one line of the audit log. The field order is the order of the
// JSON members in the line, and is part of the log format: Seq comes first
// and Prev and Hash last. The log fills in Seq, TS, Prev and Hash; the
// caller fills in the rest.
type Event struct {
	Seq   int64     `json:"seq"`          // 1 for the first line, then +1 per line
	TS    time.Time `json:"ts"`           // when the line was written, UTC
	ID    string    `json:"id,omitempty"` // the request id
	Event EventName `json:"event"`
	Actor string    `json:"actor,omitempty"` // "policy" or a person's login name
	Agent string    `json:"agent,omitempty"` // the agent that asked, as it named itself

	Kind    Kind   `json:"kind,omitempty"`
	Command string `json:"command,omitempty"` // exec: the command line, as data
	// EditedFrom is the command the agent asked for, when a person edited
	// it before approving (Command is then what ran).
	EditedFrom string `json:"edited_from,omitempty"`
	Path       string `json:"path,omitempty"` // write, edit: the file
	Tool       string `json:"tool,omitempty"` // tool: the tool's name
	// Host is what a connect request asks to reach (host:port), RunID
	// the run that asks.
	Host  string `json:"host,omitempty"`
	RunID string `json:"run_id,omitempty"`
	Cwd   string `json:"cwd,omitempty"`
	// Spool is the spool the request came through (its directory): one
	// audit log may serve several spools, and a console shows its own.
	Spool string `json:"spool,omitempty"`

	Verdict      *Verdict `json:"verdict,omitempty"`
	Status       Status   `json:"status,omitempty"` // the result status, once there is one
	Reason       string   `json:"reason,omitempty"`
	ExitCode     *int     `json:"exit_code,omitempty"`
	DurationMS   int64    `json:"duration_ms,omitempty"`
	OutputSHA256 string   `json:"output_sha256,omitempty"` // of the whole output log, hex
	// Sandbox is the run's confinement (Result.Sandbox); on approved,
	// "unconfined" when a person chose to run it without.
	Sandbox string `json:"sandbox,omitempty"`
	// ChangedFiles and Checkpoint are the run's (Result's), on finished,
	// timeout and killed.
	ChangedFiles []FileChange `json:"changed_files,omitempty"`
	Checkpoint   *Checkpoint  `json:"checkpoint,omitempty"`
	// Network is the run's contacts (Result.Network), on finished,
	// timeout and killed.
	Network []Contact `json:"network,omitempty"`
	// Scope is a connect request's allow's reach (Result.Scope), on
	// approved.
	Scope Scope `json:"scope,omitempty"`

	// Torn is set on EventAuditRepaired only: the bytes it skips.
	Torn *TornSpan `json:"torn,omitempty"`

	Prev string `json:"prev"`           // Hash of the line before; "" on the first line
	Hash string `json:"hash,omitempty"` // SHA-256, hex, of this line without its hash member
}

// TornSpan names bytes of the audit log that are not a complete event: what
// a crash in the middle of an append leaves behind.
type TornSpan struct {
	Offset int64  `json:"offset"` // where the bytes start in the file
	Bytes  int64  `json:"bytes"`  // how many, up to the repair line that follows them
	SHA256 string `json:"sha256"` // of exactly those bytes, hex
}

// NewEvent returns the event name for request r with the fields the request
// supplies: id, agent, kind, the command (exec), path (write, edit) or tool
// name (tool), and cwd. r may be nil.
func NewEvent(name EventName, r *Request) Event {
	ev := Event{Event: name}
	if r == nil {
		return ev
	}
	ev.ID, ev.Agent, ev.Kind, ev.Cwd = r.ID, r.Agent, r.Kind, r.Cwd
	switch r.Kind {
	case KindExec:
		ev.Command = r.Command
	case KindWrite, KindEdit:
		ev.Path = r.Path
	case KindTool:
		ev.Tool = r.Tool
	case KindConnect:
		// The run's command, for reading: nothing runs it.
		ev.Command, ev.Host, ev.RunID = r.Command, r.Target(), r.RunID
	}
	return ev
}

// Recorder records the steps of requests' lives; the audit package's Log
// is the one sluice uses.
type Recorder interface {
	// Record appends ev and returns only once it is durable: written and
	// synced to stable storage, so that a crash right after Record returns
	// cannot lose it. Callers act on the step ev records only after Record
	// returned nil; an error means ev may not have been recorded, and the
	// step must not happen. Record fills in Seq, TS, Prev and Hash itself,
	// ignoring what ev holds there. It is safe for concurrent use, by
	// goroutines and by processes sharing the record.
	Record(ev Event) error
}

// BatchRecorder is a Recorder that can make several events durable at
// once (one sync): the engine uses it for steps that follow each other
// with nothing happening between them.
type BatchRecorder interface {
	Recorder
	// RecordAll appends evs in order; all are durable when it returns nil,
	// and on an error none of the steps they record may happen.
	RecordAll(evs []Event) error
}
