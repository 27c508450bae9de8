package policy

import "fmt"

// Category is what running a command may do.
type Category int

// Categories, in rising severity: a line's category is the most severe of
// its parts. Unknown sits just above read_only: any knowledge beats none,
// and it is always at least ask. The zero Category is invalid, so a table
// entry that forgets its category is an error, not read_only.
const (
	ReadOnly Category = iota + 1
	Unknown
	Mutating
	Networked
	Destructive
	HostEscape
)

var categoryNames = [...]string{"read_only", "unknown", "mutating", "networked", "destructive", "host_escape_risk"}

func (c Category) String() string {
	if c >= ReadOnly && int(c) <= len(categoryNames) {
		return categoryNames[c-1]
	}
	return fmt.Sprintf("Category(%d)", int(c))
}

// ParseCategory turns a category name into a Category.
func ParseCategory(s string) (Category, error) {
	for i, n := range categoryNames {
		if n == s {
			return Category(i + 1), nil
		}
	}
	return 0, fmt.Errorf("unknown category %q (want one of read_only, mutating, networked, destructive, host_escape_risk, unknown)", s)
}

// MarshalText implements encoding.TextMarshaler.
func (c Category) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (c *Category) UnmarshalText(b []byte) error {
	v, err := ParseCategory(string(b))
	*c = v
	return err
}

// Action is what happens to a request: it passes on its own, a person is
// asked, or it is refused.
type Action int

// Actions, in rising strictness: deny beats ask beats allow with a
// checkpoint beats allow. AllowWithCheckpoint runs without asking, like
// allow, but only where sluice runs it confined and can checkpoint the
// project first (so a person can undo it); elsewhere it asks.
const (
	Allow Action = iota
	AllowWithCheckpoint
	Ask
	Deny
)

var actionNames = [...]string{"allow", "allow_with_checkpoint", "ask", "deny"}

func (a Action) String() string {
	if a >= 0 && int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// ParseAction turns an action name into an Action.
func ParseAction(s string) (Action, error) {
	for i, n := range actionNames {
		if n == s {
			return Action(i), nil
		}
	}
	return 0, fmt.Errorf("unknown action %q (want allow, allow_with_checkpoint, ask or deny)", s)
}

// MarshalText implements encoding.TextMarshaler.
func (a Action) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (a *Action) UnmarshalText(b []byte) error {
	v, err := ParseAction(string(b))
	*a = v
	return err
}

// Risk is a coarse reading of how bad the worst outcome could be.
type Risk int

// Risks.
const (
	Low Risk = iota
	Medium
	High
	Critical
)

var riskNames = [...]string{"low", "medium", "high", "critical"}

func (r Risk) String() string {
	if r >= 0 && int(r) < len(riskNames) {
		return riskNames[r]
	}
	return fmt.Sprintf("Risk(%d)", int(r))
}

// MarshalText implements encoding.TextMarshaler.
func (r Risk) MarshalText() ([]byte, error) { return []byte(r.String()), nil }
