package link

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/hub/wire"
	"github.com/sluice-dev/sluice/queue"
)

// More requests waiting than the link remembers after they leave (one
// compromised box publishing 4097 asks, or 100 boxes x 41): the link takes
// them all (it used to spin forever with its lock held).
func TestHubLinkManyPending(t *testing.T) {
	l, _, _ := newTestLink()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i <= maxKnown; i++ {
			l.handle(pendingEvent("b1", queue.NewID(), "true", strings.Repeat("a", 64)))
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("Link.handle hung after %d pending requests (remember loops forever)", maxKnown+1)
	}
}

// One over-long line (a box may publish 8 MiB, the hub's max_payload) is
// skipped; what follows it still arrives (it used to end the link).
func TestHubLinkSkipsHugeLine(t *testing.T) {
	l, obs, _ := newTestLink()
	r, w := io.Pipe()
	l.out = bufio.NewReaderSize(r, 64<<10)
	l.ended = make(chan struct{})
	go l.run()
	id := queue.NewID()
	big, _ := json.Marshal(wire.FeedEvent{Ev: wire.FeedOutput, Box: "evil", ID: queue.NewID(), Data: make([]byte, 7<<20)})
	good, _ := json.Marshal(pendingEvent("b2", id, "make deploy", strings.Repeat("a", 64)))
	go func() { w.Write(append(big, '\n')); w.Write(append(good, '\n')) }()
	deadline := time.After(10 * time.Second)
	for obs.req("b2/"+id) == nil {
		select {
		case <-l.ended:
			t.Fatalf("the link died on a %d-byte line from one box: %v", len(big), l.endErr)
		case <-deadline:
			t.Fatal("b2's request after the long line never arrived")
		case <-time.After(10 * time.Millisecond):
		}
	}
	w.Close()
	<-l.ended
}

// A box republishes a request with the same digest but a new diff (its
// bridge restarted after the file changed): the console shows, and
// rechecks against, the new diff, not the one it had.
func TestHubLinkNewDiffReplacesShown(t *testing.T) {
	l, _, _ := newTestLink()
	obs := l.obs.(*recObserver)
	id := queue.NewID()
	d := strings.Repeat("c", 64)
	raw, _ := json.Marshal(queue.Request{Version: queue.Version, ID: id, Kind: queue.KindEdit, Path: "main.go", OldString: "v = 1", NewString: "v = 2", Cwd: "/srv/app"})
	ev := func(diff string) wire.FeedEvent {
		return wire.FeedEvent{Ev: wire.FeedPending, Box: "b1", ID: id, Pending: &wire.Pending{Box: "b1", ID: id, Request: raw, Digest: d, Diff: diff,
			Verdict: &queue.Verdict{Action: queue.ActionAsk}}}
	}
	l.handle(ev("-const v = 1\n+const v = 2\n"))
	shown := obs.reqs["b1/"+id]
	l.handle(ev("-const v = 1 // pinned\n+const v = 2 // pinned\n var evil = 1\n"))
	diff, _ := l.Preview(obs.reqs["b1/"+id])
	if !strings.Contains(diff, "evil") {
		t.Fatalf("the box now holds (and will check against) a new diff, but the console still shows and rechecks %q (same *Request: %v)", diff, obs.reqs["b1/"+id] == shown)
	}
}

// After the feed ended, a decision is refused at once instead of being
// written to nobody and waited for forever.
func TestHubLinkDecideAfterEnd(t *testing.T) {
	l, obs, _ := newTestLink()
	r, w := io.Pipe()
	l.out = bufio.NewReaderSize(r, 64<<10)
	l.ended = make(chan struct{})
	inR, inW := io.Pipe()
	l.in = inW
	go io.Copy(io.Discard, inR) // the child still reads its stdin
	id := queue.NewID()
	l.handle(pendingEvent("b1", id, "make deploy", strings.Repeat("a", 64)))
	go l.run()
	w.Write([]byte("not json\n")) // skipped
	w.Close()                     // the feed ends
	<-l.ended
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err := l.Approve(ctx, obs.reqs["b1/"+id], "")
	if err == context.DeadlineExceeded {
		t.Fatal("Approve after the link ended waited forever (the console's ctx never ends)")
	}
	if err == nil || !strings.Contains(err.Error(), "link to the hub is down") {
		t.Fatalf("Approve after the link ended: %v", err)
	}
}

// A box's output for requests it withdrew cannot open runs without
// bound (each is a screen and a pacer in the console).
func TestHubLinkRunsBounded(t *testing.T) {
	l, _, _ := newTestLink()
	for i := 0; i < 3*maxKnown; i++ {
		id := queue.NewID()
		l.handle(pendingEvent("evil", id, "true", strings.Repeat("a", 64)))
		l.handle(wire.FeedEvent{Ev: wire.FeedGone, Box: "evil", ID: id})
		l.handle(wire.FeedEvent{Ev: wire.FeedOutput, Box: "evil", ID: id, Data: []byte("x")})
	}
	if n := len(l.runs); n > maxKnown {
		t.Fatalf("%d runs open from one box (requests bounded at %d)", n, maxKnown)
	}
}
