package web

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// fakeSource is a Source in memory: the tests set its queue and see the
// decisions that reached it.
type fakeSource struct {
	mu         sync.Mutex
	items      map[string]*Item
	order      []string
	approvals  []string // "id digest by", then " scope" when one was given
	denials    []string // "id by reason"
	approveErr error
	winners    map[string][2]string
	changed    chan struct{}
}

func newFake() *fakeSource {
	return &fakeSource{items: map[string]*Item{}, winners: map[string][2]string{}, changed: make(chan struct{})}
}

func (f *fakeSource) put(id, command, digest string) {
	f.add(&Item{ID: id, State: queue.StatePending, Since: time.Now(), Digest: digest,
		Request: &queue.Request{Version: 1, ID: id, Kind: queue.KindExec, Command: command, Cwd: "/p", Agent: "claude"}})
}

// add queues it (in place of a request with its id, where there is one)
// and tells those waiting on Changed.
func (f *fakeSource) add(it *Item) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.items[it.ID]; !ok {
		f.order = append(f.order, it.ID)
	}
	f.items[it.ID] = it
	close(f.changed)
	f.changed = make(chan struct{})
}

// asks gives request id the verdict ask, in category.
func (f *fakeSource) asks(id, category string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.items[id].Verdict = &queue.Verdict{Action: queue.ActionAsk, Category: category}
}

func (f *fakeSource) Queue() []Item {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Item
	for _, id := range f.order {
		if it, ok := f.items[id]; ok {
			out = append(out, *it)
		}
	}
	return out
}

func (f *fakeSource) Item(id string) (*Item, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	it, ok := f.items[id]
	if !ok {
		return nil, ErrGone
	}
	c := *it
	return &c, nil
}

func (f *fakeSource) History() []Past { return nil }

func (f *fakeSource) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

func (f *fakeSource) Output(string, int64, int) ([]byte, int64, bool, error) {
	return nil, 0, true, nil
}

func (f *fakeSource) Approve(_ context.Context, id, digest, _, by string, scope queue.Scope) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.approveErr != nil {
		return f.approveErr
	}
	if _, ok := f.items[id]; !ok {
		return ErrGone
	}
	a := id + " " + digest + " " + by
	if scope != "" {
		a += " " + string(scope)
	}
	f.approvals = append(f.approvals, a)
	delete(f.items, id)
	f.winners[id] = [2]string{"approved", by}
	return nil
}

func (f *fakeSource) Deny(_ context.Context, id, by, reason string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.items[id]; !ok {
		return ErrGone
	}
	f.denials = append(f.denials, id+" "+by+" "+reason)
	delete(f.items, id)
	f.winners[id] = [2]string{"denied", by}
	return nil
}

func (f *fakeSource) Result(string) (*queue.Result, error) { return nil, queue.ErrNoResult }

func (f *fakeSource) Winner(id string) (string, string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w, ok := f.winners[id]
	return w[0], w[1], ok
}

func (f *fakeSource) decisions() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.approvals) + len(f.denials)
}

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type rig struct {
	t     *testing.T
	src   *fakeSource
	store *Store
	clk   *clock
	srv   *Server
	audit []queue.Event
}

func newRig(t *testing.T) *rig { t.Helper(); return newRigWith(t, false) }

// newRigWith is newRig, with web_require_passkey when passkey.
func newRigWith(t *testing.T, passkey bool) *rig {
	t.Helper()
	store, err := OpenStore(t.TempDir() + "/web")
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, src: newFake(), store: store, clk: &clock{t: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}}
	var mu sync.Mutex
	srv, err := NewServer(r.src, store, Options{Person: "alice", Now: r.clk.now, Loopback: true,
		RequirePasskey: passkey, RPID: "localhost", RPOrigins: []string{"http://localhost:8787"},
		Record: func(ev queue.Event) error { mu.Lock(); r.audit = append(r.audit, ev); mu.Unlock(); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	r.srv = srv
	return r
}

// device is a paired browser: its cookie and CSRF token.
type device struct {
	cookie, csrf string
}

// pair pairs a device named name through the page's own API.
func (r *rig) pair(name string) device {
	r.t.Helper()
	code, err := r.store.NewCode(name, "alice", r.clk.now())
	if err != nil {
		r.t.Fatal(err)
	}
	resp := r.do("GET", "/api/session", "", nil)
	var pre *http.Cookie
	for _, c := range resp.Result().Cookies() {
		if c.Name == preCookie {
			pre = c
		}
	}
	var sv sessionView
	_ = json.Unmarshal(resp.Body.Bytes(), &sv)
	resp = r.do("POST", "/api/pair", `{"code":"`+code+`"}`, map[string]string{
		"Cookie": preCookie + "=" + pre.Value, csrfHeader: sv.CSRF})
	if resp.Code != http.StatusOK {
		r.t.Fatalf("pair: %d %s", resp.Code, resp.Body)
	}
	var d device
	for _, c := range resp.Result().Cookies() {
		if c.Name == sessionCookie {
			d.cookie = c.Value
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
				r.t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict", c)
			}
		}
	}
	_ = json.Unmarshal(resp.Body.Bytes(), &sv)
	d.csrf = sv.CSRF
	return d
}

// do sends one request to the server (as from a loopback browser).
func (r *rig) do(method, path, body string, hdr map[string]string) *httptest.ResponseRecorder {
	r.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, "http://127.0.0.1:8787"+path, rd)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	r.srv.ServeHTTP(w, req)
	return w
}

// as sends a request from device d (cookie and CSRF token, same-origin).
func (r *rig) as(d device, method, path, body string) *httptest.ResponseRecorder {
	r.t.Helper()
	return r.do(method, path, body, map[string]string{"Cookie": sessionCookie + "=" + d.cookie, csrfHeader: d.csrf,
		"Origin": "http://127.0.0.1:8787", "Sec-Fetch-Site": "same-origin"})
}

// show fetches request id's detail as d and returns what approving it
// takes.
func (r *rig) show(d device, id string) detailView {
	r.t.Helper()
	w := r.as(d, "GET", "/api/request/"+id, "")
	if w.Code != http.StatusOK {
		r.t.Fatalf("GET request %s: %d %s", id, w.Code, w.Body)
	}
	var v detailView
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
		r.t.Fatal(err)
	}
	return v
}

func approveBody(v detailView) string {
	b, _ := json.Marshal(decisionIn{Digest: v.Digest, View: v.View})
	return string(b)
}

// putConnect queues a run's question about host:port, as its proxy would.
func (f *fakeSource) putConnect(id, host string, port int, digest string) {
	f.add(&Item{ID: id, State: queue.StatePending, Since: time.Now(), Digest: digest,
		Request: &queue.Request{Version: 1, ID: id, Kind: queue.KindConnect, Host: host, Port: port,
			RunID: "01JDH7D3RRW0000000HQ1DER5X", Command: "npm install", Cwd: "/p", Agent: "claude"},
		Verdict: &queue.Verdict{Action: queue.ActionAsk, Category: "networked"}})
}

// events opens d's event stream (/api/events) on a real HTTP server and
// returns its lines. The stream and the server close when the test ends.
func (r *rig) events(d device) *bufio.Scanner {
	r.t.Helper()
	hs := httptest.NewServer(r.srv)
	r.t.Cleanup(hs.Close)
	ctx, cancel := context.WithCancel(context.Background())
	r.t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", hs.URL+"/api/events", nil)
	if err != nil {
		r.t.Fatal(err)
	}
	req.Host = "127.0.0.1:8787"
	req.Header.Set("Cookie", sessionCookie+"="+d.cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { _ = resp.Body.Close() })
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	return sc
}

// list fetches the queue as d sees it, by id.
func (r *rig) list(d device) map[string]itemView {
	r.t.Helper()
	w := r.as(d, "GET", "/api/queue", "")
	if w.Code != http.StatusOK {
		r.t.Fatalf("GET queue: %d %s", w.Code, w.Body)
	}
	var rows []itemView
	if err := json.Unmarshal(w.Body.Bytes(), &rows); err != nil {
		r.t.Fatal(err)
	}
	out := map[string]itemView{}
	for _, v := range rows {
		out[v.ID] = v
	}
	return out
}

// rowApproval is the body approving a queue row as served (scope for a
// connect request).
func rowApproval(v itemView, scope queue.Scope) string {
	b, _ := json.Marshal(decisionIn{Digest: v.Approve.Digest, View: v.Approve.View, Scope: scope})
	return string(b)
}
