// Package queue implements the sluice spool: a Maildir-style directory
// through which agents hand requests to whoever acts on them, and through
// which the answers come back.
//
// It owns the nouns every other package speaks (Request, Result, Verdict)
// and the protocol steps: Submit, Watch, Claim, Finish, Recover and
// quarantine. Every step that changes the spool is a single rename or link,
// so that any number of sluice processes may watch one spool and each
// request is still acted on exactly once and answered exactly once.
//
// The package never runs a command and never judges one; that is the work
// of the exec and policy packages, called by whoever holds a Claim.
package queue
