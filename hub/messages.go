package hub

import "github.com/sluice-dev/sluice/hub/wire"

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
)

const maxDiff = wire.MaxDiff

// OutputSubject is where a box streams the output of a run it carries out
// for a decision (core NATS, best effort: the box's out/ID.log is the
// record).
func OutputSubject(box, id string) string { return "sluice.out." + box + "." + id }
