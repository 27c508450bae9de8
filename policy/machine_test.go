package policy

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// testMachine answers for a machine as a test sets it.
type testMachine struct {
	mode         SandboxMode
	noConfine    error
	noCheckpoint string
}

func (m testMachine) Sandbox() SandboxMode     { return m.mode }
func (m testMachine) CannotConfine() error     { return m.noConfine }
func (m testMachine) CannotCheckpoint() string { return m.noCheckpoint }

// TestVerdictFinishedForMachine: what the policy allows with a
// checkpoint asks where the machine cannot checkpoint it, and says why;
// under sandbox = "require" an allowed command asks where the machine
// cannot confine it; a session's trust may allow what asks for want of a
// checkpoint, but never past "require"; without a machine the verdict is
// the policy's.
func TestVerdictFinishedForMachine(t *testing.T) {
	home := t.TempDir()
	project := filepath.Join(home, "src", "app")
	mkdirs(t, filepath.Join(project, ".git"))
	able := testMachine{mode: SandboxPrefer}
	noKernel := errors.New("no Landlock")
	exec := func(line string) *queue.Request {
		return &queue.Request{ID: queue.NewID(), Kind: queue.KindExec, Command: line, Cwd: project, Agent: "claude-code", Session: "s-1"}
	}
	decide := func(line string) *queue.Request {
		r := exec(line)
		r.Mode = queue.ModeDecide
		return r
	}
	for _, tt := range []struct {
		name    string
		m       Machine
		req     *queue.Request
		want    Action
		because string // in the last reason
	}{
		{"no machine", nil, exec("go test ./..."), AllowWithCheckpoint, ""},
		{"able", able, exec("go test ./..."), AllowWithCheckpoint, ""},
		{"the agent runs it", able, decide("go test ./..."), Ask, "the agent runs it itself"},
		{"checkpoints off", testMachine{noCheckpoint: "checkpoints = false in config.toml"}, exec("go test ./..."), Ask,
			"allow_with_checkpoint asks here: checkpoints = false in config.toml"},
		{"sandbox off", testMachine{mode: SandboxOff}, exec("go test ./..."), Ask, `sandbox = "off": the run would not be confined`},
		{"no kernel", testMachine{noConfine: noKernel}, exec("go test ./..."), Ask, "this machine cannot confine runs: no Landlock"},
		{"allow, prefer, no kernel", testMachine{noConfine: noKernel}, exec("go vet ./..."), Allow, ""},
		{"allow, require", testMachine{mode: SandboxRequire}, exec("go vet ./..."), Allow, ""},
		{"allow, require, no kernel", testMachine{mode: SandboxRequire, noConfine: noKernel}, exec("go vet ./..."), Ask,
			`sandbox = "require" and this machine cannot confine runs: no Landlock`},
		{"deny stays", testMachine{mode: SandboxRequire, noConfine: noKernel}, exec("go build -toolexec=/tmp/evil ./..."), Deny, ""},
	} {
		j := &Judge{Options: Options{Home: home}, Machine: tt.m}
		v := j.Verdict(tt.req)
		if v.Action != tt.want {
			t.Errorf("%s: %s, want %s (%v)", tt.name, v.Action, tt.want, v.Reasons)
			continue
		}
		if tt.because != "" && (len(v.Reasons) == 0 || !strings.Contains(v.Reasons[len(v.Reasons)-1], tt.because)) {
			t.Errorf("%s: the verdict does not say %q: %v", tt.name, tt.because, v.Reasons)
		}
		if qv := j.Judge(tt.req); qv.Action != queue.Action(tt.want.String()) {
			t.Errorf("%s: Judge says %s, Verdict %s", tt.name, qv.Action, tt.want)
		}
	}

	// A trust allows a hook's go test, which cannot be checkpointed; under
	// "require" on a machine that cannot confine, it asks even so.
	dir := t.TempDir()
	ts := &TrustStore{path: filepath.Join(dir, "trust.json")}
	now := time.Now()
	e := TrustEntry{ID: "T1TRUST", Session: "s-1", Pattern: "go test *", Until: now.Add(time.Hour), By: "alice", Created: now}
	if err := ts.update(func(es []TrustEntry) ([]TrustEntry, error) { return append(es, e), nil }); err != nil {
		t.Fatal(err)
	}
	j := &Judge{Options: Options{Home: home}, Machine: able, Trusts: ts}
	if v := j.Verdict(decide("go test ./...")); v.Action != Allow {
		t.Errorf("a trusted go test in a hook's request: %s (%v)", v.Action, v.Reasons)
	}
	j.Machine = testMachine{mode: SandboxRequire, noConfine: noKernel}
	if v := j.Verdict(decide("go test ./...")); v.Action != Ask {
		t.Errorf("a trusted go test under require, unconfinable: %s (%v)", v.Action, v.Reasons)
	}
}
