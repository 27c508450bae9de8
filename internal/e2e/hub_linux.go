package e2e

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// Hub is a fleet hub ('sluice hub serve', the embedded one) and a
// console's credentials for it, as a person at a console uses them
// ('sluice hub ls', 'sluice hub approve').
type Hub struct {
	T     testing.TB
	Bin   string
	Dir   string
	Store string
	Addr  string // 127.0.0.1:PORT, kept across restarts
	URL   string // nats://Addr
	Env   []string

	mu      sync.Mutex
	proc    *Proc
	started started
}

var listening = regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`)

// NewHub starts a hub on a free port of 127.0.0.1 and makes a console
// "me" for it. It is stopped at the test's end.
func NewHub(t testing.TB) *Hub {
	t.Helper()
	dir := t.TempDir()
	h := &Hub{T: t, Bin: Bin(t), Dir: dir, Store: filepath.Join(dir, "store"), Addr: "127.0.0.1:0"}
	h.Env = homeEnv(dir)
	t.Cleanup(h.started.stop)
	h.Start()
	h.URL = "nats://" + h.Addr
	if code, out, errs := h.Sluice("hub", "add-console", "me", "--url", h.URL, "--store", h.Store); code != 0 {
		t.Fatalf("add-console: exit %d: %s%s", code, out, errs)
	}
	if err := os.MkdirAll(filepath.Join(dir, "config", "sluice"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(h.Store, "creds", "me.creds"), h.ConsoleCreds()); err != nil {
		t.Fatal(err)
	}
	return h
}

// ConsoleCreds is the console's credentials file.
func (h *Hub) ConsoleCreds() string { return filepath.Join(h.Dir, "config", "sluice", "hub.creds") }

// Start starts the hub (again: on the address it had), and waits until it
// listens.
func (h *Hub) Start() {
	h.T.Helper()
	cmd := h.command("hub", "serve", "--listen", h.Addr, "--store", h.Store)
	p := h.started.start(h.T, "sluice hub serve", cmd)
	h.mu.Lock()
	h.proc = p
	h.mu.Unlock()
	Until(h.T, "the hub listens", func() bool {
		if p.Exited() {
			h.T.Fatalf("the hub exited: %v\n%s", p.Cmd.ProcessState, p.Stderr.String())
		}
		m := listening.FindStringSubmatch(p.Stderr.String())
		if m != nil {
			h.Addr = m[1]
		}
		return m != nil
	})
}

// Kill kills the hub with SIGKILL.
func (h *Hub) Kill() {
	h.mu.Lock()
	p := h.proc
	h.mu.Unlock()
	p.Kill()
}

func (h *Hub) command(args ...string) *osexec.Cmd {
	cmd := osexec.Command(filepath.Join(h.Bin, "sluice"), args...)
	cmd.Env, cmd.Dir = h.Env, h.Dir
	return cmd
}

// StartSluice starts sluice as the person at the console.
func (h *Hub) StartSluice(args ...string) *Proc {
	h.T.Helper()
	return h.started.start(h.T, "sluice "+strings.Join(args, " "), h.command(args...))
}

// Sluice runs sluice as the person at the console, to its end.
func (h *Hub) Sluice(args ...string) (code int, stdout, stderr string) {
	h.T.Helper()
	return h.StartSluice(args...).Result(h.T)
}

// AddBox makes box name's credentials and puts them where the box's
// sluice serve --hub reads them.
func (h *Hub) AddBox(b *Box, name string) {
	h.T.Helper()
	if code, out, errs := h.Sluice("hub", "add-box", name, "--url", h.URL, "--store", h.Store); code != 0 {
		h.T.Fatalf("add-box: exit %d: %s%s", code, out, errs)
	}
	if err := os.Rename(filepath.Join(h.Store, "creds", name+".creds"), filepath.Join(b.Dir, "config", "sluice", "hub.creds")); err != nil {
		h.T.Fatal(err)
	}
}

// WaitListed waits until 'sluice hub ls' lists box/id.
func (h *Hub) WaitListed(box, id string) {
	h.T.Helper()
	Until(h.T, "sluice hub ls lists "+box+"/"+id, func() bool {
		_, out, _ := h.Sluice("hub", "ls")
		return strings.Contains(out, box+"/"+id)
	})
}
