package hub

import (
	"strconv"
	"strings"

	"github.com/sluice-dev/sluice/hub/wire"
)

// The values in the hub's buckets and the feed's lines (package wire).
type (
	Pending     = wire.Pending
	Decision    = wire.Decision
	Outcome     = wire.Outcome
	FeedEvent   = wire.FeedEvent
	FeedCommand = wire.FeedCommand
)

// The decisions.
const (
	Approve = wire.Approve
	Deny    = wire.Deny
)

// The events of a feed.
const (
	FeedHub     = wire.FeedHub
	FeedPending = wire.FeedPending
	FeedGone    = wire.FeedGone
	FeedReady   = wire.FeedReady
	FeedOutcome = wire.FeedOutcome
	FeedOutput  = wire.FeedOutput
	FeedDecided = wire.FeedDecided
	FeedDropped = wire.FeedDropped
)

const maxDiff = wire.MaxDiff

// OutputSubject is where a box streams the output of a run it carries out
// for a decision (core NATS, best effort: the box's out/ID.log is the
// record): each piece on OutputSubject.OFFSET, OFFSET where the piece
// begins in the run's output (a box of an earlier version publishes on
// OutputSubject itself, without it).
func OutputSubject(box, id string) string { return "sluice.out." + box + "." + id }

// outputPieceSubject is where a box publishes the piece of a run's output
// that begins at offset off.
func outputPieceSubject(box, id string, off int64) string {
	return OutputSubject(box, id) + "." + strconv.FormatInt(off, 10)
}

// outputKey is the box, request id and, if it says, offset an output
// subject names.
func outputKey(subject string) (box, id string, off *int64, ok bool) {
	rest, found := strings.CutPrefix(subject, "sluice.out.")
	if !found {
		return "", "", nil, false
	}
	if key, num, found := strings.Cut(rest, "."); found {
		if id, num, found := strings.Cut(num, "."); found {
			n, err := strconv.ParseInt(num, 10, 64)
			if err != nil || n < 0 || n > maxOffset || strconv.FormatInt(n, 10) != num {
				return "", "", nil, false
			}
			off = &n
			rest = key + "." + id
		}
	}
	box, id, ok = SplitKey(rest)
	if !ok {
		return "", "", nil, false
	}
	return box, id, off, true
}

// maxOffset bounds the offset an output subject may name (a PiB: no run
// writes that much; the sums made from it cannot overflow).
const maxOffset = 1 << 50
