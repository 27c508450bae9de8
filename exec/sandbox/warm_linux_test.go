package sandbox

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A run started from a thread readied ahead of time is confined exactly as
// one started cold: the same capabilities, no_new_privs, one seccomp
// filter (not two), and the same Landlock refusals. Not parallel: it
// counts the warm starts.
func TestWarmStartConfinesAsCold(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t)
	for _, p := range []Profile{ReadOnly, Mutating} {
		c := prepare(t, f.spec(p)) // no Box: the warm thread serves runs without one
		if c.box != nil {
			t.Fatalf("%s: boxed", p)
		}
		ops := []string{"status", "read:" + f.p("home/.ssh/id_rsa"), "create:" + f.p("outside/new"), "create:" + f.p("project/new-"+string(p)),
			"read:/etc/passwd", "exec:/bin/true", "socket:inet", "socket:unix", "iouring", "environ:" + strconv.Itoa(os.Getpid())}
		// The first run starts cold; the next one, once Prewarm has
		// readied a thread, warm.
		before := warm.started.Load()
		first := runHelper(t, c, nil, ops...)
		if warm.started.Load() != before {
			t.Fatalf("%s: a run started warm with no thread readied", p)
		}
		Prewarm(p)
		deadline := time.Now().Add(5 * time.Second)
		for {
			warm.mu.Lock()
			_, ready := warm.ready[c.filter]
			warm.mu.Unlock()
			if ready {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no warm thread 5 s after Prewarm", p)
			}
			time.Sleep(time.Millisecond)
		}
		before = warm.started.Load()
		second := runHelper(t, c, nil, ops...)
		if warm.started.Load() != before+1 {
			t.Fatalf("%s: the second run did not start from the warm thread", p)
		}
		for _, op := range ops {
			if first[op] != second[op] {
				t.Errorf("%s: %s: %q, then from the warm thread %q", p, op, first[op], second[op])
			}
		}
		st := second["status"]
		for _, w := range []string{"NoNewPrivs=1", "Seccomp=2", "Seccomp_filters=1"} {
			if !strings.Contains(st, w) {
				t.Errorf("%s: the warm-started child's status %q lacks %s", p, st, w)
			}
		}
		if os.Geteuid() == 0 && !strings.Contains(st, "CapEff=0000000000000000") {
			t.Errorf("%s: the warm-started child of root has capabilities: %q", p, st)
		}
		for op, want := range map[string]string{"read:" + f.p("home/.ssh/id_rsa"): "err EACCES", "create:" + f.p("outside/new"): "err EACCES",
			"socket:inet": "err EACCES", "iouring": "err EACCES", "read:/etc/passwd": "ok"} {
			if second[op] != want {
				t.Errorf("%s: %s from the warm thread: %s, want %s", p, op, second[op], want)
			}
		}
	}
}
