package queue

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func connectReq(host string, port int) *Request {
	return &Request{Version: Version, ID: NewID(), Kind: KindConnect, Host: host, Port: port,
		RunID: NewID(), Command: "npm install", CreatedAt: time.Now().UTC()}
}

func TestConnectValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		edit func(*Request)
		want string // "" valid
	}{
		{"valid", func(*Request) {}, ""},
		{"ipv6", func(r *Request) { r.Host = "2001:db8::1" }, ""},
		{"execute mode", func(r *Request) { r.Mode = ModeExecute }, "decide mode only"},
		{"no host", func(r *Request) { r.Host = "" }, "needs a \"host\""},
		{"url", func(r *Request) { r.Host = "evil.test/x" }, "not a host name"},
		{"space", func(r *Request) { r.Host = "a b" }, "not a host name"},
		{"userinfo", func(r *Request) { r.Host = "u@evil.test" }, "not a host name"},
		{"port 0", func(r *Request) { r.Port = 0 }, "port"},
		{"port high", func(r *Request) { r.Port = 65536 }, "port"},
		{"run id", func(r *Request) { r.RunID = "../x" }, "run_id"},
	} {
		r := connectReq("registry.evil.example", 443)
		tc.edit(r)
		err := r.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	r := connectReq("registry.evil.example", 443)
	if got := r.Summary(); got != "npm install wants registry.evil.example:443" {
		t.Errorf("Summary = %q", got)
	}
	r.Host, r.Command = "2001:db8::1", ""
	if got := r.Summary(); got != "connect [2001:db8::1]:443" {
		t.Errorf("Summary = %q", got)
	}
	if r.EffectiveMode() != ModeDecide {
		t.Errorf("mode %s, want decide", r.EffectiveMode())
	}
	// It round-trips through the file form.
	b, _ := json.Marshal(r)
	got, err := DecodeRequest(b, r.ID)
	if err != nil || got.Host != r.Host || got.Port != r.Port || got.RunID != r.RunID {
		t.Fatalf("decode %s: %+v, %v", b, got, err)
	}
}

// countRunner counts the requests it was handed.
type countRunner struct{ n atomic.Int32 }

func (c *countRunner) Run(context.Context, *Request, RunOptions) (Result, string) {
	c.n.Add(1)
	return Result{Status: StatusDone, ExitCode: new(int)}, ""
}

// A connect request is a question: a person's allow answers it with its
// scope, recorded; nothing runs.
func TestConnectApproveScope(t *testing.T) {
	t.Parallel()
	sp := newSpool(t)
	rec := &memRecorder{}
	obs := chanObserver{ch: make(chan string, 100)}
	seen := map[string]bool{}
	run := &countRunner{}
	e := &Engine{Spool: sp, Judge: wordJudge{}, Runner: run, Recorder: rec, Observer: obs}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error)
	go func() { served <- e.Serve(ctx) }()
	defer func() { cancel(); <-served }()

	once, forRun, no := connectReq("a.test", 443), connectReq("b.test", 80), connectReq("c.test", 443)
	for _, r := range []*Request{once, forRun, no} {
		mustDo(t, sp.Submit(r))
		expectLine(t, obs.ch, seen, "pending "+r.ID+" ask")
	}
	res, err := e.ApproveAs(ctx, once.ID, Approval{Actor: "alice"})
	mustDo(t, err)
	if res.Status != StatusDecided || res.Decision != Allow || res.Scope != ScopeOnce {
		t.Errorf("approve once: %+v", res)
	}
	res, err = e.ApproveAs(ctx, forRun.ID, Approval{Actor: "alice", Scope: ScopeRun})
	mustDo(t, err)
	if got := resultOf(t, sp, forRun.ID); res.Scope != ScopeRun || got.Scope != ScopeRun || got.Status != StatusDecided {
		t.Errorf("approve for the run: %+v, file %+v", res, got)
	}
	if ev, ok := rec.find(forRun.ID, EventApproved); !ok || ev.Scope != ScopeRun || ev.Host != "b.test:80" || ev.RunID != forRun.RunID {
		t.Errorf("approved event %+v", ev)
	}
	res, err = e.Deny(no.ID, "alice", "")
	mustDo(t, err)
	if res.Decision != Deny || res.Scope != "" {
		t.Errorf("deny: %+v", res)
	}
	if _, ok := rec.find(once.ID, EventStarted); ok || run.n.Load() != 0 {
		t.Errorf("a connect request was run (%d runs)", run.n.Load())
	}
}
