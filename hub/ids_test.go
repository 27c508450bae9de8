package hub

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/queue"
)

// TestMainShortIDs: 'sluice hub approve' and 'deny' take BOX/ID with the
// id in any of sluice's forms: a unique prefix of 4+ characters or the
// last 8+ (what the console shows); a form two requests share decides
// nothing and names them.
func TestMainShortIDs(t *testing.T) {
	h, creds := testHub(t, []string{"b1"}, []string{"c1"})
	b1 := newTestBox(t, h.URL(), creds["b1"])
	credsFile := filepath.Join(t.TempDir(), "c1.creds")
	if err := creds["c1"].Write(credsFile); err != nil {
		t.Fatal(err)
	}
	con := connect(t, h.URL(), creds["c1"])
	a := b1.queueAsk(t, &queue.Request{ID: "01JD3T6Q6Z8W9X0Y1Z2A3B4C5D", Kind: queue.KindExec, Command: "make deploy", Cwd: "/home/dev/app"})
	c := b1.queueAsk(t, &queue.Request{ID: "01JD3V00000000000Z2A3B4C5D", Kind: queue.KindExec, Command: "make clean", Cwd: "/home/dev/app"})
	waitFor(t, "both asks on the hub", func() bool { return len(pendingKeys(t, con)) == 2 })
	hubArgs := []string{"--hub", h.URL(), "--hub-creds", credsFile}

	code, _, errs := runMain(append([]string{"deny", "b1/2A3B4C5D"}, hubArgs...)...)
	if code != exitFail || !strings.Contains(errs, `"2A3B4C5D" matches 2 requests waiting on b1 (`) || !strings.Contains(errs, a.ID) || !strings.Contains(errs, c.ID) {
		t.Fatalf("a form two requests share: %d %s", code, errs)
	}
	if code, _, errs := runMain(append([]string{"deny", "b1/ZZZZZZZZ"}, hubArgs...)...); code != exitFail || !strings.Contains(errs, `nothing waiting on b1 matches "ZZZZZZZZ"`) {
		t.Fatalf("a form that names nothing: %d %s", code, errs)
	}
	if code, _, errs := runMain(append([]string{"deny", "b1/01J"}, hubArgs...)...); code != exitFail || !strings.Contains(errs, `id "01J" is too short`) {
		t.Fatalf("too short: %d %s", code, errs)
	}
	if n := len(pendingKeys(t, con)); n != 2 {
		t.Fatalf("%d requests wait after refused forms, want 2", n)
	}
	code, _, errs = runMain(append([]string{"deny", "b1/1Z2A3B4C5D", "--reason", "not today"}, hubArgs...)...)
	if code != exitOK || !strings.Contains(errs, "b1/"+a.ID+" denied by") {
		t.Fatalf("deny by the last 10: %d %s", code, errs)
	}
	code, _, errs = runMain(append([]string{"deny", "b1/01JD3V", "--no-wait"}, hubArgs...)...)
	if code != exitOK || !strings.Contains(errs, "b1/"+c.ID+" denied by") {
		t.Fatalf("deny by a prefix: %d %s", code, errs)
	}
}
