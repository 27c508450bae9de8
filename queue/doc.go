// Package queue implements the sluice spool: a Maildir-style directory
// through which agents hand requests to whoever acts on them, and through
// which the answers come back.
//
// It owns the nouns every other package speaks (Request, Result, Verdict,
// Event), the protocol steps (Submit, Watch, Claim, Finish, Recover,
// quarantine), and the Engine: the one path every request takes, whoever
// drives it (serve, approve, the console). Every step that changes the
// spool is a single rename or link, so that any number of sluice processes
// may watch one spool and each request is still acted on exactly once and
// answered exactly once.
//
// The package never runs a command, never judges one and never writes the
// audit log itself: the Engine calls a Judge (package policy), a Runner
// (package exec) and a Recorder (package audit), and acts on a request only
// after its Recorder has made the step durable.
package queue
