//go:build linux

package sandbox

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	osexec "os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// netOp performs the helper's network operations (see helperOp), each
// with an address "HOST,PORT" (HOST may be an IPv6 literal):
//
//	tcp:ADDR      connect a TCP socket
//	udp:ADDR      send one datagram
//	mptcp:ADDR    open an MPTCP socket and connect it
//	tfo:ADDR      send with TCP Fast Open (connects without connect)
//	raw           open a raw ICMP socket
//	loopback      listen on 127.0.0.1, connect to it, accept: the run's own
//	wait          read stdin to its end
//	listen        listen on a TCP socket never bound (the kernel picks a port)
func netOp(f []string) (string, bool) {
	addr := func() unix.Sockaddr {
		host, port, _ := strings.Cut(strings.Join(f[1:], ":"), ",")
		p, _ := strconv.Atoi(port)
		ip := net.ParseIP(strings.Trim(host, "[]"))
		if ip4 := ip.To4(); ip4 != nil {
			return &unix.SockaddrInet4{Port: p, Addr: [4]byte(ip4)}
		}
		return &unix.SockaddrInet6{Port: p, Addr: [16]byte(ip.To16())}
	}
	family := func(sa unix.Sockaddr) int {
		if _, ok := sa.(*unix.SockaddrInet4); ok {
			return unix.AF_INET
		}
		return unix.AF_INET6
	}
	var err error
	switch f[0] {
	case "tcp", "mptcp", "tfo":
		sa := addr()
		proto := 0
		if f[0] == "mptcp" {
			proto = unix.IPPROTO_MPTCP
		}
		var fd int
		if fd, err = unix.Socket(family(sa), unix.SOCK_STREAM|unix.SOCK_CLOEXEC, proto); err != nil {
			break
		}
		if f[0] == "tfo" {
			err = unix.Sendto(fd, []byte("x"), unix.MSG_FASTOPEN, sa)
		} else {
			err = unix.Connect(fd, sa)
		}
		unix.Close(fd)
	case "udp":
		sa := addr()
		var fd int
		if fd, err = unix.Socket(family(sa), unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
			break
		}
		err = unix.Sendto(fd, []byte("x"), 0, sa)
		unix.Close(fd)
	case "raw":
		var fd int
		if fd, err = unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMP); err == nil {
			unix.Close(fd)
		}
	case "loopback":
		var ln net.Listener
		if ln, err = net.Listen("tcp4", "127.0.0.1:0"); err != nil {
			break
		}
		defer ln.Close()
		var c net.Conn
		if c, err = net.Dial("tcp4", ln.Addr().String()); err != nil {
			break
		}
		defer c.Close()
		var a net.Conn
		if a, err = ln.Accept(); err == nil {
			a.Close()
		}
	case "listen":
		var fd int
		if fd, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0); err != nil {
			break
		}
		err = unix.Listen(fd, 1)
		unix.Close(fd)
	case "wait":
		_, err = io.Copy(io.Discard, os.Stdin)
	default:
		return "", false
	}
	return result(err), true
}

// tcpWatch records the connections a host listener accepts.
type tcpWatch struct {
	ln    net.Listener
	mu    sync.Mutex
	cond  *sync.Cond
	peers []string // remote addresses, in the order accepted
}

func watchTCP(t *testing.T, network, addr string) *tcpWatch {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	w := &tcpWatch{ln: ln}
	w.cond = sync.NewCond(&w.mu)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			w.mu.Lock()
			w.peers = append(w.peers, c.RemoteAddr().String())
			w.cond.Broadcast()
			w.mu.Unlock()
			c.Close()
		}
	}()
	return w
}

// op names the listener in a helper op: "KIND:HOST,PORT".
func (w *tcpWatch) op(kind string) string {
	a := w.ln.Addr().(*net.TCPAddr)
	return kind + ":" + a.IP.String() + "," + strconv.Itoa(a.Port)
}

// others is how many connections reached the listener before one the
// test makes now: the listener accepts in order, so once that one is in,
// every earlier one is.
func (w *tcpWatch) others(t *testing.T) int {
	t.Helper()
	c, err := net.Dial(w.ln.Addr().Network(), w.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sentinel := c.LocalAddr().String()
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		for i, p := range w.peers {
			if p == sentinel {
				return i
			}
		}
		w.cond.Wait()
	}
}

// udpWatch counts the datagrams a host socket receives.
type udpWatch struct {
	pc net.PacketConn
}

func watchUDP(t *testing.T) *udpWatch {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return &udpWatch{pc: pc}
}

func (u *udpWatch) op() string {
	return "udp:127.0.0.1," + strconv.Itoa(u.pc.LocalAddr().(*net.UDPAddr).Port)
}

// others sends the socket a sentinel and counts what came before it.
func (u *udpWatch) others(t *testing.T) int {
	t.Helper()
	c, err := net.Dial("udp4", u.pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("sentinel")); err != nil {
		t.Fatal(err)
	}
	n := 0
	buf := make([]byte, 64)
	for {
		m, _, err := u.pc.ReadFrom(buf)
		if err != nil {
			t.Fatal(err)
		}
		if string(buf[:m]) == "sentinel" {
			return n
		}
		n++
	}
}

// testProxy is an HTTP proxy standing in for the engine's, served on a
// run's ProxyListener: it answers every request with the host asked and
// records it.
type testProxy struct {
	mu   sync.Mutex
	seen []string // "METHOD URL"
}

func serveProxy(t *testing.T, c *Confinement) *testProxy {
	t.Helper()
	ln := c.ProxyListener()
	if ln == nil {
		t.Fatal("ProxyListener() = nil for a proxied run")
	}
	p := &testProxy{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.seen = append(p.seen, r.Method+" "+r.URL.String())
		p.mu.Unlock()
		fmt.Fprintf(w, "proxied %s\n", r.Host)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return p
}

func (p *testProxy) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

// runConfined runs name with args confined by c, with env, and returns
// its output (stdout and stderr) and exit error.
func runConfined(t *testing.T, c *Confinement, env []string, name string, args ...string) (string, error) {
	t.Helper()
	cmd := osexec.Command(name, args...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := Start(cmd, c, nil); err != nil {
		t.Fatalf("Start %s: %v", name, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	err := <-done
	return out.String(), err
}

// hostAddr is an address of this machine's own other than loopback, or
// nil: a listener there stands for a service on the private network.
func hostAddr() net.IP {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() && n.IP.To4() != nil {
			return n.IP
		}
	}
	return nil
}

// escapeCase is one attempt to reach past the proxy, and what each
// mechanism answers it with.
type escapeCase struct {
	op          string
	ownNS, port string // the helper's line: own namespace, port fallback
}

// TestProxyEscapes: a networked run with a proxy reaches its proxy and
// nothing else, in its own network namespace (boxed) and without one
// (Landlock's port rule and the TCP-only filter). A host listener on
// 127.0.0.1, on ::1 and on the machine's own address gets no connection
// (direct, by MPTCP, by TCP Fast Open, by bash's /dev/tcp); a host UDP
// socket gets no datagram; curl through the environment reaches the
// test proxy. The same ops from a plain networked run do reach the
// listeners: what is counted is what the confinement stops.
func TestProxyEscapes(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	bash, err := osexec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	curl, err := osexec.LookPath("curl")
	if err != nil {
		t.Skip("no curl")
	}
	for _, mode := range []string{"own namespace", "port"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			s := f.spec(Networked)
			s.Proxy = true
			if mode == "own namespace" {
				s.Box = boxForTest(t)
			}
			// One confinement, and one proxy, for each start: a run in
			// its own namespace is started once.
			c := prepare(t, s)
			want := map[string]string{"own namespace": "network: own namespace, proxy only", "port": "network: proxy port only (no namespaces: sluice-box is not installed beside sluice)"}[mode]
			if got := c.Network(); got != want {
				t.Errorf("Network() = %q, want %q", got, want)
			}
			accepted := countAccepts(c.ProxyListener())

			lo := watchTCP(t, "tcp4", "127.0.0.1:0")
			watches := map[string]*tcpWatch{"127.0.0.1": lo}
			cases := []escapeCase{
				{lo.op("tcp"), "err ECONNREFUSED", "err EACCES"},
				{lo.op("mptcp"), "err EACCES", "err EACCES"},
				{lo.op("tfo"), "", "err EACCES"},
				{"raw", "err EPERM", "err EACCES"},
				{"socket:netlink", "err EACCES", "err EACCES"},
				{"loopback", "ok", "err EACCES"},
				{"listen", "ok", "err EACCES"},
				// The proxy itself, where the run reaches it.
				{"tcp:127.0.0.1," + strings.TrimPrefix(c.ProxyURL(), "http://127.0.0.1:"), "ok", "ok"},
			}
			if l6, err := net.Listen("tcp6", "[::1]:0"); err == nil {
				l6.Close()
				w := watchTCP(t, "tcp6", "[::1]:0")
				watches["::1"] = w
				cases = append(cases, escapeCase{w.op("tcp"), "err ECONNREFUSED", "err EACCES"})
			}
			if ip := hostAddr(); ip != nil {
				w := watchTCP(t, "tcp4", net.JoinHostPort(ip.String(), "0"))
				watches[ip.String()] = w
				cases = append(cases, escapeCase{w.op("tcp"), "err ENETUNREACH", "err EACCES"})
			}
			udp := watchUDP(t)
			// In its namespace the datagram goes to the run's own
			// loopback, where nothing listens.
			cases = append(cases, escapeCase{udp.op(), "ok", "err EACCES"})
			var ops []string
			for _, e := range cases {
				ops = append(ops, e.op)
			}
			got := runHelper(t, c, nil, ops...)
			for _, e := range cases {
				w := e.ownNS
				if mode == "port" {
					w = e.port
				}
				if w == "" {
					// The kernel's answer varies (a Fast Open send to
					// nothing); what counts is what arrived.
					if got[e.op] == "ok" {
						t.Errorf("%s: ok", e.op)
					}
					continue
				}
				if got[e.op] != w {
					t.Errorf("%s: %s, want %s", e.op, got[e.op], w)
				}
			}

			accepted.atLeast(1)

			// bash's /dev/tcp, at the host's loopback listener.
			c = prepare(t, s)
			out, err := runConfined(t, c, os.Environ(), bash, "-c", "exec 3<>/dev/tcp/127.0.0.1/"+strconv.Itoa(lo.ln.Addr().(*net.TCPAddr).Port)+" && echo connected")
			if err == nil || strings.Contains(out, "connected") {
				t.Errorf("bash /dev/tcp connected: %v %s", err, out)
			}

			for name, w := range watches {
				if n := w.others(t); n != 0 {
					t.Errorf("%d connections reached the host's listener on %s", n, name)
				}
			}
			if n := udp.others(t); n != 0 {
				t.Errorf("%d datagrams reached the host's UDP socket", n)
			}

			// A tool that ignores the proxy fails at once (no name
			// server, no route), never hangs.
			c = prepare(t, s)
			out, err = runConfined(t, c, os.Environ(), curl, "-sS", "--noproxy", "*", "--max-time", "60", "http://example.test/")
			if err == nil {
				t.Errorf("curl without the proxy succeeded: %s", out)
			} else if code := err.(*osexec.ExitError).ExitCode(); code != 6 && code != 7 {
				t.Errorf("curl without the proxy: %v (want 6, no name, or 7, no connection)\n%s", err, out)
			}

			// The proxy, through the environment.
			c = prepare(t, s)
			proxy := serveProxy(t, c)
			env := ProxyEnv(os.Environ(), c.ProxyURL())
			out, err = runConfined(t, c, env, curl, "-sS", "--max-time", "60", "http://example.test/path")
			if err != nil || !strings.Contains(out, "proxied example.test") {
				t.Errorf("curl through the proxy: %v\n%s", err, out)
			}
			if reqs := proxy.requests(); len(reqs) != 1 || reqs[0] != "GET http://example.test/path" {
				t.Errorf("the proxy saw %q, want one GET http://example.test/path", reqs)
			}
		})
	}
}

// TestProxyEscapesControl: the escape ops of TestProxyEscapes, from a
// networked run without a proxy, do reach the host's listeners: the
// counting sees a connection where there is one.
func TestProxyEscapesControl(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	f := newFixture(t)
	c := prepare(t, f.spec(Networked))
	if got := c.Network(); got != "network: any host" {
		t.Errorf("Network() = %q", got)
	}
	lo := watchTCP(t, "tcp4", "127.0.0.1:0")
	udp := watchUDP(t)
	got := runHelper(t, c, nil, lo.op("tcp"), udp.op())
	if got[lo.op("tcp")] != "ok" || got[udp.op()] != "ok" {
		t.Errorf("unproxied: %v", got)
	}
	if n := lo.others(t); n != 1 {
		t.Errorf("%d connections reached the listener, want 1", n)
	}
	if n := udp.others(t); n != 1 {
		t.Errorf("%d datagrams reached the UDP socket, want 1", n)
	}
}

// acceptCounter counts the connections accepted on a run's proxy
// listener.
type acceptCounter struct {
	mu    sync.Mutex
	cond  *sync.Cond
	count int
	err   chan error // Accept's error, once it returns one
}

func countAccepts(ln net.Listener) *acceptCounter {
	a := &acceptCounter{err: make(chan error, 1)}
	a.cond = sync.NewCond(&a.mu)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				a.err <- err
				return
			}
			a.mu.Lock()
			a.count++
			a.cond.Broadcast()
			a.mu.Unlock()
			c.Close()
		}
	}()
	return a
}

// atLeast waits until n connections were accepted.
func (a *acceptCounter) atLeast(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for a.count < n {
		a.cond.Wait()
	}
}

func (a *acceptCounter) n() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.count
}

// TestProxyOtherRun: a run reaches its own proxy, never another run's,
// while both run. In its own namespace 127.0.0.1:3128 is its own proxy's;
// without namespaces, Landlock refuses the other run's port.
func TestProxyOtherRun(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	for _, mode := range []string{"own namespace", "port"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			s := f.spec(Networked)
			s.Proxy = true
			if mode == "own namespace" {
				s.Box = boxForTest(t)
			}
			a, b := prepare(t, s), prepare(t, s)
			pa, pb := countAccepts(a.ProxyListener()), countAccepts(b.ProxyListener())
			portA := strings.TrimPrefix(a.ProxyURL(), "http://127.0.0.1:")
			portB := strings.TrimPrefix(b.ProxyURL(), "http://127.0.0.1:")

			// Run a waits, its namespace and port live, while b tries.
			wait := helperCmd("wait")
			stdin, err := wait.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := Start(wait, a, nil); err != nil {
				t.Fatal(err)
			}
			ops := []string{"tcp:127.0.0.1," + portA, "tcp:127.0.0.1," + portB}
			got := runHelper(t, b, nil, ops...)
			stdin.Close()
			waitCmd(t, wait)

			want := 2 // both ops name 127.0.0.1:3128: b's own
			if mode == "port" {
				want = 1
				if portA == portB {
					t.Fatalf("two runs got one port, %s", portA)
				}
				if got[ops[0]] != "err EACCES" {
					t.Errorf("run b to run a's proxy port: %s, want err EACCES", got[ops[0]])
				}
			}
			for _, op := range ops[2-want:] {
				if got[op] != "ok" {
					t.Errorf("run b to its own proxy (%s): %s", op, got[op])
				}
			}
			// b's connections reached b's proxy; closing a's listener
			// then ends its Accept after whatever a's queue held.
			pb.atLeast(want)
			a.Close()
			<-pa.err
			if n := pa.n(); n != 0 {
				t.Errorf("run a's proxy accepted %d connections from run b", n)
			}
		})
	}
}

// TestProxyListenerEnds: the proxy listener of a run in its own
// namespace never leaves Accept waiting for good: it fails once the box
// ended without sending its listener, or once closed.
func TestProxyListenerEnds(t *testing.T) {
	t.Parallel()
	n, err := nsNet()
	if err != nil {
		t.Fatal(err)
	}
	acc := countAccepts(n.ln)
	n.started() // the box's end closed, nothing sent: as a box that died
	if err := <-acc.err; err == nil || !strings.Contains(err.Error(), "sent no listener") {
		t.Errorf("Accept after the box ended: %v", err)
	}
	n.close()

	n, err = nsNet()
	if err != nil {
		t.Fatal(err)
	}
	acc = countAccepts(n.ln)
	n.ln.Close()
	if err := <-acc.err; err == nil {
		t.Error("Accept after Close: no error")
	}
	n.close()
}

// TestProxyStartsOnce: a run in its own network namespace holds no
// capability, is started once per confinement, and never without its namespace: where the kernel
// refused the namespaces at start, it is not started on the host's
// network.
func TestProxyStartsOnce(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	f := newFixture(t)
	s := f.spec(Networked)
	s.Proxy = true
	s.Box = boxForTest(t)
	c := prepare(t, s)
	// The run keeps none of the capabilities its box had in their
	// namespace (to mount, to bring the loopback up).
	got := runHelper(t, c, nil, "status")
	for _, w := range []string{"CapEff=0000000000000000", "CapPrm=0000000000000000", "CapAmb=0000000000000000", "NoNewPrivs=1"} {
		if !strings.Contains(got["status"], w) {
			t.Errorf("the run's status %q, want %s", got["status"], w)
		}
	}
	if err := Start(helperCmd("loopback"), c, nil); err != errStartedOnce {
		t.Errorf("second Start: %v, want %v", err, errStartedOnce)
	}
	c = prepare(t, s)
	c.box = nil // as after the kernel refused the namespaces
	if err := Start(helperCmd("loopback"), c, nil); err != errNoNamespace {
		t.Errorf("Start without the namespace: %v, want %v", err, errNoNamespace)
	}
}

// TestProxySpec: a proxy is for the networked profile.
func TestProxySpec(t *testing.T) {
	t.Parallel()
	for _, p := range []Profile{ReadOnly, Mutating} {
		s := Spec{Profile: p, Proxy: true}
		if err := s.Validate(); err == nil {
			t.Errorf("%s with a proxy: valid", p)
		}
	}
	if err := (&Spec{Profile: Networked, Proxy: true}).Validate(); err != nil {
		t.Errorf("networked with a proxy: %v", err)
	}
}
