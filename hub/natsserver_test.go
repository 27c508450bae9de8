package hub

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// natsProc is a nats-server process (the Debian package, or any on PATH)
// run from the store's 'sluice hub config': it can be killed (SIGKILL)
// and started again on the same address and store.
type natsProc struct {
	t    *testing.T
	bin  string
	conf string
	url  string
	mu   sync.Mutex
	cmd  *osexec.Cmd
}

// natsServer starts a natsProc for st, makes the buckets with Init, and
// runs the hub's Service beside it in this process. In CI (CI set) a
// missing nats-server fails the test.
func natsServer(t *testing.T, st *Store) *natsProc {
	t.Helper()
	p := natsServerBare(t, st)
	runService(t, st, p.url, Limits{})
	return p
}

// natsServerBare is natsServer without the service.
func natsServerBare(t *testing.T, st *Store) *natsProc {
	t.Helper()
	bin, err := osexec.LookPath("nats-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("nats-server is not installed (.ci/run installs the Debian package)")
		}
		t.Skip("nats-server is not installed (apt-get install nats-server)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg, err := st.ServerConfig(addr)
	if err != nil {
		t.Fatal(err)
	}
	p := &natsProc{t: t, bin: bin, conf: filepath.Join(t.TempDir(), "hub.conf"), url: "nats://" + addr}
	if err := os.WriteFile(p.conf, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	p.start()
	t.Cleanup(p.kill)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := st.Init(ctx, p.url, Limits{}); err != nil {
		t.Fatal(err)
	}
	return p
}

// runService runs the hub's Service beside a nats-server at url (as
// 'sluice hub service' does), until the test ends.
func runService(t *testing.T, st *Store, url string, lim Limits) {
	t.Helper()
	nc, err := st.AdminConn(url, nats.Name("sluice hub service (test)"), quiet())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	svc := &Service{NC: nc, Limits: lim, Logf: func(f string, a ...any) { t.Logf("service: "+f, a...) }}
	go func() {
		defer close(done)
		if err := svc.Run(ctx); err != nil {
			t.Errorf("the service: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done; nc.Close() })
	// Serving once its subscription is on the server.
	waitFor(t, "the decision service", func() bool {
		m, err := nc.Request(DecideSubject("probe"), []byte("{}"), time.Second)
		return err == nil && len(m.Data) > 0
	})
}

// watchStderr reads a child's stderr: "" on the channel when a line holds
// ready, then, when the stream ends, all it read.
func watchStderr(stderr io.Reader, ready string) <-chan string {
	out := make(chan string, 1)
	go func() {
		var log strings.Builder
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), ready) {
				out <- ""
			}
		}
		out <- log.String()
	}()
	return out
}

// start runs the server and waits until it says it is ready.
func (p *natsProc) start() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return // running
	}
	cmd := osexec.Command(p.bin, "-c", p.conf)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.cmd = cmd
	ready := watchStderr(stderr, "Server is ready")
	select {
	case out := <-ready:
		if out != "" {
			p.t.Errorf("nats-server exited:\n%s", out)
		}
	case <-time.After(20 * time.Second):
		p.t.Error("nats-server did not get ready in 20 s")
	}
}

// kill stops the server with SIGKILL: no shutdown of its own.
func (p *natsProc) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		p.cmd.Process.Signal(syscall.SIGKILL)
		p.cmd.Wait()
		p.cmd = nil
	}
}

// The same fleet against nats-server run as a process of its own, from
// the configuration 'sluice hub config' writes: the permissions hold, and
// two boxes and a console work as with the embedded hub.
func TestRealNATSServer(t *testing.T) {
	st, creds := testStore(t, []string{"b1", "b2"}, []string{"c1", "c2"})
	url := natsServer(t, st).url
	out, _ := osexec.Command("nats-server", "--version").Output()
	t.Logf("against %s at %s", strings.TrimSpace(string(out)), url)
	t.Run("permissions", func(t *testing.T) { permissionsScenario(t, url, creds) })
	t.Run("two boxes one console", func(t *testing.T) { twoBoxesOneConsole(t, url, creds) })
	t.Run("buckets hardened", func(t *testing.T) { bucketsHardened(t, url, creds) })
}
