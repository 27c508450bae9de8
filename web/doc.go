// Package web is sluice's web approver: a small HTTP server that shows one
// box's queue to a paired phone or laptop and carries a person's decision
// to the box's own engine (sluice approve --digest --as, sluice deny).
//
// It is as careful as the console. Nothing an agent wrote reaches the
// page as markup: the API hands text out as JSON strings already cut into
// segments (Shape), hidden characters escaped and flagged, long blank and
// space runs folded, and the page builds its DOM with textContent only.
// An approval is accepted only from a paired device, with a CSRF token,
// same-origin, carrying the digest of the request as it was served to
// that device at least the grace period before; a request that changed
// since is refused, and the spool's claim makes the first decision win.
// A queue row is such a showing only when it shows its whole request (a
// short one-line command, a connect request's host); any other request is
// approved from its detail, read to its end.
//
// The package refuses to listen beyond loopback without TLS, never runs
// a request itself (the box's sluice does, confined and audited), and
// never acts on the spool: it only lists it (queue.Spool.List), so a page
// left open expires, quarantines and recovers nothing.
//
// Where the queue comes from and where decisions go is a Source: Spool is
// one box's; a hub's can be added beside it.
package web
