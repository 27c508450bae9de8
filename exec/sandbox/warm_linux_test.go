package sandbox

import (
	"os"
	"path/filepath"
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
		// Each run in a cgroup of its own, as the wrapper's is.
		g := requireCgroup(t, "warm-"+string(p), 64)
		ops = append(ops, "readfile:/proc/self/cgroup")
		// The first run starts cold; the next one, once a thread is
		// readied, warm.
		before := warm.started.Load()
		first := runHelper(t, c, g, ops...)
		if warm.started.Load() != before {
			t.Fatalf("%s: a run started warm with no thread readied", p)
		}
		prewarm(c.filter)
		deadline := time.Now().Add(5 * time.Second)
		for {
			warm.mu.Lock()
			_, ready := warm.ready[c.filter]
			warm.mu.Unlock()
			if ready {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no warm thread 5 s after prewarm", p)
			}
			time.Sleep(time.Millisecond)
		}
		before = warm.started.Load()
		second := runHelper(t, c, g, ops...)
		if warm.started.Load() != before+1 {
			t.Fatalf("%s: the second run did not start from the warm thread", p)
		}
		for _, op := range ops {
			if first[op] != second[op] {
				t.Errorf("%s: %s: %q, then from the warm thread %q", p, op, first[op], second[op])
			}
		}
		if cg := second["readfile:/proc/self/cgroup"]; g.v1 != "" && !strings.Contains(cg, filepath.Base(g.v1)) {
			t.Errorf("%s: the warm-started child is not in the run's cgroup %s: %s", p, g.v1, cg)
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

// Prewarm readies a thread for a read_only run only: a run that writes or
// reaches the network may start through a helper program instead.
func TestPrewarmReadOnlyOnly(t *testing.T) {
	requireSandbox(t)
	f, err := filters()
	if err != nil {
		t.Fatal(err)
	}
	Prewarm(Mutating)
	Prewarm(Networked)
	Prewarm(ReadOnly)
	deadline := time.Now().Add(5 * time.Second)
	for {
		warm.mu.Lock()
		_, ro := warm.ready[f[2]]
		mutPending, netPending := warm.pending[f[0]], warm.pending[f[1]]
		_, mut := warm.ready[f[0]]
		_, net := warm.ready[f[1]]
		warm.mu.Unlock()
		if mut || net || mutPending || netPending {
			t.Fatal("a thread was readied for a run that writes or reaches the network")
		}
		if ro {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no thread readied for read_only 5 s after Prewarm")
		}
		time.Sleep(time.Millisecond)
	}
}

// parkedThreads are the warm threads waiting for a run.
func parkedThreads() map[int]bool {
	warm.mu.Lock()
	defer warm.mu.Unlock()
	out := map[int]bool{}
	for _, s := range warm.ready {
		out[s.tid] = true
	}
	return out
}
