package setup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testOptions is a fresh HOME and a sluice program in it.
func testOptions(t *testing.T) Options {
	t.Helper()
	home := t.TempDir()
	bin := filepath.Join(home, "bin", "sluice")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return Options{Home: home, Sluice: bin, Wait: 110 * time.Second}
}

func apply(t *testing.T, p *Plan, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Apply(time.Now()); err != nil {
		t.Fatal(err)
	}
}

func finding(t *testing.T, opt Options, agent string) Finding {
	t.Helper()
	for _, f := range Check(opt) {
		if f.Agent == agent {
			return f
		}
	}
	t.Fatalf("no finding for %s", agent)
	return Finding{}
}

// TestInstallThenCheckClean: in a fresh HOME, install then Check finds
// each agent set up with no problem; installing again changes nothing;
// uninstall leaves no sluice in the files.
func TestInstallThenCheckClean(t *testing.T) {
	for _, agent := range Agents {
		for _, mcp := range []bool{false, true} {
			t.Run(agent+map[bool]string{false: "", true: "+mcp"}[mcp], func(t *testing.T) {
				opt := testOptions(t)
				opt.MCP = mcp
				p, err := Install(agent, opt)
				apply(t, p, err)
				f := finding(t, opt, agent)
				if !f.Configured || len(f.Problems) > 0 {
					t.Fatalf("after install: configured %v, problems %v\n%s", f.Configured, f.Problems, p.Diff())
				}
				again, err := Install(agent, opt)
				if err != nil || !again.Empty() {
					t.Fatalf("install twice: %v\n%s", err, again.Diff())
				}
				p, err = Uninstall(agent, opt)
				apply(t, p, err)
				if f := finding(t, opt, agent); f.Configured {
					t.Fatalf("after uninstall: still configured, %v", f.Problems)
				}
				for _, c := range p.Changes {
					if strings.Contains(string(c.After), "sluice") {
						t.Errorf("%s still names sluice after uninstall:\n%s", c.Path, c.After)
					}
				}
			})
		}
	}
}

// TestInstallKeepsTheRest: what the person had in the file stays, in its
// order; an old sluice hook (relative, no timeout) is replaced, not added
// to; a backup holds the file as it was.
func TestInstallKeepsTheRest(t *testing.T) {
	opt := testOptions(t)
	path := filepath.Join(opt.Home, ".claude", "settings.json")
	before := `{"model":"opus","hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"sluice hook claude"},{"type":"command","command":"~/bin/audit-bash"}]}],"Stop":[{"hooks":[{"type":"command","command":"notify-send done"}]}]},"permissions":{"allow":["Bash(git status)"]}}`
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Install("claude", opt)
	if err != nil {
		t.Fatal(err)
	}
	backups, err := p.Apply(time.Now())
	if err != nil || len(backups) != 1 {
		t.Fatalf("backups %v, %v", backups, err)
	}
	if b, _ := os.ReadFile(backups[0]); string(b) != before {
		t.Errorf("backup holds %s", b)
	}
	after, _ := os.ReadFile(path)
	got := string(after)
	for _, want := range []string{`"model": "opus"`, `"command": "~/bin/audit-bash"`, `"command": "notify-send done"`, `"Bash(git status)"`,
		`"command": "` + opt.Sluice + ` hook claude --wait 1m50s"`, `"timeout": 120`, `"matcher": "^(?!mcp__sluice__).*"`} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %s in\n%s", want, got)
		}
	}
	if strings.Count(got, "hook claude") != 1 {
		t.Errorf("want exactly one sluice hook:\n%s", got)
	}
	if strings.Index(got, `"model"`) > strings.Index(got, `"hooks"`) {
		t.Errorf("the members were reordered:\n%s", got)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want the file's own 0644", fi.Mode().Perm())
	}
	// A second run on the same second keeps both backups.
	p, _ = Uninstall("claude", opt)
	b2, err := p.Apply(time.Now())
	if err != nil || len(b2) != 1 || b2[0] == backups[0] {
		t.Fatalf("second backup %v (first %v), %v", b2, backups, err)
	}
}

// TestCheckFailOpen: each misconfiguration that lets a tool run unasked
// is reported as fail-open, with a fix.
func TestCheckFailOpen(t *testing.T) {
	writeClaude := func(hookCmd string, timeout int, matcher string) setupFn {
		return func(t *testing.T, opt Options) {
			hook := `{"type":"command","command":` + quote(strings.ReplaceAll(hookCmd, "SLUICE", opt.Sluice))
			if timeout > 0 {
				hook += `,"timeout":` + itoa(timeout)
			}
			hook += `}`
			write(t, filepath.Join(opt.Home, ".claude", "settings.json"),
				`{"hooks":{"PreToolUse":[{"matcher":`+quote(matcher)+`,"hooks":[`+hook+`]}]}}`)
		}
	}
	tests := []failOpenCase{
		{"claude: relative program", "claude", writeClaude("sluice hook claude --wait 50s", 60, "*"), "by a relative name"},
		{"claude: program missing", "claude", writeClaude("/nonexistent/sluice hook claude --wait 50s", 60, "*"), "missing or not executable"},
		{"claude: default timeout under the default wait", "claude", writeClaude("SLUICE hook claude", 0, "*"), "the agent kills the hook after 1m0s"},
		{"claude: timeout equal to the wait", "claude", writeClaude("SLUICE hook claude --wait 60s", 60, "*"), "the agent kills the hook after 1m0s"},
		{"claude: matcher leaves out Bash", "claude", writeClaude("SLUICE hook claude --wait 50s", 60, "Edit|Write"), "leaves out some of Bash"},
		{"claude: MCP without a hook", "claude", func(t *testing.T, opt Options) {
			write(t, filepath.Join(opt.Home, ".claude.json"), `{"mcpServers":{"sluice":{"command":"`+opt.Sluice+`","args":["mcp"]}}}`)
		}, "no sluice hook"},
		{"claude: settings not JSON", "claude", func(t *testing.T, opt Options) {
			write(t, filepath.Join(opt.Home, ".claude", "settings.json"), `{"hooks": {`)
		}, "is not valid JSON"},
	}
	tests = append(tests, codexFailOpen()...)
	tests = append(tests, geminiFailOpen()...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opt := testOptions(t)
			tt.setup(t, opt)
			f := finding(t, opt, tt.agent)
			for _, p := range f.Problems {
				if p.FailOpen && strings.Contains(p.What, tt.want) {
					if !strings.Contains(p.Fix, "sluice install "+tt.agent) && !strings.Contains(p.Fix, "by hand") {
						t.Errorf("the fix does not say what to run: %s", p.Fix)
					}
					return
				}
			}
			t.Fatalf("want a fail-open problem %q, got %v", tt.want, f.Problems)
		})
	}
}

// setupFn writes an agent's configuration for a test.
type setupFn func(t *testing.T, opt Options)

// failOpenCase is a misconfiguration Check must report as fail-open.
type failOpenCase struct {
	name  string
	agent string
	setup setupFn
	want  string
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func quote(s string) string { return string(marshal(s)[:len(marshal(s))-1]) }

func itoa(n int) string { return strings.TrimSpace(string(marshal(n))) }

// TestParseObjectRefusesDuplicates: a key twice in an agent's settings
// is not guessed at.
func TestParseObjectRefusesDuplicates(t *testing.T) {
	if _, err := parseObject([]byte(`{"hooks":{},"hooks":{"x":1}}`)); err == nil {
		t.Fatal("a duplicate key was accepted")
	}
	o, err := parseObject([]byte(`{"b":1,"a":[true,null,"\u003c"],"c":{"d":2.50}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(marshal(o)); got != "{\n  \"b\": 1,\n  \"a\": [\n    true,\n    null,\n    \"<\"\n  ],\n  \"c\": {\n    \"d\": 2.50\n  }\n}\n" {
		t.Fatalf("round trip:\n%s", got)
	}
}

func readString(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
