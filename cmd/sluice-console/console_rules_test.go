package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/policy"
	"github.com/sluice-dev/sluice/queue"
)

// A on a connect request writes the host into the person's policy file,
// which the console's judge then gives every later networked run: the
// next run does not ask.
func TestConsoleAddHost(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "policy.toml")
	if err := os.WriteFile(file, []byte("[defaults]\nnetworked = \"ask\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	j := &policy.Judge{Options: policy.Options{User: file}}
	if err := j.Start(); err != nil {
		t.Fatal(err)
	}
	later := &queue.Request{Kind: queue.KindExec, Command: "curl https://elsewhere.example/", Cwd: dir}
	if v := j.Verdict(later); slices.Contains(v.Hosts, "registry.evil.example") {
		t.Fatalf("the host is allowed before the rule: %q", v.Hosts)
	}
	c := &consoleRules{judge: j, file: file}
	asked := &queue.Request{Kind: queue.KindConnect, Host: "registry.evil.example", Port: 443, Command: "npm install", Cwd: dir}
	text, err := c.hostText(asked, "registry.evil.example")
	if err != nil || !strings.Contains(text, `network_allow = ["registry.evil.example"]`) || !strings.Contains(text, `"npm install" wanted registry.evil.example:443`) {
		t.Fatalf("hostText = %q, %v", text, err)
	}
	where, err := c.addHost(asked, "registry.evil.example")
	if err != nil || where != file {
		t.Fatalf("addHost = %q, %v", where, err)
	}
	if v := j.Verdict(later); !slices.Contains(v.Hosts, "registry.evil.example") || !strings.HasPrefix(v.HostsBy["registry.evil.example"], "rule: network_allow in "+file) {
		t.Errorf("a later run's hosts %q (by %q) lack the host from the file", v.Hosts, v.HostsBy)
	}
	if p := j.Problem(); p != "" {
		t.Errorf("the policy does not load after the rule: %s", p)
	}
	if _, err := (&consoleRules{judge: j}).addHost(asked, "registry.evil.example"); err == nil {
		t.Error("a console without a policy file added a host")
	}
}

// The host rule dialog counts the past connect requests each proposed
// entry would have admitted, from the audit log as the engine writes it.
func TestConsoleHostCounter(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	log, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*queue.Request{
		{ID: queue.NewID(), Kind: queue.KindConnect, Host: "registry.evil.example", Port: 443, Command: "npm install", RunID: "R1"},
		{ID: queue.NewID(), Kind: queue.KindConnect, Host: "registry.evil.example", Port: 443, Command: "npm ci", RunID: "R2"},
		{ID: queue.NewID(), Kind: queue.KindConnect, Host: "cdn.evil.example", Port: 8443, Command: "npm ci", RunID: "R2"},
		{ID: queue.NewID(), Kind: queue.KindConnect, Host: "evil.example", Port: 443, Command: "curl", RunID: "R3"},
		{ID: queue.NewID(), Kind: queue.KindExec, Command: "curl https://registry.evil.example/", Cwd: "/src"},
	} {
		if err := log.Record(queue.NewEvent(queue.EventQueued, r)); err != nil {
			t.Fatal(err)
		}
		if err := log.Record(queue.NewEvent(queue.EventApproved, r)); err != nil {
			t.Fatal(err)
		}
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	entries := []string{"registry.evil.example:443", "registry.evil.example", "*.evil.example", "cdn.evil.example:443", "evil.example", "other.example"}
	want := []int{2, 2, 3, 0, 1, 0}
	if n, err := hostCounter(path)(entries); err != nil || !slices.Equal(n, want) {
		t.Errorf("counts of %q: %v, %v; want %v", entries, n, err, want)
	}
	if n, err := hostCounter(filepath.Join(t.TempDir(), "none.jsonl"))([]string{"evil.example"}); err != nil || !slices.Equal(n, []int{0}) {
		t.Errorf("no audit log yet: %v, %v", n, err)
	}
}
