package main

import (
	"bufio"
	"context"
	"net/http"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/internal/e2e"
	"github.com/sluice-dev/sluice/queue"
	"github.com/sluice-dev/sluice/tui"
	"github.com/sluice-dev/sluice/web/devices"
)

func TestMain(m *testing.M) {
	code := m.Run()
	e2e.Cleanup()
	os.Exit(code)
}

// settle runs cmd and what it leads to, feeding each message back to m,
// as the program would.
func settle(t *testing.T, m *tui.Model, cmd tea.Cmd) {
	t.Helper()
	for cmd != nil {
		msg := cmd()
		if batch, ok := msg.(tea.BatchMsg); ok {
			for _, c := range batch {
				settle(t, m, c)
			}
			return
		}
		if msg == nil {
			return
		}
		_, cmd = m.Update(msg)
	}
}

func press(t *testing.T, m *tui.Model, k string) {
	t.Helper()
	msg := tea.KeyPressMsg{Code: []rune(k)[0], Text: k}
	if k == "enter" {
		msg = tea.KeyPressMsg{Code: tea.KeyEnter}
	}
	_, cmd := m.Update(msg)
	settle(t, m, cmd)
}

// The console revokes a web device (W, enter, y) in the store the running
// sluice-web reads, with the audit event 'sluice web revoke' records: the
// device's API calls are refused at once, and its open event stream (what
// the page listens to) says revoked within a second.
func TestConsoleRevokesWebDevice(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts sluice-web")
	}
	bin := e2e.Bin(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	t.Setenv("XDG_STATE_HOME", state) // the console's devices.DefaultDir
	auditPath := filepath.Join(dir, "audit.jsonl")
	env := []string{"HOME=" + dir, "XDG_STATE_HOME=" + state, "XDG_CONFIG_HOME=" + filepath.Join(dir, "config"),
		"SLUICE_SPOOL=" + filepath.Join(dir, "spool"), "SLUICE_AUDIT=" + auditPath, "PATH=" + os.Getenv("PATH")}

	addr := e2e.FreeAddr(t)
	cmd := osexec.Command(filepath.Join(bin, "sluice-web"), "--listen", addr)
	cmd.Env = env
	web := e2e.StartLogged(t, "sluice-web", cmd)
	e2e.Until(t, "sluice-web listens", func() bool { return strings.Contains(web.Stderr.String(), "serving ") })

	// Two devices paired in the store sluice-web serves from.
	dir0, err := devices.DefaultDir()
	if err != nil {
		t.Fatal(err)
	}
	st, err := devices.Open(dir0)
	if err != nil {
		t.Fatal(err)
	}
	pair := func(name string) string {
		code, err := st.NewCode(name, "alice", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		_, cookie, err := st.Pair(code, "test", time.Hour, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return cookie
	}
	phone, laptop := pair("phone"), pair("laptop")
	get := func(path, cookie string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+addr+path, nil)
		req.AddCookie(&http.Cookie{Name: "sluice_session", Value: cookie})
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	status := func(path, cookie string) int {
		resp := get(path, cookie)
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := status("/api/queue", phone); c != http.StatusOK {
		t.Fatalf("the phone before: %d", c)
	}
	// The phone's page is open: its event stream.
	stream := get("/api/events", phone)
	defer stream.Body.Close()
	events := make(chan string, 64)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(stream.Body)
		for sc.Scan() {
			if ev, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				events <- ev
			}
		}
	}()
	if ev := <-events; ev != "queue" {
		t.Fatalf("the stream began with %q", ev)
	}

	// The console, wired as cmdConsole wires it.
	log, err := audit.Open(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	m := tui.New(tui.Options{Devices: newWebDevices(log, "bob")})
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	press(t, m, "W")
	screen := ansi.Strip(m.View().Content)
	if !strings.Contains(screen, "Web devices (2 paired)") || !strings.Contains(screen, "seen just now") {
		t.Fatalf("W shows:\n%s", screen)
	}
	// The list is in pairing order: phone first.
	press(t, m, "enter")
	if !strings.Contains(ansi.Strip(m.View().Content), "Revoke the web device phone?") {
		t.Fatalf("enter shows:\n%s", ansi.Strip(m.View().Content))
	}
	press(t, m, "y")
	revoked := time.Now()

	if c := status("/api/queue", phone); c != http.StatusUnauthorized {
		t.Errorf("the phone right after the console revoked it: %d", c)
	}
	if c := status("/api/queue", laptop); c != http.StatusOK {
		t.Errorf("the laptop: %d", c)
	}
	var said string
	for ev := range events {
		if ev == "revoked" {
			said = ev
			break
		}
	}
	if said == "" {
		t.Fatal("the phone's event stream ended without saying revoked")
	}
	t.Logf("the phone's open stream said revoked %v after the console's revocation returned", time.Since(revoked).Round(time.Millisecond))

	data, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		ev, err := audit.DecodeLine([]byte(line))
		if err == nil && ev.Event == queue.EventWebRevoked && ev.Actor == "bob" && strings.Contains(ev.Reason, "device phone revoked") {
			found = true
		}
	}
	if !found {
		t.Errorf("no web_revoked by bob in the audit log:\n%s", data)
	}
	out, err := (&osexec.Cmd{Path: filepath.Join(bin, "sluice-web"), Args: []string{"sluice-web", "devices"}, Env: env}).Output()
	if err != nil || strings.Contains(string(out), "phone") || !strings.Contains(string(out), "laptop") {
		t.Errorf("sluice web devices after: %v\n%s", err, out)
	}
}
