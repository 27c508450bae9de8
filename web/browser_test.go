package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"

	"github.com/sluice-dev/sluice/internal/e2e"
	"github.com/sluice-dev/sluice/queue"
)

func TestMain(m *testing.M) {
	code := m.Run()
	e2e.Cleanup()
	os.Exit(code)
}

// chromium finds a Chromium or Chrome to drive, or skips the test.
func chromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no browser tests")
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := osexec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium found (apt-get install chromium): the browser tests need one")
	return ""
}

// box is one box: sluice serve and sluice-web on a spool of its own.
type box struct {
	t               *testing.T
	bin, dir, spool string
	project, url    string
	env             []string
}

// startBox starts the box; webArgs go to sluice-web, host names the page
// in its address (127.0.0.1 or localhost).
func startBox(t *testing.T, host string, webArgs ...string) *box {
	t.Helper()
	bin := e2e.Bin(t)
	dir := t.TempDir()
	b := &box{t: t, bin: bin, dir: dir, spool: filepath.Join(dir, "spool"), project: filepath.Join(dir, "project")}
	if err := os.MkdirAll(b.project, 0o755); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	b.env = append(scrubbed(), "HOME="+home, "XDG_STATE_HOME="+filepath.Join(home, "state"),
		"XDG_CONFIG_HOME="+filepath.Join(home, "config"), "SLUICE_SPOOL="+b.spool,
		"SLUICE_AUDIT="+filepath.Join(dir, "audit.jsonl"))
	serve := b.cmd("sluice", "serve")
	p := e2e.Start(t, "sluice serve", serve)
	t.Cleanup(p.Stop)
	sp, err := queue.Open(b.spool)
	if err != nil {
		t.Fatal(err)
	}
	e2e.Until(t, "sluice serve serves the spool", sp.Serving)

	addr := e2e.FreeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	b.url = "http://" + host + ":" + port
	e2e.StartLogged(t, "sluice-web", b.cmd("sluice-web", append([]string{"--listen", addr, "--url", b.url}, webArgs...)...))
	e2e.Until(t, "sluice-web listens", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return b
}

func scrubbed() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "HOME" || strings.HasPrefix(k, "XDG_") || strings.HasPrefix(k, "SLUICE_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func (b *box) cmd(prog string, args ...string) *osexec.Cmd {
	c := osexec.Command(filepath.Join(b.bin, prog), args...)
	c.Env, c.Dir = b.env, b.project
	return c
}

// pairCode runs 'sluice web pair NAME' and returns the code it printed.
func (b *box) pairCode(name string) string {
	b.t.Helper()
	out, err := b.cmd("sluice-web", "pair", "--url", b.url, name).CombinedOutput()
	if err != nil {
		b.t.Fatalf("sluice web pair: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`Pairing code for "[^"]+": (\S+)`).FindSubmatch(out)
	if m == nil {
		b.t.Fatalf("no code in:\n%s", out)
	}
	return string(m[1])
}

// ask starts 'sluice run -- line' as an agent would; it waits for a person.
func (b *box) ask(line string) *e2e.Proc {
	b.t.Helper()
	return e2e.Start(b.t, "sluice run", b.cmd("sluice", "run", "--", line))
}

// pendingID waits for a pending request whose command holds marker.
func (b *box) pendingID(marker string) string {
	b.t.Helper()
	var id string
	e2e.Until(b.t, "a pending request with "+marker, func() bool {
		out, err := b.cmd("sluice", "ls", "--json").Output()
		if err != nil {
			return false
		}
		var list []struct {
			ID      string         `json:"id"`
			State   string         `json:"state"`
			Request *queue.Request `json:"request"`
		}
		if json.Unmarshal(out, &list) != nil {
			return false
		}
		for _, e := range list {
			if e.State == "pending" && e.Request != nil && strings.Contains(e.Request.Command, marker) {
				id = e.ID
				return true
			}
		}
		return false
	})
	return id
}

// browser is a headless Chromium of its own for the test.
func browser(t *testing.T, exe string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelA() })
	if err := chromedp.Do(ctx); err != nil { // start it, without a timeout
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// do runs steps, bounded by the suite's hang guard.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, e2e.Guard)
	defer cancel()
	if err := chromedp.Do(c, steps...); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, pageState(ctx))
	}
}

// until waits for a JavaScript condition on the page.
func until(t *testing.T, ctx context.Context, what, js string) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, e2e.Guard)
	defer cancel()
	if _, err := chromedp.Run(c, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingInterval(50*time.Millisecond),
		chromedp.WithPollingTimeout(e2e.Guard))); err != nil {
		t.Fatalf("waiting for %s (%s): %v\n%s", what, js, err, pageState(ctx))
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, e2e.Guard)
	defer cancel()
	v, err := chromedp.Run(c, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// shots is where screenshots go: $SLUICE_WEB_SHOTS, else a directory
// that outlives the test (its path is logged).
func shots(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SLUICE_WEB_SHOTS")
	if dir == "" {
		d, err := os.MkdirTemp("", "sluice-web-shots-")
		if err != nil {
			t.Fatal(err)
		}
		dir = d
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

func shot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, e2e.Guard)
	defer cancel()
	png, err := chromedp.Run(c, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserApproveDenyOnPhoneAndDesktop is the page end to end, in a
// real headless Chromium: pair, see a request from 'sluice run' arrive,
// read it to its end, approve it after the grace, watch its output
// stream; deny one with a reason the agent gets; lose a race to the CLI
// and be told who won; on a phone's viewport and a desktop's.
func TestBrowserApproveDenyOnPhoneAndDesktop(t *testing.T) {
	exe := chromium(t)
	b := startBox(t, "127.0.0.1")
	dir := shots(t)
	ctx := browser(t, exe)

	// A phone: 390x844, mobile.
	do(t, ctx, "phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2)))

	// Unpaired, the page asks for a code and shows nothing of the queue.
	do(t, ctx, "open the page", chromedp.Navigate(b.url+"/"), chromedp.WaitVisible(chromedp.CSS("#pair-code")))
	if got := eval[bool](t, ctx, `document.getElementById("app").hidden`); !got {
		t.Fatal("the queue shows before the browser is paired")
	}
	code := b.pairCode("phone")
	do(t, ctx, "pair", chromedp.SendKeys(chromedp.CSS("#pair-code"), code), chromedp.Click(chromedp.CSS("#pair-go")),
		chromedp.WaitVisible(chromedp.CSS("#items")))
	until(t, ctx, "the page is live", `document.getElementById("conn").textContent === "live"`)

	// An agent asks: a long command (the phone must scroll to its end),
	// with markup, a bidi override and an escape sequence in it.
	var lines []string
	lines = append(lines, "touch made.txt")
	for i := 1; i <= 40; i++ {
		lines = append(lines, fmt.Sprintf("echo line%02d", i))
	}
	lines = append(lines, "echo '</textarea><script>window.pwned=1</script>' # \u202etxt.exe \x1b[8m")
	run := b.ask(strings.Join(lines, "\n"))
	id := b.pendingID("line40")
	until(t, ctx, "the request in the queue", `document.querySelector("#items .item[data-id='`+id+`']") !== null`)
	shot(t, ctx, dir, "phone-queue.png")
	press(t, ctx, "open it", "#items .item[data-id='"+id+"'] button.open")
	do(t, ctx, "its detail", chromedp.WaitVisible(chromedp.CSS("#d-body pre")))

	// What the agent wrote is text: no script ran or was made, the
	// markup is shown as typed, the hidden characters marked.
	body := eval[string](t, ctx, `document.getElementById("d-body").textContent`)
	if !strings.Contains(body, "</textarea><script>window.pwned=1</script>") {
		t.Errorf("the command as shown: %q", body)
	}
	if n := eval[int](t, ctx, `document.scripts.length`); n != 1 {
		t.Errorf("%d script elements on the page, want 1 (app.js)", n)
	}
	if pwned := eval[bool](t, ctx, `window.pwned === 1`); pwned {
		t.Fatal("the agent's script ran")
	}
	escs := eval[[]string](t, ctx, `[...document.querySelectorAll("#d-body .esc")].map(e => e.textContent)`)
	if strings.Join(escs, " ") != `\u{202e} \x1b` {
		t.Errorf("escaped characters shown: %q", escs)
	}
	if flags := eval[string](t, ctx, `document.getElementById("d-flags").textContent`); !strings.Contains(flags, "Hidden characters") {
		t.Errorf("no flag for the hidden characters: %q", flags)
	}

	// Approve waits for the end of the command to have been on screen.
	if eval[bool](t, ctx, `document.getElementById("approve").disabled`) != true {
		t.Fatal("approve is enabled before the end of the command was on screen")
	}
	until(t, ctx, "approve says why it waits", `document.getElementById("approve").textContent.includes("read to the end")`)
	if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the phone page is %d px wide, over 390", w)
	}
	if eval[bool](t, ctx, `getComputedStyle(document.getElementById("queue")).display !== "none"`) {
		t.Error("on a phone the queue stays beside the open request")
	}
	shot(t, ctx, dir, "phone-request.png")
	do(t, ctx, "scroll to the end", chromedp.ScrollIntoView(chromedp.CSS("#d-end")))
	do(t, ctx, "approve", chromedp.WaitEnabled(chromedp.CSS("#approve")), chromedp.Click(chromedp.CSS("#approve")))

	// Its output streams into the page, and the agent gets it.
	until(t, ctx, "the output", `document.getElementById("out").textContent.includes("line40")`)
	until(t, ctx, "the end of the run", `document.getElementById("out-state").textContent.startsWith("done (exit 0)")`)
	if msg := eval[string](t, ctx, `document.getElementById("d-msg").textContent`); !strings.Contains(msg, "@phone (via web)") {
		t.Errorf("after approving: %q", msg)
	}
	out := eval[string](t, ctx, `document.getElementById("out").textContent`)
	if strings.Contains(out, "\x1b") || !strings.Contains(out, "<script>window.pwned=1</script>") {
		t.Errorf("output as shown: %q", out)
	}
	if eval[bool](t, ctx, `getComputedStyle(document.getElementById("d-actions")).display !== "none"`) {
		t.Error("approve and deny still show after the approval")
	}
	shot(t, ctx, dir, "phone-output.png")
	if code := run.Wait(t); code != 0 || !strings.Contains(run.Stdout.String(), "line40") {
		t.Fatalf("sluice run: exit %d\nstdout %s\nstderr %s", code, run.Stdout.String(), run.Stderr.String())
	}
	if _, err := os.Stat(filepath.Join(b.project, "made.txt")); err != nil {
		t.Fatalf("the approved command did not run: %v", err)
	}
	audit, _ := os.ReadFile(filepath.Join(b.dir, "audit.jsonl"))
	if !regexp.MustCompile(`"id":"` + id + `","event":"approved","actor":"[^"]+@phone \(via web\)"`).Match(audit) {
		t.Errorf("the audit log does not name the device:\n%s", audit)
	}
	if !strings.Contains(string(audit), `"event":"web_paired"`) {
		t.Error("the pairing is not in the audit log")
	}

	// Deny, with a reason the agent hears.
	do(t, ctx, "back to the queue", chromedp.Click(chromedp.CSS("#back")))
	denied := b.ask("touch denied.txt")
	did := b.pendingID("denied.txt")
	until(t, ctx, "the second request", `document.querySelector("#items .item[data-id='`+did+`']") !== null`)
	press(t, ctx, "open it", "#items .item[data-id='"+did+"'] button.open")
	do(t, ctx, "deny it", chromedp.WaitVisible(chromedp.CSS("#reason")),
		chromedp.SendKeys(chromedp.CSS("#reason"), "use the staging box"), chromedp.Click(chromedp.CSS("#deny")))
	until(t, ctx, "denied", `document.getElementById("d-msg").textContent.startsWith("Denied")`)
	if code := denied.Wait(t); code != 126 || !strings.Contains(denied.Stderr.String(), "use the staging box") {
		t.Fatalf("the denied agent: exit %d, stderr %q", code, denied.Stderr.String())
	}
	if _, err := os.Stat(filepath.Join(b.project, "denied.txt")); err == nil {
		t.Fatal("the denied command ran")
	}

	// The narrowest phone the page is made for: nothing wider than it.
	do(t, ctx, "360 px", chromedp.EmulateViewport(360, 740, chromedp.EmulateMobile))
	if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 360 {
		t.Errorf("at 360 px the request is %d px wide", w)
	}
	do(t, ctx, "back", chromedp.Click(chromedp.CSS("#back")), chromedp.WaitVisible(chromedp.CSS("#items")))
	if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 360 {
		t.Errorf("at 360 px the queue is %d px wide", w)
	}

	// A desktop: the queue and the request side by side.
	do(t, ctx, "desktop viewport", chromedp.EmulateViewport(1280, 800))
	race := b.ask("touch race.txt")
	rid := b.pendingID("race.txt")
	until(t, ctx, "the third request", `document.querySelector("#items .item[data-id='`+rid+`']") !== null`)
	press(t, ctx, "open it", "#items .item[data-id='"+rid+"'] button.open")
	do(t, ctx, "its detail", chromedp.WaitVisible(chromedp.CSS("#d-body pre")))
	side := eval[bool](t, ctx, `(() => {
		const q = document.getElementById("queue").getBoundingClientRect();
		const d = document.getElementById("detail").getBoundingClientRect();
		return q.width > 250 && d.width > 500 && d.left >= q.right - 1 && Math.abs(d.top - q.top) < 50;
	})()`)
	if !side {
		t.Error("on a desktop the queue and the request are not side by side")
	}
	until(t, ctx, "approve enabled (a short command, seen whole)", `!document.getElementById("approve").disabled`)
	shot(t, ctx, dir, "desktop-request.png")

	// Someone at the console's CLI is first: it runs once, and the page
	// says who won.
	cli := b.cmd("sluice", "approve", "--yes", "--as", "bob@console", rid)
	if out, err := cli.CombinedOutput(); err != nil {
		t.Fatalf("sluice approve: %v\n%s", err, out)
	}
	until(t, ctx, "the page says who won", `document.getElementById("d-msg").textContent.includes("bob@console")`)
	if code := race.Wait(t); code != 0 {
		t.Fatalf("the raced request: exit %d", code)
	}
	if n := strings.Count(readFile(t, filepath.Join(b.dir, "audit.jsonl")), `"id":"`+rid+`","event":"started"`); n != 1 {
		t.Fatalf("the raced request started %d times", n)
	}
	do(t, ctx, "History", chromedp.Click(chromedp.CSS("#tab-history")), chromedp.WaitVisible(chromedp.CSS("#past .item")))
	hist := eval[string](t, ctx, `document.getElementById("past").textContent`)
	for _, want := range []string{"bob@console", "@phone (via web)", "denied"} {
		if !strings.Contains(hist, want) {
			t.Errorf("History lacks %q: %s", want, hist)
		}
	}
	shot(t, ctx, dir, "desktop-history.png")

	// Revoked from the box: the open page loses the queue at once.
	if out, err := b.cmd("sluice-web", "revoke", "phone").CombinedOutput(); err != nil {
		t.Fatalf("sluice web revoke: %v\n%s", err, out)
	}
	until(t, ctx, "the page back at pairing", `!document.getElementById("pair").hidden && document.getElementById("app").hidden`)
	if !strings.Contains(readFile(t, filepath.Join(b.dir, "audit.jsonl")), `"event":"web_revoked"`) {
		t.Error("the revocation is not in the audit log")
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestBrowserPasskeyApproval: with --require-passkey, a destructive run
// is approved only with the device's passkey, user-verified (Chromium's
// virtual authenticator stands in for the phone's).
func TestBrowserPasskeyApproval(t *testing.T) {
	exe := chromium(t)
	b := startBox(t, "localhost", "--require-passkey") // passkeys need a secure context: localhost, not an IP
	ctx := browser(t, exe)
	do(t, ctx, "open the page", chromedp.Navigate(b.url+"/#pair="+b.pairCode("phone")), chromedp.WaitVisible(chromedp.CSS("#pair-code")))
	do(t, ctx, "a virtual authenticator", func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		if _, err := cdp.Call(ctx, tg, webauthn.Enable, webauthn.EnableParams{}); err != nil {
			return chromedp.Void{}, err
		}
		_, err := cdp.Call(ctx, tg, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{
			Options: &webauthn.VirtualAuthenticatorOptions{Protocol: webauthn.AuthenticatorProtocolCtap2, Transport: webauthn.AuthenticatorTransportInternal,
				HasResidentKey: true, HasUserVerification: true, IsUserVerified: true, AutomaticPresenceSimulation: true}})
		return chromedp.Void{}, err
	})
	do(t, ctx, "pair", chromedp.Click(chromedp.CSS("#pair-go")), chromedp.WaitVisible(chromedp.CSS("#items")))
	do(t, ctx, "add a passkey", chromedp.WaitVisible(chromedp.CSS("#passkey")), chromedp.Click(chromedp.CSS("#passkey")))
	until(t, ctx, "the passkey added", `document.getElementById("d-msg").textContent === "Passkey added."`)

	if err := os.MkdirAll(filepath.Join(b.project, "build"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := b.ask("rm -rf build")
	id := b.pendingID("rm -rf build")
	until(t, ctx, "the request in the queue", `document.querySelector("#items .item[data-id='`+id+`']") !== null`)
	press(t, ctx, "open it", "#items .item[data-id='"+id+"'] button.open")
	do(t, ctx, "its detail", chromedp.WaitVisible(chromedp.CSS("#d-body pre")))
	if head := eval[string](t, ctx, `document.getElementById("d-head").textContent`); !strings.Contains(head, "passkey") {
		t.Errorf("the request does not say it needs the passkey: %q", head)
	}
	do(t, ctx, "approve with the passkey", chromedp.WaitEnabled(chromedp.CSS("#approve")), chromedp.Click(chromedp.CSS("#approve")))
	until(t, ctx, "the run ended", `document.getElementById("out-state").textContent.startsWith("done (exit 0)")`)
	if code := run.Wait(t); code != 0 {
		t.Fatalf("sluice run: exit %d: %s", code, run.Stderr.String())
	}
	if _, err := os.Stat(filepath.Join(b.project, "build")); err == nil {
		t.Fatal("the approved rm did not run")
	}
	audit := readFile(t, filepath.Join(b.dir, "audit.jsonl"))
	if !strings.Contains(audit, `"event":"web_passkey_added"`) || !regexp.MustCompile(`"id":"`+id+`","event":"approved","actor":"[^"]+@phone \(via web\)"`).MatchString(audit) {
		t.Errorf("audit log:\n%s", audit)
	}
}

// pageState is what the page said, for a failure's message.
func pageState(ctx context.Context) string {
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(c, chromedp.Evaluate[string](`["conn", "d-msg", "approve", "out-state", "items"].map(id => {
		const e = document.getElementById(id);
		return id + ": " + e.textContent + (e.disabled ? " (disabled)" : "");
	}).join("\n")`))
	if err != nil {
		return "(the page cannot be read: " + err.Error() + ")"
	}
	return "the page:\n" + s
}
