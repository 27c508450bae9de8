package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

const osc = "\x1b]52;c;cm0gLXJmIH4K\x07" // sets the clipboard

// A box's Pending.Verdict reaches the queue row and detail as link.Link
// passes it (unchecked): Action, Category, Risk are rendered raw.
func TestFleetVerdictEscaped(t *testing.T) {
	f, _ := newFleetFixture(t)
	req := &queue.Request{ID: "b1/" + queue.NewID(), Kind: queue.KindExec, Command: "true", Cwd: "/srv", Agent: "codex", CreatedAt: time.Now()}
	f.m.Observer().Pending(req, queue.Verdict{Action: queue.Action("ask" + osc), Category: "x" + osc, Risk: "y" + osc})
	f.drain()
	out := f.m.render()
	if strings.Contains(out, "\x1b]52") {
		t.Fatalf("a box's verdict wrote an OSC 52 to the terminal: %q", out[strings.Index(out, "\x1b]52")-20:][:60])
	}
}

// A box's Outcome.Status reaches History as link.Link.outcome passes it
// (ev.Status = o.Status): r.state() is rendered raw in the row.
func TestFleetOutcomeStatusEscaped(t *testing.T) {
	f, _ := newFleetFixture(t)
	f.m.Logged([]queue.Event{{TS: time.Now(), ID: "b1/" + queue.NewID(), Event: queue.EventApproved, Actor: "alice@c1",
		Kind: queue.KindExec, Command: "true", Status: queue.Status("done" + osc)}})
	f.drain()
	out := f.m.render()
	if strings.Contains(out, "\x1b]52") {
		t.Fatalf("a box's outcome status wrote an OSC 52 to the terminal: %q", out[strings.Index(out, "\x1b]52")-20:][:60])
	}
}
