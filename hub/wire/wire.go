// Package wire holds what travels between sluice's boxes, hub and
// consoles (docs/protocol.md, the hub): the values in the hub's buckets,
// and the lines of 'sluice hub feed', which 'sluice console --hub' reads.
// It imports no NATS, so that the sluice binary can use it.
package wire

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
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
	// Diff is what a file request would change, against the file as it
	// was when the box published it (a box applies an approval only while
	// that is still so); DiffErr says why there is none.
	Diff    string `json:"diff,omitempty"`
	DiffErr string `json:"diff_error,omitempty"`
}

// MaxDiff bounds the diff a box publishes: a larger one is left out, and
// the request is decided on the box itself.
const MaxDiff = 256 << 10

// Decision is what the hub's decision service records for a console
// (bucket sluice-decided, key BOX.ID): the first one for a key is the one
// that counts.
type Decision struct {
	Decision string `json:"decision"` // approve or deny
	// By is who decided: AS@CONSOLE, CONSOLE the name of the credentials
	// the decision came with (the hub's word, never the console's), AS
	// the person (or device) the console named.
	By     string `json:"by"`
	Reason string `json:"reason,omitempty"`
	Digest string `json:"digest"` // of the request as shown: a changed request is not run
	// DiffDigest is DiffDigest of the diff shown with a file request: a
	// box applies the change only while the file would still change so.
	DiffDigest string    `json:"diff_digest,omitempty"`
	At         time.Time `json:"at"`
	// Scope is ScopeRun when a person allowed a connect request for the
	// rest of its run; absent, the allow is for the connections waiting
	// on the question (what a box of an earlier version does with any).
	Scope string `json:"scope,omitempty"`
}

// ScopeRun is a connect request's allow for the rest of the asking run
// (queue.ScopeRun), in a decision and the messages that carry it.
const ScopeRun = string(queue.ScopeRun)

// ScopeOf is how a decision carries scope: ScopeRun, or "" for once (and
// for requests of other kinds).
func ScopeOf(scope queue.Scope) string {
	if scope == queue.ScopeRun {
		return ScopeRun
	}
	return ""
}

// DecideRequest is what a console sends the hub's decision service, on its
// own subject (sluice.decide.CONSOLE), to decide a request. It carries no
// "by": the service takes the console from the subject, and As names who
// decided under it.
type DecideRequest struct {
	Box      string `json:"box"`
	ID       string `json:"id"`
	Decision string `json:"decision"` // approve or deny
	// As is the person (or device) deciding at the console: see ValidAs.
	// The decision is recorded by AS@CONSOLE (by CONSOLE when empty).
	As     string `json:"as,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Digest is the request's as shown (at least 8 hex digits; required
	// to approve): a request that is not that one any more is refused.
	Digest string `json:"digest,omitempty"`
	// DiffDigest is DiffDigest of the diff shown with it (when not
	// empty, a diff that changed since is refused).
	DiffDigest string `json:"diff_digest,omitempty"`
	// Scope is ScopeRun to allow a connect request for the rest of its
	// run; absent or "once": once. Only on an approval of a connect
	// request.
	Scope string `json:"scope,omitempty"`
}

// DecideReply is the decision service's answer: the decision as recorded,
// or why there is none (Code says which, for a program to branch on).
type DecideReply struct {
	// Decision is the one recorded, or with Code "decided" the one that
	// stands (another console was first).
	Decision *Decision `json:"decision,omitempty"`
	Code     string    `json:"code,omitempty"`
	Error    string    `json:"error,omitempty"`
}

// The decision service's refusals (DecideReply.Code).
const (
	CodeDecided    = "decided"     // another decision was first
	CodeNotPending = "not_pending" // no such request waits on the hub
	CodeChanged    = "changed"     // the request (or its diff) is not the one shown
	CodeRefused    = "refused"     // not a decision this console may make
)

// MaxAs bounds DecideRequest.As.
const MaxAs = 64

// ValidAs reports whether as can name who decides under a console: at
// most MaxAs letters, digits, spaces and ._-+()/:, (no '@': the hub puts
// the console's name after the only one).
func ValidAs(as string) bool {
	if len(as) > MaxAs {
		return false
	}
	for i := 0; i < len(as); i++ {
		if !asByte(as[i]) {
			return false
		}
	}
	return true
}

func asByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return c == ' ' || c == '.' || c == '_' || c == '-' || c == '+' || c == '(' || c == ')' || c == '/' || c == ':' || c == ','
}

// AsName is s made a valid As: other bytes become '_', and it is cut to
// MaxAs (a login name with characters As does not take still decides).
func AsName(s string) string {
	b := []byte(s)
	if len(b) > MaxAs {
		b = b[:MaxAs]
	}
	for i, c := range b {
		if !asByte(c) {
			b[i] = '_'
		}
	}
	return string(b)
}

// Dropped is what the hub's service says (subject sluice.dropped) when it
// takes a request off the pending bucket that no box withdrew: it waited
// longer than the hub keeps one, or its box has more waiting than the hub
// holds for one box. The request still waits on its box.
type Dropped struct {
	Box    string    `json:"box"`
	ID     string    `json:"id"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// DiffDigest is what stands for a published diff (or the reason there is
// none) in a decision: SHA-256 hex of diff, a NUL, and diffErr.
func DiffDigest(diff, diffErr string) string {
	h := sha256.New()
	h.Write([]byte(diff))
	h.Write([]byte{0})
	h.Write([]byte(diffErr))
	return hex.EncodeToString(h.Sum(nil))
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
	// DurationMS is how long the run took, from the box's result.
	DurationMS int64 `json:"duration_ms,omitempty"`
	// OutputBytes is how much output the box published for the run (its
	// pieces' offsets count from 0): a console that got less lost the
	// rest (the hub was down).
	OutputBytes int64 `json:"output_bytes,omitempty"`
	// Request and Verdict are the request's as published, for a console's
	// History (absent when the box's bridge restarted in between).
	Request json.RawMessage `json:"request,omitempty"`
	Verdict *queue.Verdict  `json:"verdict,omitempty"`
	// Scope is a connect request's allow's reach as the box's result
	// has it (once or run; absent from a box of an earlier version).
	Scope queue.Scope `json:"scope,omitempty"`
}

// FeedEvent is one line 'sluice hub feed' writes: what a console over the
// hub shows, as it happens.
type FeedEvent struct {
	Ev        string   `json:"ev"`
	Box       string   `json:"box,omitempty"`
	ID        string   `json:"id,omitempty"`
	Pending   *Pending `json:"pending,omitempty"`
	Outcome   *Outcome `json:"outcome,omitempty"`
	Data      []byte   `json:"data,omitempty"`
	Seq       int64    `json:"seq,omitempty"`
	Error     string   `json:"error,omitempty"`
	Connected bool     `json:"connected,omitempty"`
	Text      string   `json:"text,omitempty"`
	Offset    *int64   `json:"offset,omitempty"` // where Data begins in the run's output, when the box says
}

// The events of a feed.
const (
	FeedHub     = "hub"     // the link: Connected, and Text (the hub's address, or why it is down)
	FeedPending = "pending" // Pending waits for a person (again, with another digest, if its file changed)
	FeedGone    = "gone"    // Box's request ID waits no more
	FeedReady   = "ready"   // every request that waits on the hub has been sent (at the start, and after each reconnection)
	FeedOutcome = "outcome" // what Box did with its request ID (History)
	FeedOutput  = "output"  // Data: output of Box's run of ID, in order
	FeedDecided = "decided" // the answer to command Seq: Error is empty once the hub holds the decision
	FeedDropped = "dropped" // the hub took Box's request ID off its queue (Text: why); it waits on the box
)

// FeedCommand is one line a console writes to the feed: a person's
// decision.
type FeedCommand struct {
	Seq    int64  `json:"seq"`
	Op     string `json:"op"` // approve or deny
	Box    string `json:"box"`
	ID     string `json:"id"`
	Digest string `json:"digest"` // of the request as the person saw it; required to approve
	// DiffDigest is DiffDigest of the diff the person saw (file
	// requests; required to approve one).
	DiffDigest string `json:"diff_digest,omitempty"`
	Reason     string `json:"reason,omitempty"`
	// Scope is ScopeRun to allow a connect request for the rest of its
	// run; absent: once.
	Scope string `json:"scope,omitempty"`
}

// OutputTrack follows a run's output as its pieces arrive, by the offsets
// they carry: what the hub could not carry (a hub that was down loses what
// a box published meanwhile) is shown as a marked line saying how much, not
// left out as if nothing was written; a piece that arrives twice is shown
// once.
type OutputTrack struct {
	next int64 // the offset of the next byte to show
	mid  bool  // the last byte shown did not end a line
}

// Piece is what to show of data, a piece at offset off (nil: the box did
// not say): the bytes not shown yet, after a line for any lost before them.
func (t *OutputTrack) Piece(off *int64, data []byte) []byte {
	var out []byte
	if off != nil && *off >= 0 {
		switch {
		case *off > t.next:
			out = t.lost(*off - t.next)
			t.next = *off
		case *off < t.next:
			skip := t.next - *off
			if skip >= int64(len(data)) {
				return out
			}
			data = data[skip:]
		}
	}
	if len(data) > 0 {
		out = append(out, data...)
		t.next += int64(len(data))
		t.mid = data[len(data)-1] != '\n'
	}
	return out
}

// End is the line for what was lost at the end of a run that published
// total bytes (nil: none was, or the box did not say).
func (t *OutputTrack) End(total int64) []byte {
	if total <= t.next {
		return nil
	}
	out := t.lost(total - t.next)
	t.next = total
	return out
}

// lost is the line that stands for n bytes lost.
func (t *OutputTrack) lost(n int64) []byte {
	line := ""
	if t.mid {
		line = "\r\n"
	}
	t.mid = false
	return []byte(line + LostLine(n) + "\r\n")
}

// LostLine says that n bytes of a run's output did not reach this console.
func LostLine(n int64) string {
	return fmt.Sprintf("⟨%d bytes lost while the hub was down⟩", n)
}

// ValidName reports whether name can name a box or a console: 1 to 32
// lower-case letters, digits and '-', starting with a letter or digit. It
// is a NATS subject token and a key part, so nothing else is admitted.
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > 32 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0:
		default:
			return false
		}
	}
	return true
}

// ErrLineTooLong says a feed line was over the limit; it was read to its
// end, so the next line can be read.
var ErrLineTooLong = errors.New("line too long")

// ReadLine reads one line of the feed (an event or a command) of at most
// max bytes; a longer one is read to its end and reported as
// ErrLineTooLong. Its values come from boxes: one line must not end the
// feed.
func ReadLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		part, err := r.ReadSlice('\n')
		if len(line)+len(part) <= max+1 {
			line = append(line, part...)
		} else {
			line = line[:0:0]
			max = -1
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil && len(line) == 0:
			return nil, err
		case max < 0:
			return nil, ErrLineTooLong
		}
		return line, nil
	}
}
