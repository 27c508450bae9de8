package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/hub"
	"github.com/sluice-dev/sluice/queue"
)

// fleetBox is one box bridged to the hub: its spool, audit log, and the
// runs its engine carried out.
type fleetBox struct {
	name  string
	spool *queue.Spool
	log   *audit.Log
	mu    sync.Mutex
	ran   map[string]int // request id → times run
}

// Approve implements hub.Applier as the box's engine does: the claim
// makes it run once; a run writes "ran COMMAND".
func (b *fleetBox) Approve(ctx context.Context, id, digest, actor string, out io.Writer) error {
	return b.ApproveScoped(ctx, id, digest, actor, "", out)
}

// ApproveScoped implements hub.ScopedApplier, as the box's own sluice
// approve --run does.
func (b *fleetBox) ApproveScoped(ctx context.Context, id, digest, actor string, scope queue.Scope, out io.Writer) error {
	eng := &queue.Engine{Spool: b.spool, Recorder: b.log, AuditPath: b.log.Path(), Judge: askAll{}, Runner: b}
	_, err := eng.ApproveAs(ctx, id, queue.Approval{Actor: actor, ShownDigest: digest, Scope: scope,
		Output: func(p []byte) { _, _ = out.Write(p) }})
	return err
}

// Deny implements hub.Applier.
func (b *fleetBox) Deny(_ context.Context, id, actor, reason string) error {
	eng := &queue.Engine{Spool: b.spool, Recorder: b.log, AuditPath: b.log.Path()}
	_, err := eng.Deny(id, actor, reason)
	return err
}

// Run implements queue.Runner.
func (b *fleetBox) Run(_ context.Context, req *queue.Request, ro queue.RunOptions) (queue.Result, string) {
	b.mu.Lock()
	b.ran[req.ID]++
	b.mu.Unlock()
	if ro.Output != nil {
		ro.Output([]byte("ran " + req.Command + "\n"))
	}
	code := 0
	return queue.Result{Version: queue.Version, ID: req.ID, Status: queue.StatusDone, ExitCode: &code}, ""
}

func (b *fleetBox) runs(id string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ran[id]
}

type askAll struct{}

func (askAll) Judge(*queue.Request) queue.Verdict {
	return queue.Verdict{Action: queue.ActionAsk, Category: "mutating", Risk: "medium", Profile: "mutating"}
}

// ask submits a command on the box, with the engine's queued line that
// leaves it to a person (what the bridge publishes).
func (b *fleetBox) ask(t *testing.T, command string) string {
	t.Helper()
	req := &queue.Request{Kind: queue.KindExec, Command: command, Cwd: "/home/dev/app", Agent: "claude-code"}
	return b.submit(t, req, &queue.Verdict{Action: queue.ActionAsk, Category: "mutating", Risk: "medium", Profile: "mutating"})
}

// submit submits req on the box with the engine's queued line giving
// verdict v, and returns its key on the hub.
func (b *fleetBox) submit(t *testing.T, req *queue.Request, v *queue.Verdict) string {
	t.Helper()
	if err := b.spool.Submit(req); err != nil {
		t.Fatal(err)
	}
	ev := queue.NewEvent(queue.EventQueued, req)
	ev.Actor, ev.Verdict = "policy", v
	if err := b.log.Record(ev); err != nil {
		t.Fatal(err)
	}
	return hub.Key(b.name, req.ID)
}

// fleet is a hub, two boxes bridged to it, and the web server over a Hub
// source holding the console credential "web".
type fleet struct {
	rig
	st    *hub.Store
	h     *hub.Hub
	addr  string
	creds map[string]*hub.Creds
	boxes map[string]*fleetBox
	src   *Hub
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	return newFleetWith(t, nil)
}

// newFleetWith is newFleet with the server on clock now (nil: the test's
// settable clock).
func newFleetWith(t *testing.T, now func() time.Time) *fleet {
	t.Helper()
	st, err := hub.Open(filepath.Join(t.TempDir(), "hub"))
	if err != nil {
		t.Fatal(err)
	}
	f := &fleet{st: st, creds: map[string]*hub.Creds{}, boxes: map[string]*fleetBox{}}
	for name, role := range map[string]string{"b1": hub.RoleBox, "b2": hub.RoleBox, "web": hub.RoleConsole, "c1": hub.RoleConsole} {
		c, _, err := st.Add(name, role, "")
		if err != nil {
			t.Fatal(err)
		}
		f.creds[name] = c
	}
	f.h, err = hub.StartHub(hub.HubOptions{Listen: "127.0.0.1:0", Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.h.Shutdown() })
	f.addr = f.h.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for _, name := range []string{"b1", "b2"} {
		dir := t.TempDir()
		sp, err := queue.Open(filepath.Join(dir, "spool"))
		if err != nil {
			t.Fatal(err)
		}
		log, err := audit.Open(filepath.Join(dir, "audit.log"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { log.Close() })
		sp.Recorder = log
		b := &fleetBox{name: name, spool: sp, log: log, ran: map[string]int{}}
		f.boxes[name] = b
		cl, err := hub.Connect(ctx, f.h.URL(), f.creds[name])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		br := &hub.Box{Name: name, Spool: sp, AuditPath: log.Path(), Client: cl, Apply: b, Every: 50 * time.Millisecond,
			Wait: 300 * time.Millisecond}
		wg.Go(func() { _ = br.Run(ctx) })
	}
	f.src, err = ConnectHub(ctx, f.h.URL(), f.creds["web"], HubOptions{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.src.Close)
	wg.Go(func() { _ = f.src.Run(ctx) })

	store, err := OpenStore(filepath.Join(t.TempDir(), "web"))
	if err != nil {
		t.Fatal(err)
	}
	f.rig = rig{t: t, store: store, clk: &clock{t: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}}
	if now == nil {
		now = f.clk.now
	}
	f.srv, err = NewServer(f.src, store, Options{Person: "alice", Now: now, Loopback: true})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// waitQueued waits until the page lists every key.
func (f *fleet) waitQueued(d device, keys ...string) map[string]itemView {
	f.t.Helper()
	var q map[string]itemView
	until(f.t, fmt.Sprintf("the page lists %v", keys), func() bool {
		q = f.list(d)
		for _, k := range keys {
			if q[k].State != queue.StatePending {
				return false
			}
		}
		return true
	})
	return q
}

// approve approves key from d as the page does: opened, the grace waited
// out, the served digest and view posted.
func (f *fleet) approve(d device, key string) (int, map[string]any) {
	f.t.Helper()
	v := f.show(d, key)
	f.clk.add(DefaultGrace)
	w := f.as(d, "POST", "/api/request/"+key+"/approve", approveBody(v))
	var out map[string]any
	_ = json.Unmarshal(w.Body.Bytes(), &out)
	return w.Code, out
}

// until polls cond (for up to 15 s: a shared, loaded machine).
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting until %s", what)
}

// The fleet on the page: a request from each box appears with its box;
// approving each through the page's API decides it on the hub, in the
// device's name, and its box runs it once, its output on the page; a
// request another console decided first is refused, naming who won.
func TestHubSourceApprovesOnBothBoxes(t *testing.T) {
	f := newFleet(t)
	phone := f.pair("phone")
	k1, k2 := f.boxes["b1"].ask(t, "make one"), f.boxes["b2"].ask(t, "make two")
	q := f.waitQueued(phone, k1, k2)
	if q[k1].Box != "b1" || q[k2].Box != "b2" || text(q[k1].Summary) != "make one" {
		t.Fatalf("the rows: %+v / %+v", q[k1], q[k2])
	}
	for _, k := range []string{k1, k2} {
		d := f.show(phone, k)
		if d.Digest == "" || d.Command == nil || d.Verdict == nil || d.Verdict.Category != "mutating" {
			t.Fatalf("the detail of %s: %+v", k, d)
		}
		// Too soon: refused before the hub hears of it.
		w := f.as(phone, "POST", "/api/request/"+k+"/approve", approveBody(d))
		if w.Code != http.StatusTooEarly {
			t.Fatalf("an approval within the grace: %d %s", w.Code, w.Body)
		}
	}
	for _, k := range []string{k1, k2} {
		code, out := f.approve(phone, k)
		if code != http.StatusOK {
			t.Fatalf("approving %s: %d %v", k, code, out)
		}
	}
	for _, k := range []string{k1, k2} {
		box, id, _ := hub.SplitKey(k)
		b := f.boxes[box]
		until(t, k+"'s outcome on the page", func() bool { _, err := f.src.Result(k); return err == nil })
		if n := b.runs(id); n != 1 {
			t.Fatalf("%s ran %d times", k, n)
		}
		out, _, done, err := f.src.Output(k, 0, 1<<20)
		if err != nil || !done || !strings.Contains(string(out), "ran make ") {
			t.Fatalf("%s's output on the page: %q done=%v err=%v", k, out, done, err)
		}
		ev, by, ok := f.src.Winner(k)
		if !ok || ev != "approved" || by != "alice/phone (via web)@web" {
			t.Fatalf("%s decided %q by %q (%v): want approved by the device, at console web", k, ev, by, ok)
		}
		// The box's audit chain names the same.
		if e, err := audit.Decision(b.log.Path(), id, time.Time{}); err != nil || e.Event != queue.EventApproved || e.Actor != by+" (via the hub)" {
			t.Fatalf("%s in box %s's audit log: %+v, %v; want approved by %q (via the hub)", k, box, e, err, by)
		}
	}
	if q := f.list(phone); len(q) != 0 {
		t.Fatalf("the queue after both ran: %v", q)
	}
	hist := f.src.History()
	if len(hist) != 2 || hist[0].Status != queue.StatusDone || hist[0].Decision != queue.EventApproved {
		t.Fatalf("History: %+v", hist)
	}

	// A lost race: another console decides first; the page's approval
	// is refused, and says who won.
	k3 := f.boxes["b2"].ask(t, "make three")
	f.waitQueued(phone, k3)
	v := f.show(phone, k3)
	f.clk.add(DefaultGrace)
	c1, err := hub.Connect(context.Background(), f.h.URL(), f.creds["c1"])
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	box, id, _ := hub.SplitKey(k3)
	if _, err := c1.Decide(context.Background(), hub.Choice{Box: box, ID: id, Decision: hub.Deny, As: "bob", Reason: "not now"}); err != nil {
		t.Fatal(err)
	}
	w := f.as(phone, "POST", "/api/request/"+k3+"/approve", approveBody(v))
	var lost struct {
		Error   string  `json:"error"`
		Decided decided `json:"decided"`
	}
	_ = json.Unmarshal(w.Body.Bytes(), &lost)
	if w.Code != http.StatusConflict || lost.Decided.Event != "denied" || text(lost.Decided.By) != "bob@c1" {
		t.Fatalf("approving what c1 denied: %d %s", w.Code, w.Body)
	}
	if n := f.boxes["b2"].runs(id); n != 0 {
		t.Fatalf("the denied request ran %d times", n)
	}
}

// The hub killed and started again: the source lists the hub's queue
// again as soon as it is back, the same queue, and approvals go on.
func TestHubSourceAfterHubRestart(t *testing.T) {
	f := newFleet(t)
	phone := f.pair("phone")
	k1, k2 := f.boxes["b1"].ask(t, "make one"), f.boxes["b2"].ask(t, "make two")
	before := f.waitQueued(phone, k1, k2)
	_, listings := f.src.Connected()

	f.h.Shutdown()
	until(t, "the source sees the hub go", func() bool { up, _ := f.src.Connected(); return !up })
	if q := f.list(phone); len(q) != 2 {
		t.Fatalf("while the hub is down the page shows what waited: %v", q)
	}
	if code, out := f.approve(phone, k1); code != http.StatusConflict || !strings.Contains(fmt.Sprint(out["error"]), "hub cannot be reached") {
		t.Fatalf("approving while the hub is down: %d %v", code, out)
	}
	if _, err := newHubAt(f); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	until(t, "the hub's queue listed anew", func() bool {
		up, n := f.src.Connected()
		return up && n > listings
	})
	t.Logf("the queue was listed again %v after the hub was back", time.Since(back).Round(time.Millisecond))
	after := f.list(phone)
	if !slices.Equal(sortedKeys(before), sortedKeys(after)) {
		t.Fatalf("the queue after the restart: %v, before: %v", sortedKeys(after), sortedKeys(before))
	}
	code, out := f.approve(phone, k2)
	if code != http.StatusOK {
		t.Fatalf("approving after the restart: %d %v", code, out)
	}
	_, id, _ := hub.SplitKey(k2)
	until(t, "b2 runs it", func() bool { return f.boxes["b2"].runs(id) == 1 })
	_, id1, _ := hub.SplitKey(k1)
	if n := f.boxes["b1"].runs(id1); n != 0 {
		t.Fatalf("what was refused while the hub was down ran %d times", n)
	}
}

func sortedKeys(m map[string]itemView) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// text is a Shown as plain text, its lines joined by \n.
func text(s Shown) string {
	var b strings.Builder
	for i, l := range s.Lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		for _, sg := range l {
			b.WriteString(sg.T)
		}
	}
	return b.String()
}

// A box's credentials decide nothing: the page refuses them before it
// connects.
func TestConnectHubWantsAConsole(t *testing.T) {
	st, err := hub.Open(filepath.Join(t.TempDir(), "hub"))
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := st.Add("b1", hub.RoleBox, "nats://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ConnectHub(context.Background(), "", c, HubOptions{}); err == nil || !strings.Contains(err.Error(), "add-console") {
		t.Fatalf("a box's credentials: %v", err)
	}
}

// newHubAt starts the fleet's hub again, on its address and store.
func newHubAt(f *fleet) (*hub.Hub, error) {
	h, err := hub.StartHub(hub.HubOptions{Listen: f.addr, Store: f.st})
	if err != nil {
		return nil, err
	}
	f.h = h
	return h, nil
}

// TestHubSourceConnectScopes: over the hub, a connect request is allowed
// for the rest of its run (the decision's scope reaches the box's proxy)
// or once.
func TestHubSourceConnectScopes(t *testing.T) {
	f := newFleet(t)
	phone := f.pair("phone")
	b := f.boxes["b1"]
	for _, scope := range []queue.Scope{queue.ScopeRun, queue.ScopeOnce} {
		req := &queue.Request{Kind: queue.KindConnect, Host: "registry.example", Port: 443, RunID: queue.NewID(),
			Command: "npm install", Cwd: "/home/dev/app", Agent: "claude-code"}
		key := b.submit(t, req, &queue.Verdict{Action: queue.ActionAsk, Category: "networked", Risk: "medium"})
		row := f.waitQueued(phone, key)[key]
		if row.Connect == nil || text(row.Connect.Target) != "registry.example:443" || row.Approve == nil {
			t.Fatalf("the row: %+v %+v", row.Connect, row.Approve)
		}
		if w := f.as(phone, "POST", "/api/request/"+key+"/approve", rowApproval(row, scope)); w.Code != http.StatusOK {
			t.Fatalf("%s over the hub: %d %s", scope, w.Code, w.Body)
		}
		var res *queue.Result
		until(t, "the box answers the proxy", func() bool {
			r, err := b.spool.ReadResult(req.ID)
			res = r
			return err == nil
		})
		if res.Decision != queue.Allow || res.Scope != scope {
			t.Fatalf("the proxy's answer to %s: %+v", scope, res)
		}
	}
}
