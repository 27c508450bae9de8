package tui

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/sluice-dev/sluice/policy"
	"github.com/sluice-dev/sluice/queue"
)

// eventLog keeps the audit lines the engine records.
type eventLog struct {
	mu     sync.Mutex
	events []queue.Event
}

func (l *eventLog) Record(ev queue.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
	return nil
}

func (l *eventLog) approved(id string) *queue.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.events {
		if l.events[i].ID == id && l.events[i].Event == queue.EventApproved {
			return &l.events[i]
		}
	}
	return nil
}

// hostRuleFixture is a console whose A keeps network_allow entries in a
// real policy file, as sluice console does.
func hostRuleFixture(t *testing.T) (*fixture, string, *eventLog) {
	t.Helper()
	f := newFixture(t)
	file := filepath.Join(t.TempDir(), "policy.toml")
	if err := os.WriteFile(file, []byte("# mine\n[defaults]\nmutating = \"ask\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const comment = "allowed in the console"
	f.m.d.opt.Rules = RuleFuncs{
		ProposeHost: policy.HostProposals,
		HostText:    func(_ *queue.Request, e string) (string, error) { return policy.NetworkAllowText(file, e, comment) },
		AddHost: func(_ *queue.Request, e string) (string, error) {
			_, err := policy.AppendNetworkAllow(file, e, comment)
			return "~/policy.toml", err
		},
		// As if the audit log held two asks for this host on 443 and
		// one more under the domain.
		CountHost: func(entries []string) ([]int, error) {
			n := make([]int, len(entries))
			for i, e := range entries {
				n[i] = map[string]int{"registry.evil.example:443": 2, "registry.evil.example": 2, "*.evil.example": 3}[e]
			}
			return n, nil
		},
	}
	f.m.d.opt.PolicyFile = "~/policy.toml"
	rec := &eventLog{}
	f.m.d.opt.Engine.Recorder = rec
	return f, file, rec
}

// A on a connect request shows the network_allow entry it will write
// and where, narrow or wide; y writes it (the file loads, and later runs
// get the host), allows this run for the rest of it, and the audit log's
// approved line names the rule.
func TestConnectRuleDialog(t *testing.T) {
	t.Parallel()
	f, file, rec := hostRuleFixture(t)
	req := f.submitConnect("registry.evil.example", 443)
	if cmd := f.press(f.m.keys.ApproveRule); cmd != nil || f.m.dlg != nil {
		t.Fatal("A during the grace period did something")
	}
	f.clock.add(time.Second)
	f.run(f.press(f.m.keys.ApproveRule))
	if _, ok := f.m.dlg.(*hostRuleDialog); !ok {
		t.Fatalf("A opened %T (status %q), want the host rule dialog", f.m.dlg, f.m.status)
	}
	screen := ansi.Strip(f.m.render())
	for _, want := range []string{"npm install wants registry.evil.example:443", `network_allow = ["registry.evil.example"]`,
		"registry.evil.example on any port", "~/policy.toml", "y: allow and keep the rule", "*.evil.example",
		"It would have admitted 2 past connection request(s)"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the dialog lacks %q:\n%s", want, screen)
		}
	}
	// Wider is a choice, never the offer: → shows the wildcard, ← back.
	f.update(keyMsg(">"))
	if s := ansi.Strip(f.m.render()); !strings.Contains(s, `network_allow = ["*.evil.example"]`) || !strings.Contains(s, "every name under evil.example (not evil.example itself)") ||
		!strings.Contains(s, "It would have admitted 3 past connection request(s)") {
		t.Errorf("→ does not show the wildcard:\n%s", s)
	}
	f.update(keyMsg("<"))
	f.update(keyMsg("<"))
	if s := ansi.Strip(f.m.render()); !strings.Contains(s, `network_allow = ["registry.evil.example:443"]`) || !strings.Contains(s, "on port 443 only") {
		t.Errorf("← does not narrow to the port:\n%s", s)
	}
	f.update(keyMsg(">"))
	f.run(f.press(f.m.keys.Yes))
	if f.m.dlg != nil {
		t.Fatal("the dialog stays open after y")
	}
	if res := f.result(req.ID); res.Decision != queue.Allow || res.Scope != queue.ScopeRun {
		t.Errorf("result %+v, want allowed for the rest of the run", res)
	}
	if !strings.Contains(f.m.status, `network_allow "registry.evil.example" added to ~/policy.toml`) || !strings.HasSuffix(f.m.status, "the run's connection goes ahead") {
		t.Errorf("status %q does not say where the rule went", f.m.status)
	}
	ev := rec.approved(req.ID)
	if ev == nil || ev.Scope != queue.ScopeRun || ev.Actor != "alice" || ev.Reason != `network_allow "registry.evil.example" added to ~/policy.toml` {
		t.Errorf("approved line %+v, want the person, the run's scope and the rule", ev)
	}
	// The file loads, and a later networked run reaches the host without
	// asking.
	p, err := policy.Load(policy.Options{User: file, UserRequired: true})
	if err != nil {
		t.Fatalf("the written file does not load: %v", err)
	}
	if v := p.Check("curl https://elsewhere.example/", policy.Env{Cwd: t.TempDir()}); !slices.Contains(v.Hosts, "registry.evil.example") {
		t.Errorf("a later run's hosts %q lack the host", v.Hosts)
	}
	if got, _ := os.ReadFile(file); !strings.Contains(string(got), "# mine\n[defaults]") {
		t.Errorf("the file's own text changed:\n%s", got)
	}
}

// Esc (or any other key) in the dialog keeps nothing and answers
// nothing: the connection still waits for y, r or n.
func TestConnectRuleDialogNo(t *testing.T) {
	t.Parallel()
	f, file, _ := hostRuleFixture(t)
	// An audit log that cannot be read leaves the count unknown, not the
	// dialog shut.
	rules := f.m.d.opt.Rules.(RuleFuncs)
	rules.CountHost = func([]string) ([]int, error) { return nil, errors.New("audit.jsonl: token too long") }
	f.m.d.opt.Rules = rules
	before, _ := os.ReadFile(file)
	req := f.submitConnect("db.corp.example", 5432)
	f.clock.add(time.Second)
	f.run(f.press(f.m.keys.ApproveRule))
	if s := ansi.Strip(f.m.render()); !strings.Contains(s, `network_allow = ["db.corp.example:5432"]`) {
		t.Errorf("a database port is not offered narrow first:\n%s", s)
	} else if !strings.Contains(s, "The audit log could not be read to count") {
		t.Errorf("the dialog does not say the count is unknown:\n%s", s)
	}
	f.run(f.update(keyMsg("esc")))
	if f.m.dlg != nil {
		t.Fatal("Esc left the dialog open")
	}
	if after, _ := os.ReadFile(file); string(after) != string(before) {
		t.Error("Esc wrote the file")
	}
	if res, _ := f.sp.ReadResult(req.ID); res != nil {
		t.Errorf("Esc answered the request: %+v", res)
	}
	f.run(f.press(f.m.keys.ApproveRun))
	if res := f.result(req.ID); res.Scope != queue.ScopeRun {
		t.Errorf("r after Esc: %+v", res)
	}
}

// A rule that cannot be written leaves the request waiting and says why;
// a console without rules says what it can do instead.
func TestConnectRuleRefused(t *testing.T) {
	t.Parallel()
	f, _, _ := hostRuleFixture(t)
	rules := f.m.d.opt.Rules.(RuleFuncs)
	rules.AddHost = func(*queue.Request, string) (string, error) { return "", errors.New("the disk is full") }
	f.m.d.opt.Rules = rules
	req := f.submitConnect("registry.evil.example", 443)
	f.clock.add(time.Second)
	f.run(f.press(f.m.keys.ApproveRule))
	f.run(f.press(f.m.keys.Yes))
	if !f.m.statusErr || !strings.Contains(f.m.status, "rule not added: the disk is full; the connection still waits") {
		t.Errorf("status %q", f.m.status)
	}
	if res, _ := f.sp.ReadResult(req.ID); res != nil {
		t.Errorf("a failed rule answered the request: %+v", res)
	}
	if it := f.m.find(req.ID); it == nil || it.busy {
		t.Error("the request is not left to answer")
	}

	f.m.d.opt.Rules = nil
	f.run(f.press(f.m.keys.ApproveRule))
	if f.m.dlg != nil || !strings.Contains(f.m.status, "no network_allow entry can name registry.evil.example:443 here; y once, r for this run") {
		t.Errorf("without rules: dialog %T, status %q", f.m.dlg, f.m.status)
	}
}

// Over the hub, r allows for the rest of the run through the hub, and A
// does the same, saying the rule is made on the box.
func TestFleetConnectScope(t *testing.T) {
	t.Parallel()
	f, fl := newFleetFixture(t)
	arrive := func(host string) *queue.Request {
		req := &queue.Request{ID: "b1/" + queue.NewID(), Kind: queue.KindConnect, Host: host, Port: 443, RunID: queue.NewID(),
			Command: "npm install", Cwd: "/home/dev/app", Agent: "claude-code", CreatedAt: time.Now()}
		f.m.Observer().Pending(req, queue.Verdict{Action: queue.ActionAsk, Category: "networked", Risk: "medium"})
		f.drain()
		f.clock.add(time.Second)
		return req
	}
	r1 := arrive("a.example")
	f.run(f.press(f.m.keys.ApproveRun))
	if len(fl.sent) != 1 || fl.sent[0] != "approve "+r1.ID+" for the run" {
		t.Fatalf("r sent %v, want an approval for the run", fl.sent)
	}
	if !strings.Contains(f.m.status, "allowed for the rest of its run b1") {
		t.Errorf("status %q", f.m.status)
	}
	f.m.Observer().Gone(r1.ID, queue.Gone)
	f.drain()
	r2 := arrive("b.example")
	f.run(f.press(f.m.keys.ApproveRule))
	if len(fl.sent) != 2 || fl.sent[1] != "approve "+r2.ID+" for the run" {
		t.Fatalf("A sent %v, want an approval for the run", fl.sent)
	}
	if f.m.dlg != nil || !strings.Contains(f.m.status, "make the rule on b1") {
		t.Errorf("A over the hub: dialog %T, status %q", f.m.dlg, f.m.status)
	}
	f.m.Observer().Gone(r2.ID, queue.Gone)
	f.drain()
	r3 := arrive("c.example")
	f.run(f.press(f.m.keys.Yes))
	if len(fl.sent) != 3 || fl.sent[2] != "approve "+r3.ID {
		t.Fatalf("y sent %v, want an approval once", fl.sent)
	}
}
