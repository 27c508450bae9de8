package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/sluice-dev/sluice/queue"
)

// submitConnect queues a run's question about a host, as its proxy would.
func (f *fixture) submitConnect(host string, port int) *queue.Request {
	f.t.Helper()
	req := &queue.Request{Kind: queue.KindConnect, Host: host, Port: port, RunID: "01JDH7D3RRW0000000HQ1DER5X",
		Command: "npm install", Cwd: "/home/me/app", Agent: "claude-code"}
	if err := f.sp.Submit(req); err != nil {
		f.t.Fatal(err)
	}
	list, err := f.sp.List() // shown as read from its file
	if err != nil {
		f.t.Fatal(err)
	}
	for _, e := range list {
		if e.ID == req.ID {
			req = e.Request
		}
	}
	f.m.feed.Pending(req, queue.Verdict{Action: queue.ActionAsk, Category: "networked", Risk: "medium"})
	f.drain()
	return req
}

// A connect request shows as the run wanting the host, with its answers;
// r allows it for the rest of the run, y once, n refuses at once.
func TestConnectKeys(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	forRun := f.submitConnect("registry.evil.example", 443)
	screen := ansi.Strip(f.m.render())
	if !strings.Contains(screen, "wants registry.evil.example:443 — y once · r this run · A rule · n") {
		t.Fatalf("the question is not shown:\n%s", screen)
	}
	if cmd := f.press(f.m.keys.ApproveRun); cmd != nil {
		t.Fatal("r during the grace period returned a command")
	}
	f.clock.add(time.Second)
	f.run(f.press(f.m.keys.ApproveRun))
	if res := f.result(forRun.ID); res.Decision != queue.Allow || res.Scope != queue.ScopeRun || res.Status != queue.StatusDecided {
		t.Errorf("r: result %+v, want allowed for the run", res)
	}

	once := f.submitConnect("a.example", 80)
	f.clock.add(time.Second)
	f.run(f.press(f.m.keys.Yes))
	if res := f.result(once.ID); res.Decision != queue.Allow || res.Scope != queue.ScopeOnce {
		t.Errorf("y: result %+v, want allowed once", res)
	}

	no := f.submitConnect("b.example", 80)
	f.run(f.press(f.m.keys.No)) // no grace to say no, nor a reason
	if res := f.result(no.ID); res.Decision != queue.Deny {
		t.Errorf("n: result %+v, want denied", res)
	}
}

func TestNetSummary(t *testing.T) {
	t.Parallel()
	got := netSummary([]queue.Contact{
		{Host: "registry.npmjs.org", Port: 443, Sent: 1234, Received: 45678, AllowedBy: "verdict"},
		{Host: "evil.example", Port: 443, AllowedBy: "refused: not in this run's hosts"},
		{Host: "::1", Port: 80, Sent: 12, Received: 3_400_000, AllowedBy: "asked-run"},
	})
	if want := "net: registry.npmjs.org:443 ↑1.2k ↓45k · [::1]:80 ↑12 ↓3.4M · 1 refused"; got != want {
		t.Errorf("netSummary = %q, want %q", got, want)
	}
	if netSummary(nil) != "" {
		t.Error("a run without contacts has a summary")
	}
}

// Once a run's question is answered, the output pane shows a run's
// output, not the question's "it did not run".
func TestConnectAnsweredPaneKeepsTheRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	req := f.submitPastGrace("echo fetched")
	f.run(f.press(f.m.keys.Approve))
	f.drain()
	q := f.submitConnect("registry.evil.example", 443)
	f.run(f.press(f.m.keys.No))
	f.drain()
	if f.m.byID[q.ID] == nil {
		t.Fatal("the answered question is not in History")
	}
	if r := f.m.shownRun(); r == nil || r.req.ID != req.ID {
		t.Fatalf("the output pane shows %+v, want the run %s", r, req.ID)
	}
}
