package netproxy

import (
	"bufio"
	"cmp"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/internal/testnet"
)

// benchDial opens a connection to target: directly, or through a tunnel
// of the proxy at proxy when proxy is not "".
func benchDial(b *testing.B, proxy string, direct netip.AddrPort) net.Conn {
	if proxy == "" {
		c, err := net.Dial("tcp", direct.String())
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		b.Fatal(err)
	}
	openTunnel(b, c, "bench.test:443")
	return c
}

// benchProxy serves a proxy that admits bench.test, mapped to server.
func benchProxy(b *testing.B, server netip.AddrPort) string {
	_, addr := start(b, Config{
		Allow:   append(rules(b, "verdict", "bench.test"), rules(b, "bench server", server.String())...),
		Resolve: table(map[string]netip.AddrPort{"bench.test": server}),
	})
	return addr
}

// BenchmarkConnect is one connection's round trip: open, send a byte, get
// it back, close. The proxy's added latency per connection is the
// difference between proxy and direct.
func BenchmarkConnect(b *testing.B) {
	echo := testnet.Serve(b, func(c net.Conn) { _, _ = io.Copy(c, c) })
	proxy := benchProxy(b, echo)
	for _, mode := range []struct{ name, proxy string }{{"direct", ""}, {"proxy", proxy}} {
		b.Run(mode.name, func(b *testing.B) {
			buf := []byte{'x'}
			for b.Loop() {
				c := benchDial(b, mode.proxy, echo)
				if _, err := c.Write(buf); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, buf); err != nil {
					b.Fatal(err)
				}
				_ = c.Close()
			}
		})
	}
}

const transferSize = 100 << 20

// BenchmarkTransfer is a 100 MB download, directly and through a tunnel.
func BenchmarkTransfer(b *testing.B) {
	block := make([]byte, 1<<20)
	source := testnet.Serve(b, func(c net.Conn) {
		for range transferSize / len(block) {
			if _, err := c.Write(block); err != nil {
				return
			}
		}
	})
	proxy := benchProxy(b, source)
	for _, mode := range []struct{ name, proxy string }{{"direct", ""}, {"proxy", proxy}} {
		b.Run(mode.name, func(b *testing.B) {
			b.SetBytes(transferSize)
			for b.Loop() {
				c := benchDial(b, mode.proxy, source)
				n, err := io.Copy(io.Discard, c)
				_ = c.Close()
				if err != nil || n != transferSize {
					b.Fatalf("%d bytes, %v", n, err)
				}
			}
		})
	}
}

// BenchmarkForward is one plain HTTP request and response on a kept-alive
// client connection through the proxy.
func BenchmarkForward(b *testing.B) {
	srv := testnet.Serve(b, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			_ = req.Body.Close()
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
				return
			}
		}
	})
	proxy := benchProxy(b, srv)
	cl := proxyClient(proxy)
	defer cl.CloseIdleConnections()
	for b.Loop() {
		resp, err := cl.Get("http://bench.test/x")
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
}

// BenchmarkCurlDownload is curl fetching 100 MB from a local HTTP server:
// directly; through a bare relay (accept, dial, io.Copy both ways: the
// least any proxy in user space does, here a splice on Linux); and
// through the proxy, by a CONNECT tunnel (--proxytunnel) and forwarded as
// plain HTTP (what curl does with http_proxy). The modes take turns, one
// download each per round, the order rotating. It reports the p50 of each
// mode's speed as curl measures it (the transfer, without curl's start)
// and its ratio to the direct one's: the ratio issue 32 asks of a
// networked run (exec's BenchmarkProxiedDownload), without the namespace
// around it; and the p50 of curl's CPU time and of this process's (the
// server and the relay or proxy).
func BenchmarkCurlDownload(b *testing.B) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		b.Skip("curl not installed")
	}
	srv := httptest.NewServer(http.HandlerFunc(serveSized))
	b.Cleanup(srv.Close)
	local := netip.MustParseAddrPort(srv.Listener.Addr().String())
	proxy := benchProxy(b, local)
	relay := testnet.Relay(b, local)
	modes := []struct {
		name   string
		args   []string
		speeds []float64 // curl's own, MB/s
		// CPU time: curl's, and this process's (the server's and the
		// relay's or proxy's)
		curlCPU, ownCPU []time.Duration
	}{
		{name: "direct", args: []string{srv.URL + "/"}},
		{name: "relay", args: []string{"http://" + relay.String() + "/"}},
		{name: "tunnel", args: []string{"--proxytunnel", "-x", "http://" + proxy, "http://bench.test/"}},
		{name: "forward", args: []string{"-x", "http://" + proxy, "http://bench.test/"}},
	}
	round := 0
	for b.Loop() {
		for k := range modes {
			m := &modes[(round+k)%len(modes)]
			cmd := exec.Command(curl, append([]string{"-sSf", "-o", "/dev/null", "-w", "%{speed_download}", "--noproxy", ""}, m.args...)...)
			cmd.Env = []string{"PATH=/usr/bin:/bin"}
			own0 := ownCPU()
			out, err := cmd.Output()
			if err != nil {
				b.Fatalf("%s: %v: %s", m.name, err, out)
			}
			bps, err := strconv.ParseFloat(string(out), 64)
			if err != nil || bps <= 0 {
				b.Fatalf("%s: speed %q", m.name, out)
			}
			m.speeds = append(m.speeds, bps/1e6)
			m.ownCPU = append(m.ownCPU, ownCPU()-own0)
			m.curlCPU = append(m.curlCPU, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
		}
		round++
	}
	direct := median(modes[0].speeds)
	for _, m := range modes {
		speed := median(m.speeds)
		b.ReportMetric(speed, m.name+"-MB/s")
		b.ReportMetric(float64(median(m.curlCPU))/1e6, m.name+"-curl-cpu-ms")
		b.ReportMetric(float64(median(m.ownCPU))/1e6, m.name+"-own-cpu-ms")
		if m.name != "direct" {
			b.ReportMetric(speed/direct, m.name+"/direct")
		}
	}
	b.ReportMetric(median(modes[3].speeds)/median(modes[1].speeds), "forward/relay")
}

// serveSized answers transferSize bytes, with their Content-Length.
func serveSized(w http.ResponseWriter, _ *http.Request) {
	block := make([]byte, 1<<20)
	w.Header().Set("Content-Length", strconv.Itoa(transferSize))
	for range transferSize / len(block) {
		if _, err := w.Write(block); err != nil {
			return
		}
	}
}

// median is the p50 of v.
func median[T cmp.Ordered](v []T) T {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// ownCPU is the CPU time this process has used (user and system).
func ownCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
