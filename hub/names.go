package hub

import (
	"fmt"
	"strings"

	"github.com/sluice-dev/sluice/hub/wire"
	"github.com/sluice-dev/sluice/queue"
)

// The buckets.
const (
	BucketPending   = "sluice-pending"
	BucketDecisions = "sluice-decisions"
	BucketResults   = "sluice-results"
)

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
