package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

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
