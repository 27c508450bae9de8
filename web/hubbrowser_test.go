package web

import (
	"context"
	"net/http/httptest"
	osexec "os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The fleet in a real headless Chromium: the page, served over the hub,
// approves a request on each of two boxes and shows each run's output;
// the hub shut down and started again, the page shows the same queue,
// with what a box asked meanwhile, and approves again.
func TestBrowserHubFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no browser tests")
	}
	exe := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := osexec.LookPath(name); err == nil {
			exe = p
			break
		}
	}
	if exe == "" {
		t.Skip("no chromium found (apt-get install chromium): the browser tests need one")
	}
	f := newFleetWith(t, time.Now)
	hs := httptest.NewServer(f.srv)
	t.Cleanup(hs.Close)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelA() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := chromedp.Do(c, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	wait := func(what, js string) {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if _, err := chromedp.Run(c, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingInterval(50*time.Millisecond),
			chromedp.WithPollingTimeout(time.Minute))); err != nil {
			body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
			t.Fatalf("waiting for %s (%s): %v\n%s", what, js, err, body)
		}
	}
	row := func(key string) string { return `#items li[data-id='` + key + `']` }

	do("desktop viewport", chromedp.EmulateViewport(1280, 800))
	do("open the page", chromedp.Navigate(hs.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#pair-code")))
	code, err := f.store.NewCode("laptop", "alice", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	do("pair", chromedp.SendKeys(chromedp.CSS("#pair-code"), code), chromedp.Click(chromedp.CSS("#pair-go")),
		chromedp.WaitVisible(chromedp.CSS("#items")))
	wait("the page is live", `document.getElementById("conn").textContent === "live"`)

	approve := func(key, command string) {
		t.Helper()
		wait(key+" in the queue", `document.querySelector("`+row(key)+`") !== null`)
		// Clicked in the page, in one step: the list is drawn again as
		// requests come and go (see press).
		wait("open "+key, `(() => { const b = document.querySelector("`+row(key)+` button.open"); if (!b) return false; b.click(); return true; })()`)
		do(key+"'s detail", chromedp.WaitVisible(chromedp.CSS("#d-body pre")))
		do("read "+key+" to its end", chromedp.ScrollIntoView(chromedp.CSS("#d-end")))
		do("approve "+key, chromedp.WaitEnabled(chromedp.CSS("#approve")), chromedp.Click(chromedp.CSS("#approve")))
		wait(key+"'s output", `document.getElementById("out").textContent.includes("ran `+command+`")`)
		wait(key+"'s end", `document.getElementById("out-state").textContent.startsWith("done (exit 0)")`)
	}
	k1, k2 := f.boxes["b1"].ask(t, "make one"), f.boxes["b2"].ask(t, "make two")
	wait("both boxes' requests", `document.querySelector("`+row(k1)+`") !== null && document.querySelector("`+row(k2)+`") !== null`)
	boxes, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#items li .box")].map(e => e.textContent)`))
	if err != nil || strings.Join(boxes, " ") != "b1 b2" {
		t.Fatalf("the boxes the queue names: %q %v", boxes, err)
	}
	approve(k1, "make one")
	approve(k2, "make two")
	for _, k := range []string{k1, k2} {
		box, id, _ := strings.Cut(k, ".")
		if n := f.boxes[box].runs(id); n != 1 {
			t.Fatalf("%s ran %d times", k, n)
		}
	}

	// The hub goes and comes back; a box asks meanwhile.
	k3 := f.boxes["b1"].ask(t, "make three")
	wait("the third request", `document.querySelector("`+row(k3)+`") !== null`)
	f.h.Shutdown()
	k4 := f.boxes["b2"].ask(t, "make four")
	if _, err := newHubAt(f); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	wait("the queue after the hub's restart", `document.querySelector("`+row(k3)+`") !== null && document.querySelector("`+row(k4)+`") !== null`)
	t.Logf("the page showed the queue, with what was asked while the hub was down, %v after the hub was back", time.Since(back).Round(time.Millisecond))
	approve(k4, "make four")
}
