package hub

import (
	"bufio"
	"context"

	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// natsServer runs a real nats-server process (the Debian package, or any
// on PATH) from the store's 'sluice hub config', and makes the buckets
// with Init. In CI (CI set) a missing nats-server fails the test.
func natsServer(t *testing.T, st *Store) string {
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
	conf := filepath.Join(t.TempDir(), "hub.conf")
	if err := os.WriteFile(conf, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := osexec.Command(bin, "-c", conf)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan string, 1)
	go func() {
		var log strings.Builder
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "Server is ready") {
				ready <- ""
			}
		}
		ready <- log.String()
	}()
	select {
	case out := <-ready:
		if out != "" {
			t.Fatalf("nats-server exited:\n%s", out)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("nats-server did not get ready in 20 s")
	}
	url := "nats://" + addr
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := st.Init(ctx, url); err != nil {
		t.Fatal(err)
	}
	return url
}

// The same fleet against nats-server run as a process of its own, from
// the configuration 'sluice hub config' writes: the permissions hold, and
// two boxes and a console work as with the embedded hub.
func TestRealNATSServer(t *testing.T) {
	st, err := Open(filepath.Join(t.TempDir(), "hub"))
	if err != nil {
		t.Fatal(err)
	}
	creds := map[string]*Creds{}
	for _, u := range []struct{ name, role string }{{"b1", RoleBox}, {"b2", RoleBox}, {"c1", RoleConsole}, {"c2", RoleConsole}} {
		c, _, err := st.Add(u.name, u.role, "")
		if err != nil {
			t.Fatal(err)
		}
		creds[u.name] = c
	}
	url := natsServer(t, st)
	out, _ := osexec.Command("nats-server", "--version").Output()
	t.Logf("against %s at %s", strings.TrimSpace(string(out)), url)
	t.Run("permissions", func(t *testing.T) { permissionsScenario(t, url, creds) })
	t.Run("two boxes one console", func(t *testing.T) { twoBoxesOneConsole(t, url, creds) })
}
