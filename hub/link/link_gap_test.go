package link

import (
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/hub/wire"
	"github.com/sluice-dev/sluice/queue"
)

// Output a box published that did not reach the console (the hub was
// down) is a marked line in the run's pane, where it was lost and with its
// size, taken from the offsets of the pieces and the outcome's count; a
// run whose output was all lost opens to say so. A request the console
// never saw wait opens no run.
func TestHubLinkOutputGap(t *testing.T) {
	l, obs, logged := newTestLink()
	at := func(n int64) *int64 { return &n }
	lost := func(n int64) string { return wire.LostLine(n) + "\r\n" }
	digest := strings.Repeat("a", 64)

	id1 := queue.NewID()
	l.handle(pendingEvent("b1", id1, "make deploy", digest))
	l.handle(wire.FeedEvent{Ev: wire.FeedGone, Box: "b1", ID: id1})
	l.handle(wire.FeedEvent{Ev: wire.FeedOutput, Box: "b1", ID: id1, Offset: at(0), Data: []byte("deploying\n")})
	l.handle(wire.FeedEvent{Ev: wire.FeedOutput, Box: "b1", ID: id1, Offset: at(30), Data: []byte("done\n")})
	l.handle(wire.FeedEvent{Ev: wire.FeedOutput, Box: "b1", ID: id1, Offset: at(30), Data: []byte("done\n")}) // again
	l.handle(wire.FeedEvent{Ev: wire.FeedOutcome, Box: "b1", ID: id1, Outcome: &wire.Outcome{Status: queue.StatusDone, Applied: true,
		Decision: wire.Approve, By: "alice@c1", OutputBytes: 40}})
	if got, want := obs.output["b1/"+id1], "deploying\n"+lost(20)+"done\n"+lost(5); got != want {
		t.Fatalf("pane %q, want %q", got, want)
	}

	id2 := queue.NewID()
	l.handle(pendingEvent("b1", id2, "make test", digest))
	l.handle(wire.FeedEvent{Ev: wire.FeedOutcome, Box: "b1", ID: id2, Outcome: &wire.Outcome{Status: queue.StatusDone, Applied: true,
		Decision: wire.Approve, By: "alice@c1", OutputBytes: 12}})
	if got, want := obs.output["b1/"+id2], lost(12); got != want {
		t.Fatalf("a run whose output was all lost: pane %q, want %q", got, want)
	}

	id3 := queue.NewID()
	l.handle(wire.FeedEvent{Ev: wire.FeedOutcome, Box: "b1", ID: id3, Outcome: &wire.Outcome{Status: queue.StatusDone, Applied: true,
		Decision: wire.Approve, By: "bob@c2", OutputBytes: 12}})
	want := []string{"pending b1/" + id1 + " make deploy ask", "gone b1/" + id1, "started b1/" + id1, "finished b1/" + id1 + " done",
		"pending b1/" + id2 + " make test ask", "started b1/" + id2, "finished b1/" + id2 + " done"}
	if got := obs.take(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("observer got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, ok := obs.output["b1/"+id3]; ok {
		t.Fatal("a run opened for a request this console never saw")
	}
	if n := len(*logged); n != 3 || (*logged)[2].ID != "b1/"+id3 {
		t.Fatalf("History %+v, want the two runs' approvals and the unseen request", *logged)
	}
}
