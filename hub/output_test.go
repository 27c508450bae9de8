package hub

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/sluice-dev/sluice/hub/wire"
	"github.com/sluice-dev/sluice/internal/syncbuf"
	"github.com/sluice-dev/sluice/queue"
)

// Output a box's run writes while the hub is down does not vanish from a
// console's pane: each piece says where it begins, the outcome how much
// the run wrote, and what the console did not get is a marked line with
// its size, where it was lost. The hub (its own process) is SIGKILLed
// mid-run and started again.
func TestOutputLostWhileHubDown(t *testing.T) {
	st, creds := testStore(t, []string{"b1"}, []string{"c1"})
	hub := hubProcess(t, st)
	b1 := newTestBox(t, hub.url, creds["b1"])
	step, wrote := make(chan struct{}), make(chan struct{})
	b1.apply.mu.Lock()
	b1.apply.output = func(write func([]byte)) {
		write([]byte("before\n"))
		<-step // the hub is down, and the box knows it
		write([]byte("during\n"))
		wrote <- struct{}{}
		<-step // the hub is back, for the box and the console
		write([]byte("after\n"))
	}
	b1.apply.mu.Unlock()
	tf := startFeed(t, hub.url, creds["c1"])
	ready := func(ev FeedEvent) bool { return ev.Ev == FeedReady }
	tf.next(t, "the first listing", ready)
	req := b1.ask(t, "make deploy")
	p := tf.next(t, "the ask", is(FeedPending, "b1", req.ID)).Pending
	if ev := tf.send(t, FeedCommand{Op: Approve, Box: "b1", ID: req.ID, Digest: p.Digest, DiffDigest: wire.DiffDigest(p.Diff, p.DiffErr)}); ev.Error != "" {
		t.Fatal(ev.Error)
	}
	first := tf.next(t, "the output before the hub goes down", is(FeedOutput, "b1", req.ID))
	if first.Offset == nil || *first.Offset != 0 || string(first.Data) != "before\n" {
		t.Fatalf("first piece %q at %v, want \"before\\n\" at 0", first.Data, first.Offset)
	}

	hub.kill()
	waitFor(t, "the box to find the hub gone", func() bool { return !b1.client.NC.IsConnected() })
	step <- struct{}{}
	<-wrote
	hub.mustStart()
	tf.next(t, "the feed's listing once the hub is back", ready)
	waitFor(t, "the box back on the hub", func() bool { return b1.client.NC.IsConnected() })
	step <- struct{}{}

	// The pane as the console draws it: the pieces by their offsets,
	// then what the outcome says was written.
	var track wire.OutputTrack
	pane := string(track.Piece(first.Offset, first.Data))
	for {
		ev := tf.next(t, "the run's output and outcome", func(e FeedEvent) bool {
			return (e.Ev == FeedOutput || e.Ev == FeedOutcome) && e.Box == "b1" && e.ID == req.ID
		})
		if ev.Ev == FeedOutput {
			pane += string(track.Piece(ev.Offset, ev.Data))
			continue
		}
		if o := ev.Outcome; !o.Applied || o.Status != queue.StatusDone || o.OutputBytes != 20 {
			t.Fatalf("outcome %+v, want applied, done, 20 bytes of output", o)
		}
		pane += string(track.End(ev.Outcome.OutputBytes))
		break
	}
	if want := "before\n" + wire.LostLine(7) + "\r\nafter\n"; pane != want {
		t.Fatalf("the pane shows %q, want %q", pane, want)
	}
	if !strings.Contains(pane, "⟨7 bytes lost while the hub was down⟩") {
		t.Fatalf("no marked gap in %q", pane)
	}
}

// An output subject names its box, request and, if it says, the offset
// of its piece: a decimal number as the box writes it, nothing else.
func TestOutputKey(t *testing.T) {
	id := queue.NewID()
	for _, c := range []struct {
		subject string
		off     int64 // -1: none
		ok      bool
	}{
		{"sluice.out.b1." + id, -1, true},
		{"sluice.out.b1." + id + ".0", 0, true},
		{"sluice.out.b1." + id + ".4096", 4096, true},
		{"sluice.out.b1." + id + ".-1", 0, false},
		{"sluice.out.b1." + id + ".01", 0, false},
		{"sluice.out.b1." + id + ".x", 0, false},
		{"sluice.out.b1." + id + ".1.2", 0, false},
		{"sluice.out.b1." + id + ".99999999999999999999", 0, false},
		{"sluice.out.b1." + id + ".1125899906842625", 0, false}, // over a PiB
		{"sluice.out.B1." + id + ".0", 0, false},
		{"sluice.out.b1", 0, false},
		{"sluice.in.b1." + id, 0, false},
	} {
		box, rid, off, ok := outputKey(c.subject)
		switch {
		case ok != c.ok:
			t.Errorf("%s: ok %v", c.subject, ok)
		case !ok:
		case box != "b1" || rid != id:
			t.Errorf("%s: %s/%s", c.subject, box, rid)
		case c.off < 0 && off != nil, c.off >= 0 && (off == nil || *off != c.off):
			t.Errorf("%s: offset %v, want %d", c.subject, off, c.off)
		}
	}
}

// A person's 'sluice hub approve' waits across the hub's restart: the box
// publishes the run's outcome once the hub is back, also when its try
// while the hub was down failed outright (the client's reconnect buffer
// full: the outcome was lost, and approve waited for ever); approve
// watches for it again once it is back itself, and prints the run's
// output with what the hub could not carry marked.
func TestApproveAcrossHubRestart(t *testing.T) {
	st, creds := testStore(t, []string{"b1"}, []string{"c1"})
	hub := hubProcess(t, st)
	logs := &syncbuf.Buffer{}
	b1 := openTestBox(t, "b1")
	// A reconnect buffer of a byte: once a message waits in it, what the
	// box publishes while the hub is down fails at once, as it does once
	// a long outage filled the 8 MB one (pending requests tried again and
	// again).
	b1.opts = []nats.Option{nats.ReconnectBufSize(1)}
	b1.tune = func(b *Box) {
		b.Wait = 500 * time.Millisecond // a try that was buffered all the same gives up soon
		logf := b.Logf
		b.Logf = func(f string, a ...any) { logf(f, a...); fmt.Fprintf(logs, f+"\n", a...) }
	}
	b1.stop = b1.bridge(t, hub.url, creds["b1"])
	step := make(chan struct{})
	b1.apply.mu.Lock()
	b1.apply.output = func(write func([]byte)) {
		write([]byte("before\n"))
		<-step // the hub is down, and the box knows it
		write([]byte("during\n"))
	}
	b1.apply.mu.Unlock()
	credsFile := filepath.Join(t.TempDir(), "c1.creds")
	if err := creds["c1"].Write(credsFile); err != nil {
		t.Fatal(err)
	}
	req := b1.ask(t, "make deploy")
	con := connect(t, hub.url, creds["c1"])
	waitFor(t, "the ask on the hub", func() bool { return len(pendingKeys(t, con)) == 1 })
	digest := pendingKeys(t, con)[Key("b1", req.ID)].Digest

	stdout, stderr := &syncbuf.Buffer{}, &syncbuf.Buffer{}
	code := make(chan int, 1)
	go func() {
		code <- Main([]string{"approve", "b1/" + req.ID + "@" + digest[:12], "--hub", hub.url, "--hub-creds", credsFile},
			strings.NewReader(""), stdout, stderr, nil)
	}()
	waitFor(t, "the output before the hub goes down", func() bool { return stdout.String() == "before\n" })
	hub.kill()
	waitFor(t, "the box to find the hub gone", func() bool { return !b1.client.NC.IsConnected() })
	// The buffer full before the run ends, as the bridge's tries fill it
	// in a long outage.
	_ = b1.client.NC.Publish(OutputSubject("b1", queue.NewID())+".0", []byte("x"))
	step <- struct{}{}
	waitFor(t, "a try at the outcome to fail", func() bool { return strings.Contains(logs.String(), "outcome not published yet") })
	hub.mustStart()
	select {
	case c := <-code:
		if want := "before\n" + wire.LostLine(7) + "\r\n"; c != 0 || stdout.String() != want || !strings.Contains(stderr.String(), "b1: done, exit status 0") {
			t.Fatalf("approve: %d\n%q (want %q)\n%s", c, stdout.String(), want, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("approve did not end 10 s after the hub was back:\n%s%s\nthe box:\n%s", stdout.String(), stderr.String(), logs.String())
	}
}
