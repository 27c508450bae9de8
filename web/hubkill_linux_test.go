package web_test

import (
	"context"
	"encoding/json"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluice-dev/sluice/internal/e2e"
)

// The fleet with every part a process of its own, as people run it: the
// hub, two boxes ('sluice serve --hub'), agents asking through 'sluice
// run', and the page served by 'sluice web --hub' in a headless Chromium.
// The page shows both boxes' requests and approves one on each; then the
// hub is killed with SIGKILL and started again on the same store and
// port, while a box asks once more: the page shows the same queue (the
// same ids, and the new one), and approves on it. The hub is the embedded
// one ('sluice hub serve'), then a nats-server beside 'sluice hub service'
// (the server killed; skipped, saying so, without nats-server).
//
// How long the page took to show the queue after the hub listened again
// is logged (the issue asks for 2 s); the test asserts that it does, not
// how fast, on a shared machine. With $SLUICE_WEB_SHOTS set the embedded
// case keeps fleet-phone.png (390x844) and fleet-desktop.png (1280x800)
// there.
func TestBrowserFleetHubKilled(t *testing.T) {
	exe := chromium(t)
	t.Run("sluice hub serve", func(t *testing.T) {
		h := e2e.NewHub(t)
		fleetHubKilled(t, exe, h, killable{up: func() {}, kill: h.Kill, start: h.Start}, true)
	})
	t.Run("nats-server", func(t *testing.T) {
		h, k := natsHub(t)
		fleetHubKilled(t, exe, h, k, false)
	})
}

// killable is a hub as the test drives it: up once its users are added,
// then killed and started again.
type killable struct{ up, kill, start func() }

func fleetHubKilled(t *testing.T, exe string, h *e2e.Hub, k killable, shots bool) {
	var boxes []*e2e.Box
	for _, name := range []string{"b1", "b2"} {
		b := e2e.NewBox(t, e2e.BoxOptions{Policy: e2e.AskAll})
		h.AddBox(b, name)
		boxes = append(boxes, b)
	}
	k.up()
	for _, b := range boxes {
		b.Serve("--hub", h.URL).WaitOutput(t, "bridging spool")
	}
	page, web := startFleetWeb(t, h.Bin, h.Dir, h.Env, h.URL, h.ConsoleCreds())
	ctx := browser(t, exe)
	do(t, ctx, "phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2)))
	do(t, ctx, "open the page", chromedp.Navigate(page+"/#pair="+fleetPairCode(t, h.Bin, h.Dir, h.Env, page)),
		chromedp.WaitVisible(chromedp.CSS("#pair-code")))
	do(t, ctx, "pair", chromedp.Click(chromedp.CSS("#pair-go")), chromedp.WaitVisible(chromedp.CSS("#items")))
	until(t, ctx, "the page is live", `document.getElementById("conn").textContent === "live"`)

	// Two agents on each box; the page names each request's box.
	agents := map[string]*e2e.Proc{}
	ask := func(b *e2e.Box, what string) {
		t.Helper()
		agents[what] = b.Start("run", "--", "touch "+what+" && echo made "+what)
	}
	ask(boxes[0], "b1-first")
	ask(boxes[0], "b1-second")
	ask(boxes[1], "b2-first")
	ask(boxes[1], "b2-second")
	first := map[string]string{}
	for _, what := range []string{"b1-first", "b1-second", "b2-first", "b2-second"} {
		first[what] = rowWith(t, ctx, what)
	}
	for what, key := range first {
		box, _, _ := strings.Cut(key, ".")
		if want := what[:2]; box != want {
			t.Errorf("%s is on %s, the page's key says %s", what, want, key)
		}
		if got := eval[string](t, ctx, `document.querySelector("#items li[data-id='`+key+`'] .box").textContent`); got != box {
			t.Errorf("%s's row names box %q, want %q", what, got, box)
		}
	}
	if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the fleet's queue is %d px wide on a 390 px phone", w)
	}
	if shots {
		fleetShot(t, ctx, "fleet-phone.png")
	}

	do(t, ctx, "desktop viewport", chromedp.EmulateViewport(1280, 800))
	approve := func(what string) {
		t.Helper()
		key := rowWith(t, ctx, what)
		row := `#items li[data-id='` + key + `']`
		press(t, ctx, "open "+what, row+" button.open")
		do(t, ctx, "its detail", chromedp.WaitVisible(chromedp.CSS("#d-body pre")))
		// On a desktop the last request's detail stays until this one's
		// arrives.
		until(t, ctx, what+"'s detail", `document.getElementById("d-body").textContent.includes(`+jsString("touch "+what)+`)`)
		do(t, ctx, "read "+what+" to its end", chromedp.ScrollIntoView(chromedp.CSS("#d-end")))
		do(t, ctx, "approve "+what, chromedp.WaitEnabled(chromedp.CSS("#approve")), chromedp.Click(chromedp.CSS("#approve")))
		until(t, ctx, what+" ran", `document.getElementById("out").textContent.includes(`+jsString("made "+what)+`) && `+
			`document.getElementById("out-state").textContent.startsWith("done (exit 0)")`)
		if code := agents[what].Wait(t); code != 0 {
			t.Fatalf("the agent of %s: exit %d\n%s", what, code, agents[what].Stderr.String())
		}
	}
	approve("b1-first")
	if shots {
		fleetShot(t, ctx, "fleet-desktop.png")
	}
	approve("b2-first")
	for i, what := range []string{"b1-first", "b2-first"} {
		if _, err := os.Stat(filepath.Join(boxes[i].Project, what)); err != nil {
			t.Errorf("%s did not run on its box: %v", what, err)
		}
	}
	waiting := []string{first["b1-second"], first["b2-second"]}
	until(t, ctx, "the queue holds what still waits", pendingIs(waiting))

	// SIGKILL; a box asks while the hub is down; the hub again, on the
	// same store and port.
	k.kill()
	ask(boxes[1], "b2-third")
	waitOnBox(t, boxes[1], "b2-third")
	k.start()
	back := time.Now()
	third := rowWith(t, ctx, "b2-third")
	until(t, ctx, "the same queue, and what was asked meanwhile", pendingIs(append(waiting, third)))
	t.Logf("after the hub was killed and listened again, the page showed the same queue (%d requests) in %v; sluice web said: %s",
		len(waiting)+1, time.Since(back).Round(time.Millisecond), reconnectLine(web.Stderr.String()))
	approve("b2-third")
	approve("b1-second")
	until(t, ctx, "b2-second alone waits", pendingIs([]string{first["b2-second"]}))
}

// startFleetWeb starts 'sluice web --hub URL' as the console whose
// credentials are creds, and returns the page's address.
func startFleetWeb(t *testing.T, bin, dir string, env []string, hubURL, creds string) (string, *e2e.Proc) {
	t.Helper()
	addr := e2e.FreeAddr(t)
	page := "http://" + addr
	cmd := osexec.Command(filepath.Join(bin, "sluice-web"), "--hub", hubURL, "--hub-creds", creds, "--listen", addr, "--url", page)
	cmd.Env, cmd.Dir = env, dir
	web := e2e.StartLogged(t, "sluice web --hub", cmd)
	e2e.Until(t, "sluice web serves", func() bool {
		if web.Exited() {
			t.Fatalf("sluice web exited: %s", web.Stderr.String())
		}
		return strings.Contains(web.Stderr.String(), "serving ")
	})
	return page, web
}

// fleetPairCode runs 'sluice web pair phone' and returns the code.
func fleetPairCode(t *testing.T, bin, dir string, env []string, page string) string {
	t.Helper()
	cmd := osexec.Command(filepath.Join(bin, "sluice-web"), "pair", "--url", page, "phone")
	cmd.Env, cmd.Dir = env, dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sluice web pair: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`Pairing code for "[^"]+": (\S+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no code in:\n%s", out)
	}
	return string(m[1])
}

// rowWith waits for the queue's row whose summary holds text and returns
// its id (the hub's key, BOX.ID).
func rowWith(t *testing.T, ctx context.Context, text string) string {
	t.Helper()
	js := `(() => { const li = [...document.querySelectorAll("#items > li")].find(e => e.querySelector(".sum").textContent.includes(` +
		jsString(text) + `)); return li ? li.dataset.id : ""; })()`
	until(t, ctx, "a row for "+text, js+` !== ""`)
	return eval[string](t, ctx, js)
}

// pendingIs is a condition: the ids of the requests the queue shows as
// waiting (Review, not Watch) are keys, in any order.
func pendingIs(keys []string) string {
	keys = slices.Sorted(slices.Values(keys))
	return `JSON.stringify([...document.querySelectorAll("#items > li")].filter(e => e.querySelector("button.open").textContent === "Review")` +
		`.map(e => e.dataset.id).sort()) === ` + jsString(mustJSON(keys))
}

func jsString(s string) string { return mustJSON(s) }

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// reconnectLine is sluice web's last word on the hub link.
func reconnectLine(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], "hub: connected") {
			return strings.TrimSpace(lines[i])
		}
	}
	return "(nothing of a reconnection)"
}

// fleetShot keeps a screenshot in $SLUICE_WEB_SHOTS, when it is set.
func fleetShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("SLUICE_WEB_SHOTS")
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot(t, ctx, dir, name)
	t.Logf("screenshot %s", filepath.Join(dir, name))
}

// waitOnBox waits until a request whose command holds text waits on box b
// ('sluice ls --json' there).
func waitOnBox(t *testing.T, b *e2e.Box, text string) {
	t.Helper()
	type entry struct {
		State   string `json:"state"`
		Request struct {
			Command string `json:"command"`
		} `json:"request"`
	}
	e2e.Until(t, text+" waits on its box", func() bool {
		code, out, _ := b.Sluice("ls", "--json")
		var list []entry
		if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
			return false
		}
		return slices.ContainsFunc(list, func(e entry) bool {
			return e.State == "pending" && strings.Contains(e.Request.Command, text)
		})
	})
}

// natsHub is a nats-server serving a hub's store ('sluice hub config',
// then 'sluice hub init' and 'sluice hub service' beside it), with a
// console "me" as e2e.NewHub makes one. Skipped without nats-server,
// failed in CI (CI set), as the hub's own tests do.
func natsHub(t *testing.T) (*e2e.Hub, killable) {
	t.Helper()
	ns, err := osexec.LookPath("nats-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("nats-server is not installed (.ci/run installs the Debian package)")
		}
		t.Skip("nats-server is not installed (apt-get install nats-server)")
	}
	addr := e2e.FreeAddr(t)
	dir := t.TempDir()
	h := &e2e.Hub{T: t, Bin: e2e.Bin(t), Dir: dir, Store: filepath.Join(dir, "store"), Addr: addr, URL: "nats://" + addr,
		Env: []string{"HOME=" + dir + "/home", "XDG_CONFIG_HOME=" + dir + "/config", "XDG_STATE_HOME=" + dir + "/state",
			"XDG_RUNTIME_DIR=", "PATH=" + os.Getenv("PATH")}}
	sluice := func(args ...string) string {
		t.Helper()
		code, out, errs := h.Sluice(args...)
		if code != 0 {
			t.Fatalf("sluice %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
		}
		return out
	}
	sluice("hub", "add-console", "me", "--url", h.URL, "--store", h.Store)
	if err := os.MkdirAll(filepath.Dir(h.ConsoleCreds()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(h.Store, "creds", "me.creds"), h.ConsoleCreds()); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "hub.conf")
	var server *e2e.Proc
	start := func() {
		t.Helper()
		server = e2e.Start(t, "nats-server", osexec.Command(ns, "-c", conf))
		p := server
		t.Cleanup(p.Stop)
		e2e.Until(t, "nats-server is ready", func() bool {
			if p.Exited() {
				t.Fatalf("nats-server exited: %s", p.Stderr.String())
			}
			return strings.Contains(p.Stderr.String(), "Server is ready")
		})
	}
	up := func() {
		t.Helper()
		// The users are all added: the configuration names them.
		if err := os.WriteFile(conf, []byte(sluice("hub", "config", "--listen", addr, "--store", h.Store)), 0o600); err != nil {
			t.Fatal(err)
		}
		start()
		sluice("hub", "init", "--hub", h.URL, "--store", h.Store)
		svc := h.StartSluice("hub", "service", "--hub", h.URL, "--store", h.Store)
		t.Cleanup(func() {
			svc.Stop()
			if t.Failed() {
				t.Logf("sluice hub service:\n%s", svc.Stderr.String())
			}
		})
		e2e.Until(t, "sluice hub service serves", func() bool { return strings.Contains(svc.Stderr.String(), "serving ") })
	}
	return h, killable{up: up, kill: func() { server.Kill() }, start: start}
}
