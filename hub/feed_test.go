package hub

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/hub/wire"
	"github.com/sluice-dev/sluice/queue"
)

// testFeed is a console's feed, as 'sluice console --hub' runs it: its
// events come out of a pipe as lines, its commands go in as lines.
type testFeed struct {
	events chan FeedEvent
	in     *io.PipeWriter
	seq    int64
	// early holds the events that came while send waited for its
	// answer, oldest first: next and each read them before the pipe's.
	early []FeedEvent
}

func startFeed(t *testing.T, url string, c *Creds) *testFeed {
	t.Helper()
	cl := connect(t, url, c)
	outR, outW := io.Pipe()
	inR, inW := io.Pipe()
	tf := &testFeed{events: make(chan FeedEvent, 1024), in: inW}
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var ev FeedEvent
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Errorf("the feed wrote a line that is not an event: %q", sc.Text())
				continue
			}
			tf.events <- ev
		}
	}()
	f := &Feed{Client: cl, Out: outW, As: "alice"}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx, inR) }()
	t.Cleanup(func() { inW.Close(); cancel(); <-done; outW.Close() })
	return tf
}

// next waits for the first event that match accepts, skipping others.
func (tf *testFeed) next(t *testing.T, what string, match func(FeedEvent) bool) FeedEvent {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		ev, ok := tf.event(timeout)
		if !ok {
			t.Fatalf("timed out waiting for the feed's %s", what)
		}
		if match(ev) {
			return ev
		}
	}
}

// event is the feed's next event (those send passed over first), or
// false once timeout fires.
func (tf *testFeed) event(timeout <-chan time.Time) (FeedEvent, bool) {
	if len(tf.early) > 0 {
		ev := tf.early[0]
		tf.early = tf.early[1:]
		return ev, true
	}
	select {
	case ev := <-tf.events:
		return ev, true
	case <-timeout:
		return FeedEvent{}, false
	}
}

// each waits for one event of each matcher, in any order (the hub's
// buckets are watched apart, so their changes may interleave either way).
func (tf *testFeed) each(t *testing.T, what string, match ...func(FeedEvent) bool) []FeedEvent {
	t.Helper()
	got := make([]FeedEvent, len(match))
	found := make([]bool, len(match))
	left := len(match)
	timeout := time.After(10 * time.Second)
	for left > 0 {
		ev, ok := tf.event(timeout)
		if !ok {
			t.Fatalf("timed out waiting for the feed's %s (found %v)", what, found)
		}
		for i, m := range match {
			if !found[i] && m(ev) {
				got[i], found[i] = ev, true
				left--
				break
			}
		}
	}
	return got
}

func (tf *testFeed) send(t *testing.T, c FeedCommand) FeedEvent {
	t.Helper()
	tf.seq++
	c.Seq = tf.seq
	line, _ := json.Marshal(c)
	if _, err := tf.in.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
	// What the decision caused (the box's outcome, the withdrawal) may
	// come before the answer: the feed watches the buckets apart from
	// answering. Those events are kept for next and each.
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-tf.events:
			if ev.Ev == FeedDecided && ev.Seq == c.Seq {
				return ev
			}
			tf.early = append(tf.early, ev)
		case <-timeout:
			t.Fatalf("timed out waiting for the feed's answer to a decision")
		}
	}
}

func is(ev, box, id string) func(FeedEvent) bool {
	return func(e FeedEvent) bool { return e.Ev == ev && e.Box == box && e.ID == id }
}

// A console's feed: what waits on every box, decisions taken only with
// the digest shown, the run's output and outcome, and a second decision
// told who decided first.
func TestFeedDecides(t *testing.T) {
	h, creds := testHub(t, []string{"b1", "b2"}, []string{"c1"})
	b1, b2 := newTestBox(t, h.URL(), creds["b1"]), newTestBox(t, h.URL(), creds["b2"])
	r1 := b1.ask(t, "npm install left-pad")
	con := connect(t, h.URL(), creds["c1"])
	waitFor(t, "b1's ask on the hub", func() bool { return len(pendingKeys(t, con)) == 1 })

	tf := startFeed(t, h.URL(), creds["c1"])
	link := tf.next(t, "link", func(ev FeedEvent) bool { return ev.Ev == FeedHub })
	if !link.Connected || !strings.Contains(link.Text, "127.0.0.1") {
		t.Fatalf("link event %+v", link)
	}
	p1 := tf.next(t, "b1's ask", is(FeedPending, "b1", r1.ID))
	tf.next(t, "ready", func(ev FeedEvent) bool { return ev.Ev == FeedReady })
	if p1.Pending == nil || p1.Pending.Verdict == nil || !validDigest(p1.Pending.Digest) {
		t.Fatalf("pending event %+v: no verdict or digest", p1)
	}
	r2 := b2.ask(t, "rm -rf build")
	tf.next(t, "b2's later ask", is(FeedPending, "b2", r2.ID))

	if ev := tf.send(t, FeedCommand{Op: Approve, Box: "b1", ID: r1.ID}); !strings.Contains(ev.Error, "digest") {
		t.Fatalf("an approval without the shown digest: %+v, want refused", ev)
	}
	shownDiff := wire.DiffDigest(p1.Pending.Diff, p1.Pending.DiffErr)
	if ev := tf.send(t, FeedCommand{Op: Approve, Box: "b1", ID: r1.ID, Digest: p1.Pending.Digest}); !strings.Contains(ev.Error, "digests") {
		t.Fatalf("an approval without the shown diff's digest: %+v, want refused", ev)
	}
	if ev := tf.send(t, FeedCommand{Op: Approve, Box: "b1", ID: r1.ID, Digest: strings.Repeat("ab", 32), DiffDigest: shownDiff}); !strings.Contains(ev.Error, "changed since it was shown") {
		t.Fatalf("an approval of another digest: %+v, want refused", ev)
	}
	if ev := tf.send(t, FeedCommand{Op: Approve, Box: "b1", ID: r1.ID, Digest: p1.Pending.Digest, DiffDigest: shownDiff}); ev.Error != "" {
		t.Fatalf("approving as shown: %s", ev.Error)
	}
	evs := tf.each(t, "b1's output, outcome and withdrawal", is(FeedOutput, "b1", r1.ID), is(FeedOutcome, "b1", r1.ID), is(FeedGone, "b1", r1.ID))
	if out := evs[0]; string(out.Data) != "ran npm install left-pad\n" {
		t.Fatalf("output %q", out.Data)
	}
	o := evs[1].Outcome
	if !o.Applied || o.Status != queue.StatusDone || o.By != "alice@c1" || len(o.Request) == 0 || o.Verdict == nil {
		t.Fatalf("outcome %+v: want applied, done, by alice@c1, with its request and verdict", o)
	}
	if ev := tf.send(t, FeedCommand{Op: Deny, Box: "b1", ID: r1.ID}); !strings.Contains(ev.Error, "already decided: approve by alice@c1") {
		t.Fatalf("a second decision: %+v, want told who decided", ev)
	}
	if ev := tf.send(t, FeedCommand{Op: Deny, Box: "b2", ID: r2.ID, Reason: "not on the build box"}); ev.Error != "" {
		t.Fatalf("denying: %s", ev.Error)
	}
	if o := tf.next(t, "b2's outcome", is(FeedOutcome, "b2", r2.ID)).Outcome; o.Status != queue.StatusDenied || o.Reason != "not on the build box" {
		t.Fatalf("b2's outcome %+v", o)
	}
	if got := b1.apply.runs(); len(got) != 1 {
		t.Fatalf("b1 ran %v, want once", got)
	}
	for _, c := range []FeedCommand{{Op: "rollup", Box: "b1", ID: r1.ID}, {Op: Deny, Box: "B1*", ID: r1.ID}, {Op: Deny, Box: "b1", ID: "../x"}} {
		if ev := tf.send(t, c); ev.Error == "" {
			t.Fatalf("command %+v accepted", c)
		}
	}
}

// A box's bad values never reach the console: a pending value about
// another key, and output delivered by a consumer pointed at an output
// subject.
func TestFeedDropsForgeries(t *testing.T) {
	h, creds := testHub(t, []string{"b1", "b2"}, []string{"c1"})
	tf := startFeed(t, h.URL(), creds["c1"])
	tf.next(t, "ready", func(ev FeedEvent) bool { return ev.Ev == FeedReady })
	evil := connect(t, h.URL(), creds["b2"])
	id := queue.NewID()
	forged, _ := json.Marshal(Pending{Box: "b1", ID: id, Request: json.RawMessage(`{"kind":"exec","command":"true"}`), Digest: strings.Repeat("0", 64)})
	if _, err := evil.Pending.Put(ctxT(t), Key("b2", id), forged); err != nil {
		t.Fatal(err)
	}
	// b2's own honest value comes after: the forgery before it was dropped.
	honest, _ := json.Marshal(Pending{Box: "b2", ID: id, Request: json.RawMessage(`{"kind":"exec","command":"true"}`), Digest: strings.Repeat("0", 64)})
	if _, err := evil.Pending.Put(ctxT(t), Key("b2", id), honest); err != nil {
		t.Fatal(err)
	}
	ev := tf.next(t, "a pending event", func(ev FeedEvent) bool { return ev.Ev == FeedPending })
	if ev.Box != "b2" || ev.Pending.Box != "b2" {
		t.Fatalf("the feed passed on %+v", ev)
	}
}

// A file request travels with its diff; approving it after the file
// changed runs nothing, and the request leaves the hub to be decided on
// the box.
func TestFeedFileDiff(t *testing.T) {
	e := showEdit(t)
	if e.p.DiffErr != "" || !strings.Contains(e.p.Diff, "-const v = 1") || !strings.Contains(e.p.Diff, "+const v = 2") {
		t.Fatalf("published diff %q (%s)", e.p.Diff, e.p.DiffErr)
	}
	// The file changes under the request after the person saw the diff.
	if err := os.WriteFile(e.file, []byte("package main\n\nconst v = 1 // pinned\nvar evil = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ev := e.approve(t); ev.Error != "" {
		t.Fatal(ev.Error)
	}
	o := e.tf.each(t, "the outcome and the withdrawal", is(FeedOutcome, "b1", e.req.ID), is(FeedGone, "b1", e.req.ID))[0].Outcome
	if o.Applied || !strings.Contains(o.Reason, "changed after its diff was shown") {
		t.Fatalf("outcome %+v, want not applied: the diff changed", o)
	}
	if got := e.b1.apply.runs(); len(got) != 0 {
		t.Fatalf("e.b1 applied %v", got)
	}
	if _, err := e.b1.spool.ReadPending(e.req.ID); err != nil {
		t.Fatalf("the request should still wait on the box: %v", err)
	}
}

// shownEdit is an edit box b1 asked a person about, as the feed of
// console c1 showed it (p).
type shownEdit struct {
	h     *Hub
	creds map[string]*Creds
	b1    *testBox
	tf    *testFeed
	req   *queue.Request
	file  string // the file the edit changes
	p     *Pending
}

// showEdit starts a hub that admits box b1 and console c1, has b1 ask for
// an edit (askEdit) and c1's feed show it.
func showEdit(t *testing.T) *shownEdit {
	t.Helper()
	e := &shownEdit{}
	e.h, e.creds = testHub(t, []string{"b1"}, []string{"c1"})
	e.b1 = newTestBox(t, e.h.URL(), e.creds["b1"])
	e.req, e.file = e.b1.askEdit(t)
	e.tf = startFeed(t, e.h.URL(), e.creds["c1"])
	e.p = e.tf.next(t, "the edit", is(FeedPending, "b1", e.req.ID)).Pending
	return e
}

// approve approves the edit as it was shown, diff included, and returns
// the feed's answer.
func (e *shownEdit) approve(t *testing.T) FeedEvent {
	t.Helper()
	return e.tf.send(t, FeedCommand{Op: Approve, Box: "b1", ID: e.req.ID, Digest: e.p.Digest, DiffDigest: wire.DiffDigest(e.p.Diff, e.p.DiffErr)})
}

// askEdit writes main.go (const v = 1) in a new project and queues an ask
// to edit it (v = 2) on the box, as its engine would; it returns the
// request and the file.
func (tb *testBox) askEdit(t *testing.T) (*queue.Request, string) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "main.go")
	if err := os.WriteFile(file, []byte("package main\n\nconst v = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return tb.queueAsk(t, &queue.Request{Kind: queue.KindEdit, Path: "main.go", OldString: "v = 1", NewString: "v = 2", Cwd: dir, Agent: "claude-code"}), file
}
