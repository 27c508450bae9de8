package themes

import "charm.land/lipgloss/v2"

// BadgeFor returns the badge style for a verdict ("allow",
// "allow_with_checkpoint", "ask", "deny") or
// a result status ("running", "waiting" (for its turn), "done", "failed", "timeout", "killed",
// "expired", "invalid", "interrupted", "denied", "decided"). An interrupted
// request is shown as failed, a denied one as deny, and a decided one as
// done. Anything else gets the ask style: an unknown state needs a look.
//
// It is not called Badge because Go does not allow a method and a field of
// the same name, and the Badge field holds the styles themselves.
func (s *Styles) BadgeFor(action string) lipgloss.Style {
	switch action {
	case "allow", "allow_with_checkpoint":
		return s.Badge.Allow
	case "deny", "denied":
		return s.Badge.Deny
	case "running", "waiting":
		return s.Badge.Running
	case "done", "decided":
		return s.Badge.Done
	case "failed", "interrupted":
		return s.Badge.Failed
	case "timeout":
		return s.Badge.Timeout
	case "killed":
		return s.Badge.Killed
	case "expired":
		return s.Badge.Expired
	case "invalid":
		return s.Badge.Invalid
	default:
		return s.Badge.Ask
	}
}
