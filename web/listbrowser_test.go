package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluice-dev/sluice/internal/e2e"
	"github.com/sluice-dev/sluice/queue"
)

// asked is a connect request waiting as a run's proxy waits for it: its
// result comes on done.
type asked struct {
	id, run string // the request's id, and the short id of the run that asks
	done    chan *queue.Result
}

// askConnect queues a run's question about host:port in the box's spool,
// as a networked run's proxy does, and waits for its answer.
func (b *box) askConnect(host string, port int, command string) *asked {
	b.t.Helper()
	sp, err := queue.Open(b.spool)
	if err != nil {
		b.t.Fatal(err)
	}
	now := time.Now().UTC()
	req := &queue.Request{ID: queue.NewID(), Kind: queue.KindConnect, Host: host, Port: port, RunID: queue.NewID(),
		Command: command, Cwd: b.project, Agent: "claude-code", CreatedAt: now, ExpiresAt: now.Add(5 * time.Minute)}
	w, err := sp.NewWaiter(req.ID)
	if err != nil {
		b.t.Fatal(err)
	}
	if err := sp.Submit(req); err != nil {
		w.Close()
		b.t.Fatal(err)
	}
	a := &asked{id: req.ID, run: req.RunID[len(req.RunID)-8:], done: make(chan *queue.Result, 1)}
	go func() {
		defer w.Close()
		deadline := time.Now().Add(5 * time.Minute)
		for time.Now().Before(deadline) {
			res, err := w.Wait(100 * time.Millisecond)
			if err == nil {
				a.done <- res
				return
			}
			if !errors.Is(err, queue.ErrNoResult) {
				break
			}
		}
		close(a.done)
	}()
	return a
}

// answer is the result the waiting side got.
func (a *asked) answer(t *testing.T) *queue.Result {
	t.Helper()
	select {
	case res := <-a.done:
		if res == nil {
			t.Fatalf("connect request %s: no answer", a.id)
		}
		return res
	case <-time.After(e2e.Guard):
		t.Fatalf("connect request %s: no answer within %s", a.id, e2e.Guard)
	}
	return nil
}

// TestBrowserListApprovalAndConnect answers from the queue itself, in a
// real Chromium: a short command's row is approved once it has been on
// screen for the grace period (not while its tab was hidden), a long
// one's row offers Review only, an agent's markup, bidi override and
// escape sequence stay inert text in the row; a run's question about a
// hostile host name is answered once, for the run, and refused, and the
// waiting side gets each answer; a denial with a reason from the row
// reaches the agent; on a phone's viewport and a desktop's.
func TestBrowserListApprovalAndConnect(t *testing.T) {
	exe := chromium(t)
	b := startBox(t, "127.0.0.1")
	dir := shots(t)
	ctx := browser(t, exe)
	do(t, ctx, "phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2)))
	do(t, ctx, "open the page", chromedp.Navigate(b.url+"/#pair="+b.pairCode("phone")), chromedp.WaitVisible(chromedp.CSS("#pair-code")),
		chromedp.Click(chromedp.CSS("#pair-go")), chromedp.WaitVisible(chromedp.CSS("#items")))
	until(t, ctx, "the page is live", `document.getElementById("conn").textContent === "live"`)

	// The queue out of sight (History open) while the requests come.
	do(t, ctx, "History", chromedp.Click(chromedp.CSS("#tab-history")))
	once := b.askConnect("<img>evil.example", 443, "npm install \u202e")
	hostile := b.ask("echo '<script>window.pwned=1</script>' # \u202etxt \x1b[8m")
	long := b.ask("touch " + strings.Repeat("x", 130))
	hid := b.pendingID("window.pwned")
	lid := b.pendingID(strings.Repeat("x", 130))
	row := func(id string) string { return `document.querySelector("#items > li[data-id='` + id + `']")` }
	until(t, ctx, "the rows", row(hid)+` !== null && `+row(lid)+` !== null && `+row(once.id)+` !== null`)

	// What the agent wrote is text in the row, its hidden characters
	// escaped and flagged.
	sum := eval[string](t, ctx, row(hid)+`.querySelector(".sum").textContent`)
	if !strings.Contains(sum, "echo '<script>window.pwned=1</script>' #") || strings.ContainsAny(sum, "\u202e\x1b") {
		t.Errorf("the row's command: %q", sum)
	}
	if escs := eval[[]string](t, ctx, `[...`+row(hid)+`.querySelectorAll(".esc")].map(e => e.textContent)`); strings.Join(escs, " ") != `\u{202e} \x1b` {
		t.Errorf("escaped characters in the row: %q", escs)
	}
	if flag := eval[string](t, ctx, row(hid)+`.querySelector(".flag").textContent`); !strings.Contains(flag, "hidden characters") {
		t.Errorf("the row's flag: %q", flag)
	}
	if n := eval[int](t, ctx, `document.scripts.length + document.querySelectorAll("#items script, #items img").length`); n != 1 {
		t.Errorf("%d script or img elements, want 1 (app.js)", n)
	}

	// The long command's row cannot show it whole: Review, no Approve.
	if got := eval[string](t, ctx, `[...`+row(lid)+`.querySelectorAll("button")].map(b => b.textContent).join("|")`); got != "Review|Deny" {
		t.Errorf("the long row's buttons: %q", got)
	}

	// Hidden, the short row's Approve stays inert, even once the server
	// would take it.
	until(t, ctx, "the server's grace over", `st.ready.size > 0 && [...st.ready.values()].every(t => performance.now() > t + 100)`)
	approve := row(hid) + `.querySelector("button.list-approve")`
	if got := eval[string](t, ctx, `(b => b.disabled + " " + b.textContent)(`+approve+`)`); got != "true Approve (scroll to it)" {
		t.Fatalf("the row's Approve while the queue is hidden: %q", got)
	}

	// On screen: enabled after the grace period, counted from then.
	do(t, ctx, "the queue", chromedp.Click(chromedp.CSS("#tab-queue")))
	until(t, ctx, "the row's Approve enabled", `!`+approve+`.disabled`)
	shown := eval[float64](t, ctx, `+`+row(hid)+`.dataset.visibleSince`)
	enabled := eval[float64](t, ctx, `+`+approve+`.dataset.enabledAt`)
	grace := eval[float64](t, ctx, `st.session.grace_ms`)
	if grace < 1000 || enabled-shown < grace {
		t.Fatalf("Approve enabled %.0f ms after its row came on screen; the grace is %.0f ms", enabled-shown, grace)
	}
	if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the phone's queue is %d px wide, over 390", w)
	}
	shot(t, ctx, dir, "phone-list.png")

	// The connect request's row: a badge of its own, the run, its
	// command, the host as text, the countdown.
	crow := row(once.id)
	if badge := eval[string](t, ctx, crow+`.querySelector(".badge").textContent`); badge != "connect" {
		t.Errorf("the connect row's badge: %q", badge)
	}
	csum := eval[string](t, ctx, crow+`.querySelector(".sum").textContent`)
	if want := once.run + `'s npm install \u{202e} wants <img>evil.example:443`; csum != want {
		t.Errorf("the connect row: %q, want %q", csum, want)
	}
	if left := eval[string](t, ctx, crow+`.querySelector(".left").textContent`); !regexp.MustCompile(`^\d+[sm] left$`).MatchString(left) {
		t.Errorf("the connect row's countdown: %q", left)
	}
	if got := eval[string](t, ctx, `[...`+crow+`.querySelectorAll("button")].map(b => b.dataset.label || b.textContent).join("|")`); got != "Allow once|Allow for this run|Refuse|Details" {
		t.Errorf("the connect row's buttons: %q", got)
	}

	// Approve the command from its row: the agent's run goes on.
	press(t, ctx, "approve from the row", "#items > li[data-id='"+hid+"'] button.list-approve")
	until(t, ctx, "approved", `document.getElementById("q-msg").textContent.startsWith("Approved as ")`)
	if code := hostile.Wait(t); code != 0 || !strings.Contains(hostile.Stdout.String(), "<script>window.pwned=1</script>") {
		t.Fatalf("the approved agent: exit %d\n%s\n%s", code, hostile.Stdout.String(), hostile.Stderr.String())
	}
	if eval[bool](t, ctx, `window.pwned === 1`) {
		t.Fatal("the agent's script ran")
	}

	// Allow the connection once: the waiting side hears it.
	press(t, ctx, "allow once", "#items > li[data-id='"+once.id+"'] button.list-approve")
	if res := once.answer(t); res.Decision != queue.Allow || res.Scope != queue.ScopeOnce {
		t.Fatalf("allowed once: the proxy got %+v", res)
	}
	until(t, ctx, "allowed", `document.getElementById("q-msg").textContent.startsWith("Allowed once as ")`)

	// For the run, and refused.
	forRun := b.askConnect("registry.example", 443, "npm install")
	refused := b.askConnect("tracker.example", 80, "npm install")
	until(t, ctx, "two more questions", row(forRun.id)+` !== null && `+row(refused.id)+` !== null`)
	press(t, ctx, "allow for the run", "#items > li[data-id='"+forRun.id+"'] button.run")
	if res := forRun.answer(t); res.Decision != queue.Allow || res.Scope != queue.ScopeRun {
		t.Fatalf("allowed for the run: the proxy got %+v", res)
	}
	press(t, ctx, "refuse", "#items > li[data-id='"+refused.id+"'] button.deny")
	if res := refused.answer(t); res.Decision != queue.Deny {
		t.Fatalf("refused: the proxy got %+v", res)
	}
	audit := readFile(t, filepath.Join(b.dir, "audit.jsonl"))
	for _, want := range []string{
		`"id":"` + once.id + `","event":"approved","actor":"[^"]+@phone \(via web\)".*"scope":"once"`,
		`"id":"` + forRun.id + `","event":"approved","actor":"[^"]+@phone \(via web\)".*"scope":"run"`,
		`"id":"` + refused.id + `","event":"denied","actor":"[^"]+@phone \(via web\)"`,
	} {
		if !regexp.MustCompile(want).MatchString(audit) {
			t.Errorf("the audit log lacks %s", want)
		}
	}

	// A desktop: deny the long one from its row, with a reason.
	do(t, ctx, "desktop viewport", chromedp.EmulateViewport(1280, 800))
	lrow := "#items > li[data-id='" + lid + "']"
	press(t, ctx, "deny", lrow+" button.deny")
	// The reason typed and sent in one step in the page, as press clicks:
	// the row may move meanwhile.
	q, _ := json.Marshal(lrow + " form.deny-inline input")
	until(t, ctx, "deny with a reason", `(() => { const i = document.querySelector(`+string(q)+`);
		if (!i) return false; i.value = "too long to read here"; i.form.requestSubmit(); return true; })()`)
	until(t, ctx, "denied", `document.getElementById("q-msg").textContent.startsWith("Denied as ")`)
	if code := long.Wait(t); code != 126 || !strings.Contains(long.Stderr.String(), "too long to read here") {
		t.Fatalf("the denied agent: exit %d, stderr %q", code, long.Stderr.String())
	}

	// A connect request's detail: the host, and the three answers.
	detail := b.askConnect("cdn.example", 8443, "pip install requests")
	until(t, ctx, "the question", row(detail.id)+` !== null`)
	press(t, ctx, "open it", "#items > li[data-id='"+detail.id+"'] button.open")
	do(t, ctx, "its detail", chromedp.WaitVisible(chromedp.CSS("#d-body .target-big")))
	if got := eval[string](t, ctx, `document.querySelector("#d-body .target-big").textContent`); got != "cdn.example:8443" {
		t.Errorf("the detail's host: %q", got)
	}
	if got := eval[string](t, ctx, `["approve", "approve-run", "deny"].map(id => document.getElementById(id)).filter(b => !b.hidden).map(b => b.textContent.replace(/ \(.*| in .*/, "")).join("|")`); got != "Allow once|Allow for this run|Refuse" {
		t.Errorf("the detail's answers: %q", got)
	}
	if eval[bool](t, ctx, `!document.getElementById("reason").hidden`) {
		t.Error("a connection asks for a reason")
	}
	do(t, ctx, "allow for the run", chromedp.WaitEnabled(chromedp.CSS("#approve-run")), chromedp.Click(chromedp.CSS("#approve-run")))
	if res := detail.answer(t); res.Decision != queue.Allow || res.Scope != queue.ScopeRun {
		t.Fatalf("allowed for the run from the detail: the proxy got %+v", res)
	}
	until(t, ctx, "said", `document.getElementById("d-msg").textContent.startsWith("Allowed for the rest of its run as ")`)
}

// press clicks the button sel finds once it is enabled, in one step in the
// page: the list is drawn again as requests come and go, and a node found
// by one call and clicked by the next may be gone by then (chromedp:
// "Could not find node with given id").
func press(t *testing.T, ctx context.Context, what, sel string) {
	t.Helper()
	q, _ := json.Marshal(sel)
	until(t, ctx, what, `(() => { const b = document.querySelector(`+string(q)+`); if (!b || b.disabled) return false; b.click(); return true; })()`)
}
