//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// agentScene is a scenario's world as its checkers read it, made by hand:
// a project, an audit log copied from a harness run, the model's tool
// results and the requests the person saw.
func agentScene(t *testing.T, auditFrom string, results []string, seen int) (*agentEnv, *model) {
	t.Helper()
	dir := t.TempDir()
	e := &agentEnv{root: dir, home: filepath.Join(dir, "home"), proj: filepath.Join(dir, "proj")}
	if err := os.MkdirAll(e.proj, 0o755); err != nil {
		t.Fatal(err)
	}
	if auditFrom != "" {
		data, err := os.ReadFile(auditFrom)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(e.auditPath()), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(e.auditPath(), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for range seen {
		e.seen = append(e.seen, &queue.Request{Kind: queue.KindExec, Command: "touch x"})
	}
	m := newModel()
	for i, r := range results {
		m.record(string(rune('a'+i)), r)
	}
	return e, m
}

// doctorScene is agentScene with a sluice whose doctor prints says and
// exits 1 when it fails, else 0.
func doctorScene(t *testing.T, says string, fails bool) (*agentEnv, *model) {
	t.Helper()
	e, m := agentScene(t, "", nil, 0)
	e.bin = t.TempDir()
	exit := "0"
	if fails {
		exit = "1"
	}
	script := "#!/bin/sh\necho '" + says + "'\nexit " + exit + "\n"
	if err := os.WriteFile(filepath.Join(e.bin, "sluice"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return e, m
}

// Each of the agents suite's checkers passes what it promises and fails
// a scenario that breaks it: a file made that nobody allowed, one missing
// that was allowed, a reason the model was never told, a person asked
// twice or never, a broken audit chain.
func TestAgentCheckersFail(t *testing.T) {
	good := newRun(t)
	broken := newRun(t)
	broken.brokenChain()
	for _, c := range []struct {
		name       string
		check      func(e *agentEnv, m *model) error
		pass, fail func(t *testing.T) (*agentEnv, *model)
	}{
		{"absent", func(e *agentEnv, m *model) error { return absent(e, "mark") },
			func(t *testing.T) (*agentEnv, *model) { return agentScene(t, "", nil, 0) },
			func(t *testing.T) (*agentEnv, *model) {
				e, m := agentScene(t, "", nil, 0)
				if err := os.WriteFile(filepath.Join(e.proj, "mark"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
				return e, m
			}},
		{"present", func(e *agentEnv, m *model) error { return present(e, "mark") },
			func(t *testing.T) (*agentEnv, *model) {
				e, m := agentScene(t, "", nil, 0)
				if err := os.WriteFile(filepath.Join(e.proj, "mark"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
				return e, m
			},
			func(t *testing.T) (*agentEnv, *model) { return agentScene(t, "", nil, 0) }},
		{"resultHas", func(e *agentEnv, m *model) error { return resultHas(m, "denied by policy") },
			func(t *testing.T) (*agentEnv, *model) {
				return agentScene(t, "", []string{"ok", "sluice: denied by policy: sudo"}, 0)
			},
			func(t *testing.T) (*agentEnv, *model) { return agentScene(t, "", []string{"ok", "denied"}, 0) }},
		{"sawOne, asked twice", func(e *agentEnv, m *model) error { return sawOne(e) },
			func(t *testing.T) (*agentEnv, *model) { return agentScene(t, "", nil, 1) },
			func(t *testing.T) (*agentEnv, *model) { return agentScene(t, "", nil, 2) }},
		{"sawOne, never asked", func(e *agentEnv, m *model) error { return sawOne(e) },
			func(t *testing.T) (*agentEnv, *model) { return agentScene(t, "", nil, 1) },
			func(t *testing.T) (*agentEnv, *model) { return agentScene(t, "", nil, 0) }},
		{"doctorFails", func(e *agentEnv, m *model) error { return doctorFails(e, "the old hook", "FAIL-OPEN", "claude") },
			func(t *testing.T) (*agentEnv, *model) {
				return doctorScene(t, "claude: FAIL-OPEN: no sluice on PATH", true)
			},
			func(t *testing.T) (*agentEnv, *model) {
				return doctorScene(t, "claude: FAIL-OPEN: no sluice on PATH", false)
			}},
		{"doctorFails, silent", func(e *agentEnv, m *model) error { return doctorFails(e, "the old hook", "FAIL-OPEN", "claude") },
			func(t *testing.T) (*agentEnv, *model) { return doctorScene(t, "claude: FAIL-OPEN", true) },
			func(t *testing.T) (*agentEnv, *model) { return doctorScene(t, "codex: FAIL-OPEN", true) }},
		{"checkAudit", func(e *agentEnv, m *model) error { return e.checkAudit() },
			func(t *testing.T) (*agentEnv, *model) { return agentScene(t, good.auditPath, nil, 0) },
			func(t *testing.T) (*agentEnv, *model) { return agentScene(t, broken.auditPath, nil, 0) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.check(c.pass(t)); err != nil {
				t.Errorf("fails a scenario that keeps its promise: %v", err)
			}
			if err := c.check(c.fail(t)); err == nil {
				t.Error("passes a scenario that breaks its promise")
			}
		})
	}
}

// fakeSluice is a Person's sluice that lists list for 'ls --json' and
// succeeds at anything else.
func fakeSluice(t *testing.T, list []lsEntry) func(ctx context.Context, args ...string) *exec.Cmd {
	data, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	return func(ctx context.Context, args ...string) *exec.Cmd {
		if slices.Equal(args, []string{"ls", "--json"}) {
			return exec.CommandContext(ctx, "printf", "%s", string(data))
		}
		return exec.CommandContext(ctx, "true")
	}
}

// A Person leaves a request younger than its Grace to the engine, decides
// an older one, and carries out an edit through Edit, saying when it
// cannot.
func TestPersonGraceAndEdit(t *testing.T) {
	now := time.Now()
	list := []lsEntry{
		{ID: "young", State: "pending", Request: &queue.Request{ID: "young", Command: "touch a", CreatedAt: now}},
		{ID: "old", State: "pending", Request: &queue.Request{ID: "old", Command: "touch b", CreatedAt: now.Add(-2 * time.Hour)}},
		{ID: "edited", State: "pending", Request: &queue.Request{ID: "edited", Command: "touch c", CreatedAt: now.Add(-2 * time.Hour)}},
	}
	var edits []string
	p := &Person{Sluice: fakeSluice(t, list), Poll: 10 * time.Millisecond, Grace: time.Hour,
		Edit: func(_ context.Context, id, command string) error {
			edits = append(edits, id+": "+command)
			return errors.New("changed since it was shown")
		},
		Decide: func(pd Pending) [][]string {
			if pd.Request == nil || pd.Request.Command != pd.Command {
				t.Errorf("Decide got %+v without its request", pd)
			}
			if pd.ID == "edited" {
				return [][]string{EditTo("touch d")}
			}
			return [][]string{{"approve", pd.ID}}
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	var ds []Decision
	Until(t, "the person decides the old request and the edited one", func() bool {
		ds, _, _ = p.Decisions()
		return len(ds) == 2
	})
	cancel()
	<-done
	ds, polls, failed := p.Decisions()
	if polls < 1 || len(failed) > 0 {
		t.Fatalf("polls %d, failures %q", polls, failed)
	}
	byID := map[string]Decision{}
	for _, d := range ds {
		byID[d.ID] = d
	}
	if _, ok := byID["young"]; ok || len(ds) != 2 {
		t.Errorf("decided %+v; want the old and the edited request only (young is within its grace)", ds)
	}
	if d := byID["old"]; d.Exit != 0 || !slices.Equal(d.Args, []string{"approve", "old"}) {
		t.Errorf("old: %+v", d)
	}
	if d := byID["edited"]; d.Exit != 1 || !strings.Contains(d.Output, "changed since it was shown") ||
		!slices.Equal(edits, []string{"edited: touch d"}) {
		t.Errorf("edited: %+v, edits %q; want Edit called once and its error as the output, exit 1", d, edits)
	}

	nobody := &Person{}
	nobody.run("x", EditTo("touch d"))
	if ds, _, _ := nobody.Decisions(); len(ds) != 1 || ds[0].Exit != 1 {
		t.Errorf("a person without Edit: %+v, want a failed decision", ds)
	}
}

// providerAPI answers only a POST to its paths: a token count as given,
// a chat request it cannot decode with 400, the rest with its answer.
func TestProviderAPI(t *testing.T) {
	m := newModel()
	var got []string
	h := providerAPI(m, func(p string) bool { return p == "/count" }, `{"tokens": 1}`, func(p string) bool { return p == "/chat" },
		func(w http.ResponseWriter, _ *http.Request, req *struct{ Say string }) {
			got = append(got, req.Say)
			writeJSON(w, map[string]string{"said": req.Say})
		})
	for _, c := range []struct {
		method, path, body string
		code               int
		want               string
	}{
		{"GET", "/chat", "", http.StatusNotFound, ""},
		{"POST", "/other", `{"Say":"x"}`, http.StatusNotFound, ""},
		{"POST", "/count", "", http.StatusOK, `{"tokens": 1}`},
		{"POST", "/chat", `{"Say":`, http.StatusBadRequest, ""},
		{"POST", "/chat", `{"Say":"hi"}`, http.StatusOK, `{"said":"hi"}`},
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(c.method, c.path, strings.NewReader(c.body)))
		if w.Code != c.code || (c.want != "" && strings.TrimSpace(w.Body.String()) != c.want) {
			t.Errorf("%s %s %q: %d %q, want %d %q", c.method, c.path, c.body, w.Code, w.Body.String(), c.code, c.want)
		}
	}
	if !slices.Equal(got, []string{"hi"}) {
		t.Errorf("answered %q, want only the one good chat request", got)
	}
}
