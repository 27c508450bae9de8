package queue

import (
	"github.com/oklog/ulid/v2"
)

// ValidID reports whether id is a well-formed request id: the grammar
// ^[0-9A-Za-z][0-9A-Za-z_-]{0,63}$ of protocol section 3. It admits no '/',
// '.' or leading '-', so an id is always safe as a single path element.
// (Written out rather than a regexp: every sluice process would compile it
// at start-up.)
func ValidID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= '0' && c <= '9', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case (c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// NewID returns a new time-sortable request id (a ULID). Ids from one
// process increase monotonically even within a millisecond.
func NewID() string {
	return ulid.Make().String()
}
