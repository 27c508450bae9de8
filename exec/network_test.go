//go:build linux

package exec

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/exec/sandbox"
	"github.com/sluice-dev/sluice/netproxy"
	"github.com/sluice-dev/sluice/queue"
)

// netModes are the two ways a networked run is held to its proxy: a
// network namespace of its own (through a sluice-box that is a link to
// this test binary) and, without one, Landlock's port rule.
func netModes(t *testing.T) map[string]string {
	t.Helper()
	box := boxLink(t)
	modes := map[string]string{"port": ""}
	if sandbox.BoxRefused(box) == "" {
		modes["own namespace"] = box
	}
	return modes
}

// boxLink is a sluice-box for a Runner's Confine.Box: a link to this
// test binary, whose TestMain acts as the box when started by that name.
func boxLink(tb testing.TB) string {
	tb.Helper()
	self, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	box := filepath.Join(tb.TempDir(), "sluice-box")
	if err := os.Symlink(self, box); err != nil {
		tb.Fatal(err)
	}
	return box
}

// netFixture is a confining runner whose runs' proxies resolve
// registry.test and evil.test to a local server (the test resolver
// table), which answers "hello from PATH".
type netFixture struct {
	*confineFixture
	server netip.AddrPort
}

func newNetFixture(t *testing.T, box string) *netFixture {
	t.Helper()
	if _, err := osexec.LookPath("curl"); err != nil {
		t.Skip("curl not installed")
	}
	f := newConfineFixture(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s", r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	addr := netip.MustParseAddrPort(srv.Listener.Addr().String())
	c := f.r.Confine
	c.Box = box
	// The server's address is the host's loopback: a rule must name it
	// for the names that resolve there to be reached (netproxy.Config).
	c.NetAllow = []string{addr.String()}
	c.resolve = func(_ context.Context, host string, _ int) ([]netip.AddrPort, error) {
		switch host {
		case "registry.test", "evil.test", "other.test":
			return []netip.AddrPort{addr}, nil
		}
		return nil, fmt.Errorf("no such host %s", host)
	}
	return &netFixture{confineFixture: f, server: addr}
}

// runNet runs cmd networked with the verdict's hosts given.
func (f *netFixture) runNet(t *testing.T, cmd string, hosts ...string) runOut {
	t.Helper()
	return f.run(t, cmd, nil, Options{Profile: "networked", Hosts: HostSet{Allow: hosts}})
}

// A networked run reaches the hosts its verdict names through its proxy,
// and its result lists exactly them; a host outside them is refused with
// the refusal line, without a hang. Both ways of holding the run to its
// proxy.
func TestNetworkedRunThroughProxy(t *testing.T) {
	t.Parallel()
	for mode, box := range netModes(t) {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			f := newNetFixture(t, box)
			o := f.runNet(t, "curl -fsS http://registry.test/pkg", "registry.test")
			if *o.res.ExitCode != 0 || !strings.Contains(string(o.log), "hello from /pkg") {
				t.Fatalf("allowed host: exit %d:\n%s", *o.res.ExitCode, o.log)
			}
			if !strings.HasPrefix(o.res.Sandbox, "networked; network: ") {
				t.Errorf("sandbox line %q, want the network's words", o.res.Sandbox)
			}
			if n := o.res.Network; len(n) != 1 || n[0].Host != "registry.test" || n[0].Port != 80 ||
				n[0].AllowedBy != "verdict" || n[0].Sent == 0 || n[0].Received == 0 {
				t.Errorf("network %+v, want registry.test:80 alone, allowed by the verdict, with bytes each way", n)
			}

			o = f.runNet(t, "curl -fsS http://evil.test/steal", "registry.test")
			if *o.res.ExitCode == 0 {
				t.Fatalf("refused host: exit 0:\n%s", o.log)
			}
			if want := "sluice: the run's proxy refused evil.test:80: not in this run's hosts"; sluiceNote(o.log) != want {
				t.Errorf("last line %q, want %q", sluiceNote(o.log), want)
			}
			if n := o.res.Network; len(n) != 1 || n[0].Host != "evil.test" || !strings.HasPrefix(n[0].AllowedBy, "refused: ") {
				t.Errorf("network %+v, want evil.test refused", n)
			}

			// The refusal is a line of its own after output that did
			// not end one.
			o = f.runNet(t, "curl -fs http://evil.test/steal >/dev/null 2>&1; printf 'fetching...'; exit 1", "registry.test")
			if want := "sluice: the run's proxy refused evil.test:80: not in this run's hosts"; sluiceNote(o.log) != want {
				t.Errorf("last line %q, want %q:\n%q", sluiceNote(o.log), want, o.log)
			}

			// Why a host was let through is the verdict's word for it,
			// and a policy's network_deny wins over the verdict's hosts.
			o = f.run(t, "curl -fsS http://registry.test/pkg; curl -fsS http://other.test/x", nil, Options{Profile: "networked",
				Hosts: HostSet{Allow: []string{"registry.test", "other.test"}, By: map[string]string{"registry.test": "knowledge: npm"},
					Deny: []string{"other.test"}}})
			if n := o.res.Network; len(n) != 2 || n[0].Host != "registry.test" || n[0].AllowedBy != "knowledge: npm" ||
				n[1].Host != "other.test" || n[1].AllowedBy != "refused: denied by rule other.test" {
				t.Errorf("network %+v, want registry.test allowed by knowledge: npm, other.test refused by its deny rule", n)
			}

			// The host's own loopback, by its address, is not reached
			// (a run of its own namespace has its own, where nothing
			// listens; through the proxy, it is a host service).
			o = f.runNet(t, "curl -fsS --noproxy '' http://127.0.0.2:"+fmt.Sprint(f.server.Port())+"/", "registry.test")
			if *o.res.ExitCode == 0 {
				t.Fatalf("the host's loopback was reached:\n%s", o.log)
			}
		})
	}
}

// askLog is an AskFunc that answers with answer and keeps the questions.
type askLog struct {
	mu     sync.Mutex
	asked  []Connect
	answer netproxy.Answer
	block  bool // never answer: wait for the timeout
}

func (a *askLog) ask(ctx context.Context, q Connect) (netproxy.Answer, error) {
	a.mu.Lock()
	a.asked = append(a.asked, q)
	a.mu.Unlock()
	if a.block {
		<-ctx.Done()
		return netproxy.AnswerDeny, ctx.Err()
	}
	return a.answer, nil
}

func (a *askLog) questions() []Connect {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Connect(nil), a.asked...)
}

// A host outside the run's set is asked about, naming the run; answered
// for the run, a second connection in the same run does not ask again,
// and a second run asks again. Nobody answering refuses.
func TestNetworkedRunAsks(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t, "")
	a := &askLog{answer: netproxy.AnswerRun}
	f.r.Ask = a.ask
	twice := "curl -fsS http://other.test/a && echo && curl -fsS http://other.test/b"
	o := f.runNet(t, twice, "registry.test")
	if *o.res.ExitCode != 0 || !strings.Contains(string(o.log), "hello from /b") {
		t.Fatalf("exit %d:\n%s", *o.res.ExitCode, o.log)
	}
	qs := a.questions()
	if len(qs) != 1 || qs[0].Host != "other.test" || qs[0].Port != 80 || qs[0].Command != twice || qs[0].RunID == "" {
		t.Fatalf("questions %+v, want one about other.test:80 naming the run", qs)
	}
	if n := o.res.Network; len(n) != 1 || n[0].AllowedBy != "asked-run" {
		t.Errorf("network %+v, want other.test allowed for the run", n)
	}
	o = f.runNet(t, "curl -fsS http://other.test/c", "registry.test")
	if *o.res.ExitCode != 0 || len(a.questions()) != 2 {
		t.Errorf("a second run: exit %d, %d questions; want it asked again", *o.res.ExitCode, len(a.questions()))
	}

	f.r.Confine.NetAskTimeout = time.Second
	f.r.Ask = (&askLog{block: true}).ask
	o = f.runNet(t, "curl -fsS http://other.test/d", "registry.test")
	if *o.res.ExitCode == 0 || !strings.Contains(sluiceNote(o.log), "other.test:80: nobody answered within 1s") {
		t.Errorf("unanswered: exit %d, last line %q", *o.res.ExitCode, sluiceNote(o.log))
	}
}

// acceptAll believes every result: the engine below records in memory.
type acceptAll struct{}

func (acceptAll) Verify(*queue.Request, *queue.Result) error { return nil }

// askJudge asks a person about every request.
type askJudge struct{}

func (askJudge) Judge(*queue.Request) queue.Verdict {
	return queue.Verdict{Action: queue.ActionAsk, Category: "networked", Risk: "medium"}
}

type nopRecorder struct{}

func (nopRecorder) Record(queue.Event) error { return nil }

// pendingObserver hands the requests waiting for a person to a channel.
type pendingObserver struct{ ch chan *queue.Request }

func (o pendingObserver) Pending(r *queue.Request, _ queue.Verdict)                       { o.ch <- r }
func (pendingObserver) Gone(string, queue.WatchOp)                                        {}
func (pendingObserver) Started(*queue.Request, queue.Verdict, queue.Decider) func([]byte) { return nil }
func (pendingObserver) Finished(*queue.Request, queue.Result)                             {}

// The live ask through the spool: the run's question is a connect request
// an engine shows a person; approved for the run, the connection goes
// through and the run's second one does not ask.
func TestNetworkedRunAsksThroughSpool(t *testing.T) {
	t.Parallel()
	f := newNetFixture(t, "")
	sp, err := queue.Open(filepath.Join(t.TempDir(), "spool"))
	if err != nil {
		t.Fatal(err)
	}
	obs := pendingObserver{ch: make(chan *queue.Request, 8)}
	e := &queue.Engine{Spool: sp, Judge: askJudge{}, Runner: noRunner{t}, Recorder: nopRecorder{}, Observer: obs}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- e.Serve(ctx) }()
	defer func() { cancel(); <-served }()
	f.r.Ask = SpoolAsk(sp, acceptAll{}, nil)
	f.r.Confine.NetAskTimeout = time.Minute

	req := execReq(t, "curl -fsS http://other.test/a && echo && curl -fsS http://other.test/b")
	req.Cwd = f.project
	done := make(chan runOut, 1)
	go func() { done <- run(ctx, t, f.r, req, Options{Profile: "networked"}, time.Minute) }()
	q := <-obs.ch
	if q.Kind != queue.KindConnect || q.Host != "other.test" || q.Port != 80 || q.RunID != req.ID || q.Command != req.Command {
		t.Fatalf("asked %+v", q)
	}
	if _, err := e.ApproveAs(ctx, q.ID, queue.Approval{Actor: "alice", Scope: queue.ScopeRun}); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if *o.res.ExitCode != 0 || !strings.Contains(string(o.log), "hello from /b") {
		t.Fatalf("exit %d:\n%s", *o.res.ExitCode, o.log)
	}
	select {
	case q := <-obs.ch:
		t.Errorf("asked again: %+v", q)
	default:
	}
}

// noRunner fails a test that hands it a request: a connect request is
// never run.
type noRunner struct{ t *testing.T }

func (r noRunner) Run(_ context.Context, req *queue.Request, _ queue.RunOptions) (queue.Result, string) {
	r.t.Errorf("request %s (%s) was run", req.ID, req.Kind)
	return queue.Result{Status: queue.StatusFailed}, ""
}
