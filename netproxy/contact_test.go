package netproxy

import (
	"encoding/json"
	"testing"
)

// The result JSON's "network" array and the audit finished line carry
// Contacts as they marshal (the result's `network`, docs/protocol.md: Result).
func TestContactJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal([]Contact{
		{Host: "registry.npmjs.org", Port: 443, Sent: 123, Received: 4567, AllowedBy: "knowledge: npm"},
		{Host: "registry.evil.example", Port: 443, AllowedBy: "refused: not in this run's hosts"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"host":"registry.npmjs.org","port":443,"sent":123,"received":4567,"allowed_by":"knowledge: npm"},` +
		`{"host":"registry.evil.example","port":443,"sent":0,"received":0,"allowed_by":"refused: not in this run's hosts"}]`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}
