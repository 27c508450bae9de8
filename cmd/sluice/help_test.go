package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/queue"
)

// helpOf runs 'sluice ARGS...' and returns its stdout, which must be
// all it printed, with exit status 0.
func helpOf(t *testing.T, args ...string) string {
	t.Helper()
	out, errs, code := sluiceCmd(t, "", args...)
	if code != 0 || errs != "" {
		t.Fatalf("sluice %s: exit %d\n%s", strings.Join(args, " "), code, errs)
	}
	return out
}

// TestAuditHelpEvents: 'sluice audit --help' names every event the log
// may hold.
func TestAuditHelpEvents(t *testing.T) {
	t.Parallel()
	help := helpOf(t, "audit", "--help")
	for _, e := range queue.EventNames() {
		if !regexp.MustCompile(`\b` + regexp.QuoteMeta(string(e)) + `\b`).MatchString(help) {
			t.Errorf("'sluice audit --help' does not name the event %s", e)
		}
	}
}
