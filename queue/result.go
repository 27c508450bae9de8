package queue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Status is how a request ended.
type Status string

// The result statuses of protocol section 3.
const (
	StatusDone        Status = "done"        // ran; any exit code
	StatusDenied      Status = "denied"      // refused by the policy or a person
	StatusTimeout     Status = "timeout"     // killed at its timeout
	StatusKilled      Status = "killed"      // stopped by a person
	StatusExpired     Status = "expired"     // not decided before expires_at
	StatusInterrupted Status = "interrupted" // its actor died before it started it
	// StatusStopped: its actor died while the command ran (the audit log
	// holds its start, not its end): it started and was stopped part way.
	StatusStopped Status = "stopped"
	StatusInvalid Status = "invalid" // the request file was refused
	StatusFailed  Status = "failed"  // could not start
	StatusDecided Status = "decided" // decide mode: only the decision
)

// Decision is allow or deny.
type Decision string

// The decisions of protocol section 3.
const (
	Allow Decision = "allow"
	Deny  Decision = "deny"
)

// Decider says who made a decision.
type Decider string

// The deciders of protocol section 3.
const (
	ByPolicy Decider = "policy"
	ByHuman  Decider = "human"
)

// Action is what the policy says to do with a request.
type Action string

// The policy's actions (protocol section 4).
const (
	ActionAllow Action = "allow" // carried out without asking
	// ActionAllowWithCheckpoint: carried out without asking, confined,
	// with the project checkpointed first, so a person can undo it.
	ActionAllowWithCheckpoint Action = "allow_with_checkpoint"
	ActionAsk                 Action = "ask"  // a person decides
	ActionDeny                Action = "deny" // refused without asking
)

// Allows reports whether the action lets a request run without a person.
func (a Action) Allows() bool { return a == ActionAllow || a == ActionAllowWithCheckpoint }

// Decides reports whether the action settles a request without a person.
func (a Action) Decides() bool { return a.Allows() || a == ActionDeny }

// Verdict is the policy's judgement of a request: the one shape every
// package passes around, worked out once per request.
type Verdict struct {
	Action   Action   `json:"action"`
	Category string   `json:"category"`
	Risk     string   `json:"risk"`
	Reasons  []string `json:"reasons,omitempty"`
	// Profile is the confinement a run of the request gets: read_only,
	// mutating or networked (the sandbox's profiles).
	Profile string `json:"profile,omitempty"`
	// Grants are the paths outside the project the command writes that
	// a person may allow (policy.Verdict.Grants): a run a person
	// approved may write them, that run only.
	Grants []string `json:"grants,omitempty"`
	// Hosts are the hosts a networked run of the request may reach
	// without asking, as rules of the run's proxy (netproxy.ParseRule:
	// a name, *.domain, host:port, an address or a CIDR range): what
	// its commands reach by themselves and the person's network_allow,
	// less what network_deny refuses whole. HostsBy says why each is
	// allowed ("knowledge: npm", "config: ~/.npmrc registry", "git
	// remote origin", "the line: curl URL", "config: network_allow",
	// "rule: network_allow in FILE:LINE"), for the proxy's records.
	Hosts   []string          `json:"hosts,omitempty"`
	HostsBy map[string]string `json:"-"`
	// HostsDenied are the person's network_deny rules (same syntax): the
	// run's proxy refuses them whatever admits them, and asks nobody
	// about them. HostsDeniedBy says where each comes from.
	HostsDenied   []string          `json:"-"`
	HostsDeniedBy map[string]string `json:"-"`
	// Parts are the simple commands (or paths) the verdict was made
	// from, each with its own reading, for a person to see; not part of
	// the result file.
	Parts []Part `json:"-"`
}

// Part is one simple command's (or path's) reading inside a verdict.
type Part struct {
	Command  string // the words, as parsed
	Category string
	Action   Action
	Rule     string // the policy rule that decided it, if any
}

// Result is one result file, out/<id>.json.
type Result struct {
	Version   int      `json:"version"`
	ID        string   `json:"id"`
	Status    Status   `json:"status"`
	Decision  Decision `json:"decision,omitempty"`
	DecidedBy Decider  `json:"decided_by,omitempty"`
	Reason    string   `json:"reason,omitempty"`
	// Command is the command that ran when a person edited the request's
	// before approving it; empty when it ran as asked.
	Command     string   `json:"command,omitempty"`
	Verdict     *Verdict `json:"verdict,omitempty"`
	ExitCode    *int     `json:"exit_code,omitempty"`
	DurationMS  int64    `json:"duration_ms,omitempty"`
	OutputTail  string   `json:"output_tail,omitempty"`
	OutputBytes int64    `json:"output_bytes,omitempty"`
	Log         string   `json:"log,omitempty"`
	// Sandbox is how the command ran: its confinement profile
	// (read_only, mutating, networked), "unconfined" when a person chose
	// that, or "none: WHY" when confinement was unavailable or off.
	Sandbox    string    `json:"sandbox,omitempty"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// ChangedFiles are the files the run created, changed or deleted
	// under its project's roots, from the checkpoints taken before and
	// after it (mutating runs only).
	ChangedFiles []FileChange `json:"changed_files,omitempty"`
	// Checkpoint says where the checkpoints are, for 'sluice undo'.
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
	// Network lists the hosts a networked run contacted, or tried to,
	// through its proxy: one entry per host, port and what allowed it.
	Network []Contact `json:"network,omitempty"`
	// Scope is how far a person's allow of a connect request reaches:
	// ScopeOnce or ScopeRun.
	Scope Scope `json:"scope,omitempty"`
}

// Contact is one host and port a networked run contacted or tried to
// (Result.Network; package netproxy fills them in).
type Contact struct {
	// Host is the name the run asked for, or the IP literal it gave.
	Host string `json:"host"`
	Port int    `json:"port"`
	// Sent and Received count the bytes each way.
	Sent     int64 `json:"sent"`
	Received int64 `json:"received"`
	// AllowedBy says what let it through: a rule's origin ("verdict",
	// "network_allow"), "asked-once" or "asked-run"; or "refused: " and
	// why.
	AllowedBy string `json:"allowed_by"`
}

// Scope is how far an allow of a connect request reaches.
type Scope string

// The scopes of a connect request's allow.
const (
	// ScopeOnce admits the connections waiting on the question; the
	// next one asks again.
	ScopeOnce Scope = "once"
	// ScopeRun admits the host and port for the rest of the run.
	ScopeRun Scope = "run"
)

// FileChange is one file a run created, changed or deleted.
type FileChange struct {
	Path   string `json:"path"`   // absolute
	Change string `json:"change"` // created, changed or deleted
}

// Checkpoint names the snapshots taken around a run: one per root, as
// refs ID/pre and ID/post in each root's shadow repository; Error says
// why there are none (or not all).
type Checkpoint struct {
	Roots []string `json:"roots,omitempty"`
	Error string   `json:"error,omitempty"`
	// Overlapped names the runs that ran in the same project at the
	// same time as this one (a person let one go ahead while the other
	// ran): its changed files may include theirs, and undo asks before it
	// restores a file one of them changed too.
	Overlapped []string `json:"overlapped,omitempty"`
}

// Ran reports whether the command was started (so ExitCode, Log and the
// output fields mean something).
func (r *Result) Ran() bool {
	switch r.Status {
	case StatusDone, StatusTimeout, StatusKilled, StatusStopped:
		return true
	}
	return false
}

// ClaimsAllow reports whether the result says its request was allowed or
// ran: what a writer believes only once its Verifier backs it.
func (r *Result) ClaimsAllow() bool { return r.Decision == Allow || r.Ran() }

// DecodeResult parses result bytes. Results are written by sluice itself,
// but a spool is writable by every process of the user, so the bytes are
// still checked.
func DecodeResult(data []byte) (*Result, error) {
	r, ok := decodeResultFast(data)
	if !ok {
		r = &Result{}
		dec := json.NewDecoder(bytes.NewReader(data))
		if err := dec.Decode(r); err != nil {
			return nil, fmt.Errorf("queue: decode result: %w", err)
		}
	}
	if r.Version != Version {
		return nil, fmt.Errorf("queue: result version %d, want %d", r.Version, Version)
	}
	if !ValidID(r.ID) || r.Status == "" {
		return nil, fmt.Errorf("queue: result without a valid id and status")
	}
	return r, nil
}
