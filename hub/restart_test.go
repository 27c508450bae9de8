package hub

import (
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/hub/wire"
	"github.com/sluice-dev/sluice/internal/syncbuf"
	"github.com/sluice-dev/sluice/queue"
)

// TestMain runs this test binary as sluice-hub when SLUICE_HUB_TEST_MAIN
// is set: a hub of its own process ('sluice-hub hub serve'), which a test
// can kill with SIGKILL.
func TestMain(m *testing.M) {
	if os.Getenv("SLUICE_HUB_TEST_MAIN") != "" {
		os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, nil))
	}
	os.Exit(m.Run())
}

// serverProc is a server in a process of its own: this test binary as
// sluice-hub ('hub serve', 'hub service') or nats-server. It can be
// killed (SIGKILL), frozen, and started again as it was.
type serverProc struct {
	t     *testing.T
	url   string   // where it serves, when it is a NATS server
	argv  []string // the program and its command line
	env   []string // added to the test's environment
	ready string   // what it says on stderr once it serves
	mu    sync.Mutex
	cmd   *osexec.Cmd
	done  chan struct{}
}

// sluiceProc is this test binary run as sluice-hub with args, which says
// ready once it serves. It is not started.
func sluiceProc(t *testing.T, ready string, args ...string) *serverProc {
	return &serverProc{t: t, argv: append([]string{os.Args[0]}, args...), env: []string{"SLUICE_HUB_TEST_MAIN=1"}, ready: ready}
}

// freeAddr is a free port of 127.0.0.1, as HOST:PORT.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// hubProcess starts st's hub in a process of its own on a free port.
func hubProcess(t *testing.T, st *Store) *serverProc {
	t.Helper()
	addr := freeAddr(t)
	p := sluiceProc(t, "listening on", "hub", "serve", "--listen", addr, "--store", st.Dir)
	p.url = "nats://" + addr
	t.Cleanup(p.kill)
	p.mustStart()
	return p
}

// mustStart starts the server, failing the test now if it does not
// serve; only the test's goroutine may call it.
func (p *serverProc) mustStart() {
	p.t.Helper()
	if !p.start() {
		p.t.FailNow()
	}
}

// start runs the server and waits until it says it serves (false, the
// test failed, when it does not). It may be called from any goroutine.
func (p *serverProc) start() bool {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return true // running
	}
	cmd := osexec.Command(p.argv[0], p.argv[1:]...)
	cmd.Env = append(os.Environ(), p.env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		p.t.Error(err)
		return false
	}
	if err := cmd.Start(); err != nil {
		p.t.Error(err)
		return false
	}
	p.cmd, p.done = cmd, make(chan struct{})
	ready := watchStderr(stderr, p.ready)
	go func(cmd *osexec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(cmd, p.done)
	select {
	case out := <-ready:
		if out != "" {
			p.t.Errorf("%v exited:\n%s", p.argv, out)
			return false
		}
	case <-time.After(20 * time.Second):
		p.t.Errorf("%v did not say %q in 20 s", p.argv, p.ready)
		return false
	}
	return true
}

// freeze stops the server (SIGSTOP) until thaw: what clients send it
// waits in its sockets, unanswered, and nobody is disconnected.
func (p *serverProc) freeze() { p.signal(syscall.SIGSTOP) }

// thaw lets a frozen server go on (SIGCONT).
func (p *serverProc) thaw() { p.signal(syscall.SIGCONT) }

func (p *serverProc) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		_ = p.cmd.Process.Signal(sig)
	}
}

// kill stops the server with SIGKILL: no shutdown of its own.
func (p *serverProc) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
		p.cmd = nil
	}
}

// After the hub is SIGKILLed and started again, a console's feed lists
// what waits anew at once (a 'ready' ends the new listing): the request
// asked while the hub was down arrives, the one answered on the box
// meanwhile goes, the one that waited all along stays; a decision made
// then is carried out and its outcome arrives. Before, the feed's watches
// stayed on consumers the dead hub took with it until the client library
// missed enough heartbeats (10 to 20 s): no second 'ready' ever came.
// Against the embedded hub ('sluice-hub hub serve') and nats-server, each
// a process of its own.
func TestFeedCatchesUpAfterHubRestart(t *testing.T) {
	t.Run("sluice hub serve", func(t *testing.T) {
		st, creds := testStore(t, []string{"b1"}, []string{"c1"})
		p := hubProcess(t, st)
		feedCatchesUp(t, p, p.url, creds)
	})
	t.Run("nats-server", func(t *testing.T) {
		st, creds := testStore(t, []string{"b1"}, []string{"c1"})
		p := natsServer(t, st)
		feedCatchesUp(t, p, p.url, creds)
	})
}

func feedCatchesUp(t *testing.T, hub *serverProc, url string, creds map[string]*Creds) {
	b1 := newTestBox(t, url, creds["b1"])
	tf := startFeed(t, url, creds["c1"])
	tf.next(t, "the first listing", func(ev FeedEvent) bool { return ev.Ev == FeedReady })
	stays, leaves := b1.ask(t, "make stays"), b1.ask(t, "make leaves")
	tf.each(t, "both asks", is(FeedPending, "b1", stays.ID), is(FeedPending, "b1", leaves.ID))

	hub.kill()
	// While the hub is down, one request is answered on the box itself
	// and another is asked.
	eng := &queue.Engine{Spool: b1.spool, Recorder: b1.log, AuditPath: b1.log.Path()}
	if _, err := eng.Deny(leaves.ID, "dev", "decided here"); err != nil {
		t.Fatal(err)
	}
	asked := b1.ask(t, "make asked-while-down")
	hub.mustStart()

	ready := func(ev FeedEvent) bool { return ev.Ev == FeedReady }
	var p *Pending
	want := []func(FeedEvent) bool{ready, is(FeedPending, "b1", asked.ID), is(FeedGone, "b1", leaves.ID)}
	found := make([]bool, len(want))
	timeout := time.After(10 * time.Second)
	for left := len(want); left > 0; {
		ev, ok := tf.event(timeout)
		if !ok {
			t.Fatalf("the feed after the hub's restart: found %v of [listing anew, %s asked while it was down, %s gone]", found, asked.ID, leaves.ID)
		}
		if ev.Ev == FeedGone && ev.ID == stays.ID {
			t.Fatalf("the request that waited all along was told gone")
		}
		for i, m := range want {
			if !found[i] && m(ev) {
				found[i] = true
				left--
				if i == 1 {
					p = ev.Pending
				}
			}
		}
	}

	if ev := tf.send(t, FeedCommand{Op: Approve, Box: "b1", ID: asked.ID, Digest: p.Digest, DiffDigest: wire.DiffDigest(p.Diff, p.DiffErr)}); ev.Error != "" {
		t.Fatalf("approving after the restart: %s", ev.Error)
	}
	o := tf.next(t, "the outcome of the approval made after the restart", is(FeedOutcome, "b1", asked.ID)).Outcome
	if !o.Applied || o.Status != queue.StatusDone {
		t.Fatalf("outcome %+v", o)
	}
	if _, err := b1.spool.ReadPending(stays.ID); err != nil {
		t.Fatalf("the request that waited all along: %v", err)
	}
}

// A request whose put the hub did not answer in time, but took (it was
// slow: a loaded machine), and which left the box before a put was
// answered, is withdrawn from the hub: it stayed there as waiting, on
// every console, for ever. The hub is frozen (SIGSTOP) while the box tries
// to publish, the request is answered on the box, then the hub goes on.
func TestUnansweredPublishWithdrawn(t *testing.T) {
	st, creds := testStore(t, []string{"b1"}, []string{"c1"})
	hub := hubProcess(t, st)
	logs := &syncbuf.Buffer{}
	b1 := openTestBox(t, "b1")
	b1.tune = func(b *Box) {
		b.Wait = 300 * time.Millisecond
		logf := b.Logf
		b.Logf = func(f string, a ...any) { logf(f, a...); fmt.Fprintf(logs, f+"\n", a...) }
	}
	b1.stop = b1.bridge(t, hub.url, creds["b1"])
	tf := startFeed(t, hub.url, creds["c1"])
	tf.next(t, "the first listing", func(ev FeedEvent) bool { return ev.Ev == FeedReady })

	hub.freeze()
	req := b1.ask(t, "make deploy")
	unanswered := func(id string) func() bool {
		return func() bool { return strings.Contains(logs.String(), id+" not published to the hub") }
	}
	waitFor(t, "a put the hub does not answer in time", unanswered(req.ID))
	eng := &queue.Engine{Spool: b1.spool, Recorder: b1.log, AuditPath: b1.log.Path()}
	if _, err := eng.Deny(req.ID, "dev", "decided here"); err != nil {
		t.Fatal(err)
	}
	// Another ask, whose put goes unanswered too: the bridge has looked
	// at the spool since the request left it (every put of it before
	// then went unanswered).
	later := b1.ask(t, "make test")
	waitFor(t, "a look at the spool after the request left", unanswered(later.ID))
	hub.thaw()
	tf.each(t, "the request withdrawn, the later one on the hub", is(FeedGone, "b1", req.ID), is(FeedPending, "b1", later.ID))
	con := connect(t, hub.url, creds["c1"])
	if _, ok := pendingKeys(t, con)[Key("b1", req.ID)]; ok {
		t.Fatal("the hub still lists the request answered on the box")
	}
}
