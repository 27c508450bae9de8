//go:build linux

package exec

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/exec/sandbox"
	"github.com/sluice-dev/sluice/internal/testnet"
	"github.com/sluice-dev/sluice/queue"
)

// downloadSize is the download of issue 32's row.
const downloadSize = 100 << 20

// BenchmarkProxiedDownload is issue 32's row: `curl -o /dev/null` of
// 100 MB from a local server, run by a Runner networked (through the
// run's proxy: in a network namespace of its own, and in the port
// fallback) against the same download run unconfined, and, to tell the
// proxy's share from the extra hop's, unconfined through a bare relay
// (accept, dial, io.Copy both ways: spliced; the least any proxy in user
// space does). The variants take turns, one download each per round, the
// order rotating. It reports each one's p50 of Run's wall time and of
// curl's own download speed (%{speed_download}: from curl's start of the
// transfer to its end, without the run's start, whose price
// sandbox.BenchmarkProxiedStart measures, nor curl's), and the ratios
// of the networked and relayed downloads' speeds to the unconfined one's
// (the target: ≥ 0.9x), and of the networked ones' to the
// relay's. Run with -benchtime=20x for 20 rounds.
func BenchmarkProxiedDownload(b *testing.B) {
	if _, err := osexec.LookPath("curl"); err != nil {
		b.Skip("curl not installed")
	}
	spool := benchSpool(b)
	conf := benchConfine(b, spool)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		block := make([]byte, 1<<20)
		w.Header().Set("Content-Length", strconv.Itoa(downloadSize))
		for range downloadSize / len(block) {
			if _, err := w.Write(block); err != nil {
				return
			}
		}
	}))
	b.Cleanup(srv.Close)
	addr := netip.MustParseAddrPort(srv.Listener.Addr().String())
	// The server is on the host's loopback: a rule names its address
	// for download.test, which the runs' proxies resolve to it.
	conf.NetAllow = []string{addr.String()}
	conf.resolve = func(_ context.Context, host string, _ int) ([]netip.AddrPort, error) {
		if host == "download.test" {
			return []netip.AddrPort{addr}, nil
		}
		return nil, fmt.Errorf("no such host %s", host)
	}
	portConf := *conf
	nsConf := *conf
	nsConf.Box = boxLink(b)
	if why := sandbox.BoxRefused(nsConf.Box); why != "" {
		b.Logf("no network namespace for a run (%s): the port fallback only", why)
		nsConf.Box = ""
	}

	type variant struct {
		name   string
		r      *Runner
		url    string
		opt    Options
		times  []time.Duration
		speeds []float64 // MB/s
	}
	networked := Options{Profile: "networked", Hosts: HostSet{Allow: []string{"download.test"}}}
	vs := []*variant{
		{name: "unconfined", r: testRunner(), url: "http://" + addr.String() + "/100M"},
		{name: "relay", r: testRunner(), url: "http://" + testnet.Relay(b, addr).String() + "/100M"},
		{name: "port", r: testRunner(), url: "http://download.test/100M", opt: networked},
	}
	vs[2].r.Confine = &portConf
	if nsConf.Box != "" {
		v := &variant{name: "netns", r: testRunner(), url: "http://download.test/100M", opt: networked}
		v.r.Confine = &nsConf
		vs = append(vs, v)
	}
	b.Cleanup(func() {
		for _, v := range vs {
			_ = v.r.Close()
		}
	})
	run := func(v *variant) {
		req := &queue.Request{Version: queue.Version, ID: fmt.Sprintf("r%d-%d", os.Getpid(), runSeq.Add(1)),
			Kind: queue.KindExec, Command: "curl -sSf -o /dev/null -w 'speed=%{speed_download}\\n' " + v.url, Cwd: b.TempDir()}
		opt := v.opt
		opt.LogPath = filepath.Join(spool, "out", req.ID+".log")
		t0 := time.Now()
		res, _ := v.r.Run(b.Context(), req, opt)
		d := time.Since(t0)
		if res.Status != queue.StatusDone || res.ExitCode == nil || *res.ExitCode != 0 {
			log, _ := os.ReadFile(opt.LogPath)
			b.Fatalf("%s: %+v\n%s", v.name, res, log)
		}
		if v.opt.Profile != "" {
			if n := res.Network; len(n) != 1 || n[0].Host != "download.test" || n[0].Received < downloadSize {
				b.Fatalf("%s: network %+v, want download.test with the whole download", v.name, n)
			}
		}
		log, err := os.ReadFile(opt.LogPath)
		if err != nil {
			b.Fatal(err)
		}
		_ = os.Remove(opt.LogPath)
		m := speedRe.FindSubmatch(log)
		if m == nil {
			b.Fatalf("%s: no speed in the output %q", v.name, log)
		}
		bps, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil || bps <= 0 {
			b.Fatalf("%s: speed %q", v.name, m[1])
		}
		v.times = append(v.times, d)
		v.speeds = append(v.speeds, bps/1e6)
	}
	i := 0
	for b.Loop() {
		for k := range vs {
			run(vs[(i+k)%len(vs)])
		}
		i++
	}
	base, relay := medianOf(vs[0].speeds), medianOf(vs[1].speeds)
	for _, v := range vs {
		speed := medianOf(v.speeds)
		b.ReportMetric(float64(median(v.times))/1e6, v.name+"-p50-ms")
		b.ReportMetric(speed, v.name+"-MB/s")
		if v != vs[0] {
			b.ReportMetric(speed/base, v.name+"/unconfined")
		}
		if v.opt.Profile != "" {
			b.ReportMetric(speed/relay, v.name+"/relay")
		}
	}
}

// speedRe finds curl's %{speed_download} (bytes a second) in a log.
var speedRe = regexp.MustCompile(`speed=([0-9.]+)`)

// medianOf is the p50 of f.
func medianOf(f []float64) float64 {
	s := slices.Clone(f)
	slices.Sort(s)
	return s[len(s)/2]
}

// median is the p50 of d.
func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
