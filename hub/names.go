package hub

import (
	"fmt"
	"strings"

	"github.com/sluice-dev/sluice/hub/wire"
	"github.com/sluice-dev/sluice/queue"
)

// The buckets. Decisions are in sluice-decided, which only the hub's
// decision service writes; sluice-decisions, which consoles wrote
// themselves before, is retired (bucketRetired).
const (
	BucketPending   = "sluice-pending"
	BucketDecisions = "sluice-decided"
	BucketResults   = "sluice-results"
)

// bucketRetired is where consoles of earlier versions write decisions
// themselves. Its stream is kept, capturing nothing, so that such a
// console still connects and its write reaches the decision service,
// which answers that the console must be upgraded.
const bucketRetired = "sluice-decisions"

// DecideSubject is where console asks the hub's decision service to
// record a decision: its own subject, which only its credentials may
// publish to, so that the service knows who decided from the subject.
func DecideSubject(console string) string { return "sluice.decide." + console }

// DroppedSubject is where the hub's service says which requests it took
// off the pending bucket (wire.Dropped), for the consoles.
const DroppedSubject = "sluice.dropped"

// Roles a hub's users have.
const (
	RoleBox     = "box"
	RoleConsole = "console"
)

// ValidName reports whether name can name a box or a console
// (wire.ValidName).
func ValidName(name string) bool { return wire.ValidName(name) }

// nameErr says why name is refused.
func nameErr(kind, name string) error {
	return fmt.Errorf("%q cannot name a %s: use 1 to 32 lower-case letters, digits and '-' (not first)", name, kind)
}

// Key is a bucket key for box's request id.
func Key(box, id string) string { return box + "." + id }

// SplitKey splits a bucket key into box and request id, reporting false
// for a key that is not BOX.ID.
func SplitKey(key string) (box, id string, ok bool) {
	box, id, ok = strings.Cut(key, ".")
	if !ok || !ValidName(box) || !queue.ValidID(id) {
		return "", "", false
	}
	return box, id, true
}
