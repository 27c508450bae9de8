package setup

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
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
	return Options{Home: home, Sluice: bin, Wait: 110 * time.Second, SystemRoot: filepath.Join(home, "system-root")}
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
// order and layout; an old sluice hook (relative, no timeout) is
// replaced, not added to; a backup holds the file as it was.
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
	// The file stays on its one line: sluice's handler leaves the
	// person's entry, and sluice's own entry goes last, in the file's
	// own spacing.
	want := `{"model":"opus","hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"~/bin/audit-bash"}]},` +
		`{"matcher":"^(?!mcp__sluice__).*","hooks":[{"type":"command","command":"` + opt.Sluice + ` hook claude --wait 1m50s","timeout":120}]}],` +
		`"Stop":[{"hooks":[{"type":"command","command":"notify-send done"}]}]},"permissions":{"allow":["Bash(git status)"]}}`
	if got := string(after); got != want {
		t.Errorf("after install:\n%s\nwant\n%s", got, want)
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
		{"claude: relative program", "claude", writeClaude("sluice hook claude --wait 50s", 60, "*"), "by a relative name", FailOpen},
		{"claude: program missing", "claude", writeClaude("/nonexistent/sluice hook claude --wait 50s", 60, "*"), "missing or not executable", FailOpen},
		{"claude: default timeout under the default wait", "claude", writeClaude("SLUICE hook claude", 0, "*"), "the agent kills the hook after 1m0s", FailOpen},
		{"claude: timeout equal to the wait", "claude", writeClaude("SLUICE hook claude --wait 60s", 60, "*"), "the agent kills the hook after 1m0s", FailOpen},
		{"claude: matcher leaves out Bash", "claude", writeClaude("SLUICE hook claude --wait 50s", 60, "Edit|Write"), "leaves out some of Bash", FailOpen},
		{"claude: MCP without a hook", "claude", func(t *testing.T, opt Options) {
			write(t, filepath.Join(opt.Home, ".claude.json"), `{"mcpServers":{"sluice":{"command":"`+opt.Sluice+`","args":["mcp"]}}}`)
		}, "no sluice hook", FailOpen},
		{"claude: settings not JSON", "claude", func(t *testing.T, opt Options) {
			write(t, filepath.Join(opt.Home, ".claude", "settings.json"), `{"hooks": {`)
		}, "is not valid JSON", FailOpen},
	}
	tests = append(tests, codexFailOpen()...)
	tests = append(tests, geminiFailOpen()...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opt := testOptions(t)
			tt.setup(t, opt)
			f := finding(t, opt, tt.agent)
			for _, p := range f.Problems {
				if p.Severity == tt.sev && strings.Contains(p.What, tt.want) {
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

// failOpenCase is a misconfiguration Check must report as a problem
// of severity sev (FailOpen, Hangs, Broken).
type failOpenCase struct {
	name  string
	agent string
	setup setupFn
	want  string
	sev   Severity
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

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func itoa(n int) string { return strconv.Itoa(n) }

// TestParseDocRefusesDuplicates: a key twice in an agent's settings is
// not guessed at, and where it is is said; a file sluice does not change
// is written back byte for byte, and read as the values it holds.
func TestParseDocRefusesDuplicates(t *testing.T) {
	_, err := parseDoc([]byte("{\n  \"hooks\": {},\n  \"hooks\": {\"x\": 1}\n}\n"), strictJSON)
	if err == nil || err.Error() != `line 3, column 3: the key "hooks" is there twice` {
		t.Fatalf("a duplicate key: %v", err)
	}
	in := "{\"b\":1,\n  \"a\": [true,null,\"\\u003c\"], \"c\":{\"d\":2.50}}"
	d, err := parseDoc([]byte(in), strictJSON)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(d.bytes()); got != in {
		t.Fatalf("written back as\n%s", got)
	}
	o := d.top().read().(*object)
	a, _ := o.array("a")
	if n, _ := o.num("b"); n != 1 || len(a) != 3 || a[0] != true || a[1] != nil || a[2] != "<" || o.obj("c").str("d") != "" {
		t.Fatalf("read %#v", o)
	}
	if n, ok := o.obj("c").num("d"); !ok || n != 2.5 {
		t.Fatalf("c.d = %v", n)
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
