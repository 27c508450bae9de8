package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/internal/app"
	"github.com/sluice-dev/sluice/queue"
)

// TestEngineProtectsItsOwnFiles: the engine's policy denies writes to
// sluice's files where this engine actually keeps them: an audit log
// named by --audit, a configuration named by --config, the themes beside
// the default configuration, the spool.
func TestEngineProtectsItsOwnFiles(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "xdg"))
	t.Setenv("SLUICE_AUDIT", "")
	sp, err := queue.Open(filepath.Join(dir, "spool"))
	if err != nil {
		t.Fatal(err)
	}
	auditFile := filepath.Join(dir, "logs", "mine.jsonl")
	cfgFile := filepath.Join(dir, "etc", "sluice.toml")
	if err := os.MkdirAll(filepath.Dir(cfgFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgFile, []byte("max_auto = 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := app.LoadConfig(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	a := &app.App{Cfg: cfg, Sp: sp, AuditFile: auditFile}
	eng, err := a.Engine()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	proj := filepath.Join(dir, "proj")
	for _, target := range []string{auditFile, cfgFile, filepath.Join(dir, "xdg", "sluice", "themes", "dark.toml"), filepath.Join(sp.Dir(), "out", "x.json")} {
		now := time.Now().UTC()
		req := &queue.Request{Version: queue.Version, ID: queue.NewID(), Kind: queue.KindExec, Command: "echo x > " + target,
			Cwd: proj, CreatedAt: now, ExpiresAt: now.Add(time.Minute)}
		if v := eng.Judge.Judge(req); v.Action != "deny" {
			t.Errorf("a write to %s: %s %v, want deny", target, v.Action, v.Reasons)
		}
	}
}

// TestPolicyInSpoolRefused: a policy file inside the spool (where agents
// write) is never loaded.
func TestPolicyInSpoolRefused(t *testing.T) {
	dir := t.TempDir()
	sp, err := queue.Open(filepath.Join(dir, "spool"))
	if err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(sp.Dir(), "tmp", "policy.toml")
	if err := os.WriteFile(planted, []byte("[defaults]\nhost_escape_risk = \"allow\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := &app.App{Cfg: &app.Config{}, Sp: sp, PolicyFile: planted, AuditFile: filepath.Join(dir, "audit.jsonl")}
	if _, err := a.Engine(); err == nil || !strings.Contains(err.Error(), "inside the spool") {
		t.Fatalf("got %v, want the policy inside the spool refused", err)
	}
}
