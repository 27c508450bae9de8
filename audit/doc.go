// Package audit keeps sluice's audit log: one JSON line per step of every
// request (queued, decided, started, finished, …), each line carrying the
// SHA-256 of the line before it, so that editing, removing, reordering or
// inserting a line breaks the chain where it was done.
//
// # The line format
//
// A line is the JSON encoding of a queue.Event, members in the order of the
// struct's fields, without HTML escaping (encoding/json with
// SetEscapeHTML(false)), on one line. Its first member is "seq" and its last
// two are "prev" and "hash". The canonical form of a line is the line
// without its newline and without its hash member: the bytes up to the
// `,"hash":"` that starts the member, followed by "}". That is exactly the
// JSON encoding of the event with no hash. hash is the SHA-256 of the
// canonical form, in lower-case hex; prev is the previous line's hash, and
// "" on the first line; seq counts lines from 1. Verify checks the bytes of
// each line, never a re-encoding, so fields added by a later version of
// sluice are covered by the hash without this package knowing them.
//
// # Appends
//
// Log.Append holds an exclusive flock on the log file while it reads the
// last line (from the end of the file: an append never reads the whole
// log) and writes its own, and fsyncs the line before it returns, so any
// number of processes may append and a caller acts on a decision only
// after its line is durable. A crash in the middle of an append leaves a
// torn line: the next append writes a newline if one is missing, then an
// audit_repaired event naming the torn bytes (offset, length, SHA-256),
// then its own line. The torn bytes stay where they are.
//
// # What the package refuses to do
//
// It never rewrites, truncates or deletes a byte of a log: repairs are
// appended, and a torn line is kept as evidence. It never interprets what an
// event holds: commands and paths are data, and Last and Follower hand them
// back as they are, for the caller to escape (queue.Printable) before a
// terminal sees them. It refuses to append to a log that others may write
// to, and to a file whose end is more than a crash could leave (ErrNotLog).
// A hash chain cannot tell a log cut short at a line boundary from a log
// that simply ended there, nor stop someone who rewrites every line after
// an edit: Verify reports the head hash so a person can note it elsewhere
// and check the log against it later.
package audit
