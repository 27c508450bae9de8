// Package link is a fleet console's link to a hub: it runs a
// 'sluice-hub hub feed' child (NATS stays out of the sluice program),
// turns the feed's JSON lines (hub/wire) into what the console's engine
// observer and History take, and carries the person's decisions back.
// A Link implements the console's tui.Fleet and tui.Previewer; it imports
// neither tui nor NATS.
package link

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	osexec "os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluice-dev/sluice/hub/wire"
	"github.com/sluice-dev/sluice/queue"
)

// Link is a console's link to a fleet hub: a 'sluice-hub hub feed'
// child whose lines it turns into what the console's engine observer and
// History take, and which carries the person's decisions. It implements
// tui.Fleet and tui.Previewer.
type Link struct {
	cmd     *osexec.Cmd    // the feed now (l.mu)
	in      io.WriteCloser // its stdin (l.mu)
	out     *bufio.Reader  // its stdout (the run goroutine's)
	respawn func() error   // starts a new feed; nil: none (tests)
	closing bool           // the console is closing the link (l.mu)

	obs    queue.Observer
	logged func([]queue.Event)
	linked func() // the link went up or down

	mu       sync.Mutex
	seq      int64
	waiting  map[int64]chan string        // decisions sent, by seq: the hub's refusal ("" when held)
	shown    map[*queue.Request]*shownReq // what the console was given, by the value it holds
	requests map[string]*shownReq         // the latest of each BOX/ID, pending or gone (for runs and outcomes)
	order    []string                     // requests' keys, oldest first, to bound it
	runs     map[string]*fleetRun         // runs whose output streams here, by BOX/ID
	text     string                       // the hub's address, or why it cannot be reached
	ok       bool                         // connected
	dropped  int                          // requests the hub took off its queue while this console watched
	dropNote string                       // the last of them, and why
	ended    chan struct{}                // the feed's output ended
	endErr   error
}

// Feed is the 'sluice-hub hub feed' child a Link runs.
type Feed struct {
	Program     string               // sluice-hub
	Hub, Creds  string               // its --hub and --hub-creds; "": sluice-hub's defaults
	SysProcAttr *syscall.SysProcAttr // the child's (a parent-death signal); nil: none
}

// Start starts the feed and waits for its first word: the hub's address,
// or why it cannot be reached. Run then passes its events on.
func Start(f Feed) (*Link, error) {
	args := []string{"hub", "feed"}
	if f.Hub != "" {
		args = append(args, "--hub", f.Hub)
	}
	if f.Creds != "" {
		args = append(args, "--hub-creds", f.Creds)
	}
	l := &Link{waiting: map[int64]chan string{},
		shown: map[*queue.Request]*shownReq{}, requests: map[string]*shownReq{}, runs: map[string]*fleetRun{},
		ended: make(chan struct{})}
	l.respawn = func() error { return l.spawn(f.Program, args, f.SysProcAttr) }
	if err := l.respawn(); err != nil {
		return nil, err
	}
	return l, nil
}

// spawn starts a feed and reads its first word, the link's state.
func (l *Link) spawn(prog string, args []string, attr *syscall.SysProcAttr) error {
	cmd := osexec.Command(prog, args...)
	cmd.SysProcAttr = attr
	stderr := &tailBuffer{max: 4096}
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run %s: %w", prog, err)
	}
	l.out = bufio.NewReaderSize(stdout, 64<<10)
	ev, err := l.next()
	if err != nil || ev.Ev != wire.FeedHub {
		_ = in.Close()
		_ = cmd.Wait()
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return errors.New(lastLine(strings.TrimPrefix(msg, "sluice hub feed: ")))
		}
		return fmt.Errorf("the hub feed ended before it said anything (%v)", err)
	}
	l.mu.Lock()
	l.cmd, l.in, l.endErr = cmd, in, nil
	l.text, l.ok = ev.Text, ev.Connected
	l.mu.Unlock()
	return nil
}

// maxFeedLine bounds one line of the feed: a request (1 MiB at most), its
// diff and their JSON escaping.
const maxFeedLine = 8 << 20

// next reads the feed's next event. A line too long or that is not an
// event (its values come from boxes) is skipped, not fatal: only the end
// of the feed ends the link.
func (l *Link) next() (wire.FeedEvent, error) {
	for {
		line, err := wire.ReadLine(l.out, maxFeedLine)
		if errors.Is(err, wire.ErrLineTooLong) {
			continue
		}
		if err != nil {
			return wire.FeedEvent{}, err
		}
		var ev wire.FeedEvent
		if json.Unmarshal(line, &ev) == nil {
			return ev, nil
		}
	}
}

// Console is what a Link tells of the fleet: a tui.Model.
type Console interface {
	// Observer takes the requests that wait on the hub, and the runs
	// whose output streams here.
	Observer() queue.Observer
	// Logged takes History's entries: outcomes of requests decided
	// elsewhere, who approved a run.
	Logged([]queue.Event)
	// LinkChanged says the link went up or down (Link says how).
	LinkChanged()
}

// Run passes the feed's events on to c until Close; a feed that stops is
// started again.
func (l *Link) Run(c Console) {
	l.obs, l.logged, l.linked = c.Observer(), c.Logged, c.LinkChanged
	l.run()
}

// run passes the feed's events on until the console closes the link. A
// feed that stops is started again (each second, while it cannot be):
// the requests it sends anew that the console shows already are the same
// values, and those that left meanwhile come as gone.
func (l *Link) run() {
	defer close(l.ended)
	for {
		ev, err := l.next()
		if err == nil {
			l.handle(ev)
			continue
		}
		l.mu.Lock()
		l.endErr = err
		l.ok, l.text = false, "the hub feed stopped: "+err.Error()
		for seq, ch := range l.waiting {
			ch <- "the hub feed stopped"
			delete(l.waiting, seq)
		}
		closing := l.closing || l.respawn == nil
		if l.cmd != nil {
			go func(cmd *osexec.Cmd) { _ = cmd.Wait() }(l.cmd)
		}
		l.mu.Unlock()
		l.linked()
		if closing {
			return
		}
		for {
			time.Sleep(time.Second)
			l.mu.Lock()
			closing := l.closing
			l.mu.Unlock()
			if closing {
				return
			}
			if err := l.respawn(); err == nil {
				l.linked()
				break
			} else {
				l.mu.Lock()
				l.text = "the hub feed does not start again: " + err.Error() + "; retrying"
				l.mu.Unlock()
				l.linked()
			}
		}
	}
}

// decide sends one decision and waits for the hub to hold or refuse it.
func (l *Link) decide(ctx context.Context, op string, shown *queue.Request, reason string, scope queue.Scope) error {
	box, id, _ := strings.Cut(shown.ID, "/")
	if len(reason) > maxReason {
		reason = reason[:maxReason]
	}
	l.mu.Lock()
	if l.endErr != nil {
		l.mu.Unlock()
		return errors.New("the link to the hub is down (the hub feed stopped); restart the console")
	}
	s := l.shown[shown]
	if s == nil {
		l.mu.Unlock()
		return errors.New("it no longer waits on the hub")
	}
	l.seq++
	seq := l.seq
	ch := make(chan string, 1)
	l.waiting[seq] = ch
	// The digest of what the person was shown, not of whatever the hub
	// holds by the time the decision lands.
	line, _ := json.Marshal(wire.FeedCommand{Seq: seq, Op: op, Box: box, ID: id, Digest: s.digest,
		DiffDigest: wire.DiffDigest(s.diff, s.diffErr), Reason: reason, Scope: wire.ScopeOf(scope)})
	_, err := l.in.Write(append(line, '\n'))
	l.mu.Unlock()
	if err != nil {
		return fmt.Errorf("the hub feed stopped: %w", err)
	}
	select {
	case msg := <-ch:
		if msg != "" {
			return errors.New(msg)
		}
		return nil
	case <-l.ended:
		return errors.New("the hub feed stopped before the hub answered; look at the request again once the console is restarted")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// maxReason bounds a deny reason sent to the hub.
const maxReason = 4 << 10

// Approve implements tui.Fleet.
func (l *Link) Approve(ctx context.Context, shown *queue.Request, scope queue.Scope) error {
	return l.decide(ctx, wire.Approve, shown, "", scope)
}

// Deny implements tui.Fleet.
func (l *Link) Deny(ctx context.Context, shown *queue.Request, reason string) error {
	return l.decide(ctx, wire.Deny, shown, reason, "")
}

// Link implements tui.Fleet: the hub's address (or why it cannot be
// reached), and what the hub took off its queue, if it did: those
// requests wait on their boxes, to be decided there.
func (l *Link) Link() (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.dropped == 1:
		return l.text + " · 1 request dropped by the hub: " + l.dropNote, l.ok
	case l.dropped > 1:
		return fmt.Sprintf("%s · %d requests dropped by the hub, the last %s", l.text, l.dropped, l.dropNote), l.ok
	}
	return l.text, l.ok
}

// Preview implements tui.Previewer: the diff the box published with a
// file request.
func (l *Link) Preview(req *queue.Request) (string, error) {
	l.mu.Lock()
	s := l.shown[req]
	l.mu.Unlock()
	switch {
	case s == nil:
		return "", errors.New("it no longer waits on the hub")
	case s.diffErr != "":
		return "", errors.New(s.diffErr)
	}
	return s.diff, nil
}

// Close ends the feed (and the link) and waits for it.
func (l *Link) Close() {
	l.mu.Lock()
	l.closing = true
	cmd, in := l.cmd, l.in
	l.mu.Unlock()
	_ = in.Close()
	select {
	case <-l.ended:
	case <-time.After(3 * time.Second):
		_ = cmd.Process.Kill()
		<-l.ended
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(p)
	if over := t.b.Len() - t.max; over > 0 {
		t.b.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}

// lastLine is the last line of s.
func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
