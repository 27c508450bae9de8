package change

import "github.com/sluice-dev/sluice/queue"

// Preview is the diff a write, edit or patch request would make to the
// files as they are now, with roots as its jail (the directories policy
// gives the request; none allows every path): Plan, then Diff. It refuses
// what Plan refuses, with Plan's reason, and a request of another kind.
// The diff holds agent text raw; the caller escapes it for display.
func Preview(req *queue.Request, roots []string) (string, error) {
	c, err := Plan(req, roots)
	if err != nil {
		return "", err
	}
	return c.Diff(), nil
}
