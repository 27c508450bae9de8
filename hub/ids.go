package hub

import (
	"context"
	"fmt"
	"strings"
)

// pendingID expands id, as 'sluice hub approve' and 'deny' take it, to
// the id of a request waiting on box: the whole id, any unique prefix of
// it of 4 or more characters, or its last 8 or more (the short form the
// console shows), as sluice's own commands take ids (cmd/sluice/ids.go).
// A whole id (26 characters, a ULID's length) is returned as it is.
func pendingID(ctx context.Context, cl *Client, box, id string) (string, error) {
	if len(id) >= 26 {
		return id, nil
	}
	if len(id) < 4 {
		return "", fmt.Errorf("id %q is too short; give at least 4 characters", id)
	}
	ps, err := cl.List(ctx, box)
	if err != nil {
		return "", err
	}
	var match []string
	for _, p := range ps {
		switch {
		case p.ID == id:
			return id, nil
		case strings.HasPrefix(p.ID, id) || len(id) >= 8 && strings.HasSuffix(p.ID, id):
			match = append(match, p.ID)
		}
	}
	switch len(match) {
	case 0:
		return "", fmt.Errorf("nothing waiting on %s matches %q; see 'sluice hub ls --box %s'", box, id, box)
	case 1:
		return match[0], nil
	}
	return "", fmt.Errorf("%q matches %d requests waiting on %s (%s); give more of the id", id, len(match), box, strings.Join(match, ", "))
}
