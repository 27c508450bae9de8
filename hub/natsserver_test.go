package hub

import (
	"bufio"
	"context"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// natsServer starts nats-server (the Debian package, or any on PATH)
// from st's 'sluice hub config', makes the buckets with Init, and
// runs the hub's Service beside it in this process. In CI (CI set) a
// missing nats-server fails the test.
func natsServer(t *testing.T, st *Store) *serverProc {
	t.Helper()
	p := natsServerBare(t, st)
	runService(t, st, p.url, Limits{})
	return p
}

// natsServerBare is natsServer without the service.
func natsServerBare(t *testing.T, st *Store) *serverProc {
	t.Helper()
	bin, err := osexec.LookPath("nats-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("nats-server is not installed (.ci/run installs the Debian package)")
		}
		t.Skip("nats-server is not installed (apt-get install nats-server)")
	}
	addr := freeAddr(t)
	cfg, err := st.ServerConfig(addr)
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "hub.conf")
	if err := os.WriteFile(conf, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	p := &serverProc{t: t, url: "nats://" + addr, argv: []string{bin, "-c", conf}, ready: "Server is ready"}
	t.Cleanup(p.kill)
	p.mustStart()
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
