//go:build linux

package sandbox

import (
	osexec "os/exec"
	"slices"
	"testing"
	"time"
)

// BenchmarkProxiedStart: a networked run of `true`, prepared, started,
// waited for and released, four ways in one loop (the order rotating
// every iteration): boxed without a proxy, boxed with its own network
// namespace and proxy listener, unboxed without a proxy, unboxed with the
// proxy port fallback. It reports each one's p50 and the proxied ones'
// p50 over their unproxied neighbour's: what the network namespace (or
// the port rule and its listener) adds to a run's start. Run with
// -benchtime=200x for 200 runs of each.
func BenchmarkProxiedStart(b *testing.B) {
	if _, err := Available(); err != nil {
		b.Skip(err)
	}
	f := newFixture(b)
	box := boxForTest(b)
	type variant struct {
		name       string
		box, proxy bool
		times      []time.Duration
	}
	vs := []*variant{{name: "boxed"}, {name: "boxed-netns", box: true, proxy: true}, {name: "unboxed"}, {name: "unboxed-port", proxy: true}}
	vs[0].box = true
	run := func(v *variant) time.Duration {
		s := f.spec(Networked)
		s.Proxy = v.proxy
		if v.box {
			s.Box = box
		}
		t0 := time.Now()
		c, err := Prepare(s)
		if err != nil {
			b.Fatal(err)
		}
		cmd := osexec.Command("/bin/true")
		if err := Start(cmd, c, nil); err != nil {
			b.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			b.Fatalf("%s: %v", v.name, err)
		}
		c.Close()
		return time.Since(t0)
	}
	i := 0
	for b.Loop() {
		for k := range vs {
			v := vs[(i+k)%len(vs)]
			v.times = append(v.times, run(v))
		}
		i++
	}
	p50 := func(ts []time.Duration) time.Duration {
		s := slices.Clone(ts)
		slices.Sort(s)
		return s[len(s)/2]
	}
	for k, v := range vs {
		m := p50(v.times)
		b.ReportMetric(float64(m)/1e6, v.name+"-p50-ms")
		if k%2 == 1 {
			b.ReportMetric(float64(m)/float64(p50(vs[k-1].times)), v.name+"/"+vs[k-1].name+"-p50")
		}
	}
}
