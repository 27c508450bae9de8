package queue

import (
	"regexp"

	"github.com/oklog/ulid/v2"
)

// idPattern is the id grammar of SPEC section 3. It admits no '/', '.' or
// leading '-', so an id is always safe as a single path element.
var idPattern = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z_-]{0,63}$`)

// ValidID reports whether id is a well-formed request id.
func ValidID(id string) bool {
	return idPattern.MatchString(id)
}

// NewID returns a new time-sortable request id (a ULID). Ids from one
// process increase monotonically even within a millisecond.
func NewID() string {
	return ulid.Make().String()
}
