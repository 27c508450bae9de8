package policy

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// userPolicy is a hand-written policy file: comments, odd spacing, a
// multi-line string, non-ASCII text.
const userPolicy = `# my policy — hand-written, keep my comments
[defaults]
mutating   =   "ask"   # inline comment

# rules
[[rule]]
action = "deny"
command = "git push --force *"
reason = """
no force pushes,
ever"""
`

func loadUser(t *testing.T, file string) *Policy {
	t.Helper()
	p, err := Load(Options{User: file, UserRequired: true, Home: tableEnv.Home})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func userRulesOf(p *Policy) []*Rule {
	var out []*Rule
	for _, r := range p.Rules() {
		if r.Origin != OriginDefault {
			out = append(out, r)
		}
	}
	return out
}

func readString(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAppendRuleKeepsTheFile(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, src string }{
		{"commented", userPolicy},
		{"no final newline", strings.TrimSuffix(userPolicy, "\n")},
		{"ends in a comment without newline", userPolicy + "# the end"},
		{"crlf", strings.ReplaceAll(userPolicy, "\n", "\r\n")},
		{"empty", ""},
		{"only comments", "# nothing yet\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := writeFile(t, "policy.toml", tt.src)
			if v := loadUser(t, f).Check("go test ./pkg -run X", tableEnv); v.Action != Ask {
				t.Fatalf("before: %s, want ask", v.Action)
			}
			r := NewRule{Action: "allow", Command: "go test *", Reason: "approved in the console",
				Comment: `added by sluice console, 2026-11-22: approved "go test ./pkg -run X"`}
			if err := AppendRule(f, r); err != nil {
				t.Fatal(err)
			}
			got := readString(t, f)
			if !strings.HasPrefix(got, tt.src) {
				t.Fatalf("the original bytes changed:\n%q", got)
			}
			added := got[len(tt.src):]
			want := "\n# added by sluice console, 2026-11-22: approved \"go test ./pkg -run X\"\n[[rule]]\naction = \"allow\"\ncommand = \"go test *\"\nreason = \"approved in the console\"\n"
			switch {
			case tt.src == "":
				want = want[1:]
			case !strings.HasSuffix(tt.src, "\n"):
				want = "\n" + want
			}
			if strings.Contains(tt.src, "\r\n") {
				want = strings.ReplaceAll(want, "\n", "\r\n")
			}
			if added != want {
				t.Errorf("appended\n%q\nwant\n%q", added, want)
			}
			p := loadUser(t, f)
			if v := p.Check("go test ./pkg -run X", tableEnv); v.Action != Allow {
				t.Errorf("after: %s, want allow (%s)", v.Action, explain(v))
			}
			if v := p.Check("git push --force origin main", tableEnv); tt.src != "" && tt.src != "# nothing yet\n" && v.Action != Deny {
				t.Errorf("the file's own rule is gone: %s", v.Action)
			}
		})
	}
}

func TestAppendRuleTwice(t *testing.T) {
	t.Parallel()
	f := writeFile(t, "policy.toml", userPolicy)
	for _, c := range []string{"go test *", "make lint *"} {
		if err := AppendRule(f, NewRule{Action: "allow", Command: c}); err != nil {
			t.Fatal(err)
		}
	}
	rs := userRulesOf(loadUser(t, f))
	if len(rs) != 3 || rs[1].Command != "go test *" || rs[2].Command != "make lint *" || rs[2].Reason != "" {
		t.Fatalf("rules: %v", rs)
	}
}

// TestAppendRuleHostileText feeds text an agent controls (the approved
// line lands in the comment; a person may edit the pattern and reason)
// with quotes, backslashes, newlines and escape sequences: it must not add
// a second rule, break the file or hide in it.
func TestAppendRuleHostileText(t *testing.T) {
	t.Parallel()
	inject := "\"\n[[rule]]\naction = \"allow\"\ncommand = \"*\"\n# \\"
	tests := []NewRule{
		{Action: "allow", Command: "go test *", Comment: "approved " + inject + "\x1b]0;pwned\x07\r\u202e\u2028\xff"},
		{Action: "allow", Command: "go test *", Reason: inject + "\x1b[31m\x00\x7f\u202e"},
		// A valid pattern can hold all of it inside single quotes.
		{Action: "allow", Command: "echo '" + strings.ReplaceAll(inject, "'", "") + "\x1b' *", Comment: inject},
		{Action: "deny", Command: `printf '\\"\\' *`, Reason: `\`, Comment: `\`},
	}
	for _, r := range tests {
		f := writeFile(t, "policy.toml", userPolicy)
		if err := AppendRule(f, r); err != nil {
			t.Fatalf("%q: %v", r.Command, err)
		}
		got := readString(t, f)
		added := got[len(userPolicy):]
		lines := strings.Split(strings.TrimSuffix(added, "\n"), "\n")
		if len(lines) > 6 {
			t.Errorf("the block has %d lines: %q", len(lines), added)
		}
		headers := 0
		for _, l := range lines {
			if strings.HasPrefix(strings.TrimSpace(l), "[") {
				headers++
			}
		}
		if headers != 1 {
			t.Errorf("%d table headers in %q", headers, added)
		}
		for _, c := range added {
			if c < 0x20 && c != '\n' || c == 0x7f || c == '\u202e' || c == '\u2028' || c == utf8RuneError {
				t.Errorf("raw %U in the file: %q", c, added)
			}
		}
		rs := userRulesOf(loadUser(t, f))
		if len(rs) != 2 {
			t.Fatalf("%d user rules after appending one: %v", len(rs), rs)
		}
		if last := rs[1]; last.Action.String() != r.Action || last.Command != r.Command || last.Reason != r.Reason {
			t.Errorf("read back %v %q %q, want %v %q %q", last.Action, last.Command, last.Reason, r.Action, r.Command, r.Reason)
		}
		if v := loadUser(t, f).Check("rm -rf build", tableEnv); v.Action == Allow {
			t.Errorf("an injected rule allows rm: %s", explain(v))
		}
	}
}

const utf8RuneError = '\uFFFD'

// TestAppendRuleRefusesAndLeavesTheFile checks nothing is written when
// the rule or the file it would make is wrong.
func TestAppendRuleRefusesAndLeavesTheFile(t *testing.T) {
	t.Parallel()
	good := NewRule{Action: "allow", Command: "go test *"}
	tests := []struct {
		name, src string
		r         NewRule
		want      string // in the error
		loadErr   bool
		line      int // of the LoadError: a line of the file as it is
	}{
		{"file does not load", "[[rule]]\naction = \"permit\"\ncommand = \"ls\"\n", good, `unknown action "permit"`, true, 0},
		{"file is not TOML", "[[rule]\n", good, "must be TOML", true, 2}, // where the parser saw the newline
		{"file uses another key case", "[[rule]]\nACTION = \"deny\"\ncommand = \"ls *\"\n", good, `unknown key "rule.ACTION"`, true, 2},
		{"rule is an inline array", "rule = []\n", good, "the new rule", true, 0},
		{"pattern is a list", userPolicy, NewRule{Action: "allow", Command: "ls; rm -rf ~"}, "the new rule: command", true, 0},
		{"pattern has a substitution", userPolicy, NewRule{Action: "allow", Command: "echo $(id)"}, "not literal", true, 0},
		{"no command", userPolicy, NewRule{Action: "allow"}, "no command", false, 0},
		{"bad action", userPolicy, NewRule{Action: "permit", Command: "ls *"}, "unknown action", false, 0},
		{"action in capitals", userPolicy, NewRule{Action: "ALLOW", Command: "ls *"}, "unknown action", false, 0},
		{"invalid UTF-8", userPolicy, NewRule{Action: "allow", Command: "ls \xff *"}, "UTF-8", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := writeFile(t, "policy.toml", tt.src)
			if err := os.Chmod(f, 0o640); err != nil {
				t.Fatal(err)
			}
			before, _ := os.Stat(f)
			err := AppendRule(f, tt.r)
			if err == nil {
				t.Fatal("appended")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to hold %q", err, tt.want)
			}
			var le *LoadError
			if errors.As(err, &le) != tt.loadErr || (le != nil && (le.File != f || le.Line != tt.line)) {
				t.Errorf("error %#v: want a LoadError naming %s:%d: %v", err, f, tt.line, tt.loadErr)
			}
			if got := readString(t, f); got != tt.src {
				t.Errorf("the file changed: %q", got)
			}
			after, _ := os.Stat(f)
			if after.Mode() != before.Mode() || !after.ModTime().Equal(before.ModTime()) || !os.SameFile(before, after) {
				t.Errorf("the file was replaced: %v -> %v", before.Mode(), after.Mode())
			}
			assertOnlyFile(t, f)
		})
	}
}

// assertOnlyFile checks no temporary file was left next to file.
func assertOnlyFile(t *testing.T, file string) {
	t.Helper()
	es, err := os.ReadDir(filepath.Dir(file))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Name() != filepath.Base(file) {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

func TestAppendRuleRefusesLinksAndOddFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	real := filepath.Join(dir, "real.toml")
	if err := os.WriteFile(real, []byte(userPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "policy.toml")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	err := AppendRule(link, NewRule{Action: "allow", Command: "go test *"})
	if err == nil || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), real) {
		t.Errorf("symlink: %v", err)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&fs.ModeSymlink == 0 {
		t.Error("the link was replaced")
	}
	if got := readString(t, real); got != userPolicy {
		t.Errorf("the link's target changed: %q", got)
	}
	sub := filepath.Join(dir, "sub.toml")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := AppendRule(sub, NewRule{Action: "allow", Command: "go test *"}); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory: %v", err)
	}
}

func TestAppendRuleCreatesTheFile(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "config", "sluice", "policy.toml")
	r := NewRule{Action: "allow", Command: "make lint *", Comment: "added by sluice console"}
	if err := AppendRule(f, r); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(f)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600", fi.Mode().Perm())
	}
	di, _ := os.Stat(filepath.Dir(f))
	if di.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v, want 0700", di.Mode().Perm())
	}
	if got, want := readString(t, f), "# added by sluice console\n[[rule]]\naction = \"allow\"\ncommand = \"make lint *\"\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if v := loadUser(t, f).Check("make lint", tableEnv); v.Action != Allow {
		t.Errorf("make lint: %s", v.Action)
	}
	assertOnlyFile(t, f)
}

func TestAppendRuleKeepsTheMode(t *testing.T) {
	t.Parallel()
	f := writeFile(t, "policy.toml", userPolicy)
	if err := os.Chmod(f, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := AppendRule(f, NewRule{Action: "ask", Command: "go test *"}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(f); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", fi.Mode().Perm())
	}
	assertOnlyFile(t, f)
}

func TestTOMLStringRoundTrips(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "go test *", `a"b\c`, "a\nb\r\tc", "\x00\x01\x1b[31m\x7f", "\u202e\u2028\u2029\u200b\ufeff", "日本語 ✓", "\U000E0001", "'''\"\"\""} {
		var v struct{ X string }
		if _, err := toml.Decode("X = "+tomlString(s), &v); err != nil {
			t.Errorf("%q: %v (%s)", s, err, tomlString(s))
			continue
		}
		if v.X != s {
			t.Errorf("%q read back as %q", s, v.X)
		}
		if q := tomlString(s); strings.ContainsAny(q, "\n\r\x1b\u202e") {
			t.Errorf("%q quoted with raw controls: %q", s, q)
		}
	}
}

// TestAppendRuleChecksTheRuleReadsBack covers the guard against a file
// whose end would swallow the block: the last rule read back must be the
// one appended.
func TestAppendRuleChecksTheRuleReadsBack(t *testing.T) {
	t.Parallel()
	f := writeFile(t, "policy.toml", userPolicy)
	err := checkAppended(f, "policy.toml", 100, NewRule{Action: "allow", Command: "go test *"})
	var le *LoadError
	if !errors.As(err, &le) || !strings.Contains(le.Msg, "would not read as the new rule") || le.File != "policy.toml" {
		t.Errorf("got %v", err)
	}
	if err := checkAppended(f, "policy.toml", 100, NewRule{Action: "deny", Command: "git push --force *", Reason: "no force pushes,\never"}); err != nil {
		t.Errorf("the file's own last rule: %v", err)
	}
}

// TestRemoveRule: revoking a rule takes out its table and the console's
// comment above it, and nothing else.
func TestRemoveRule(t *testing.T) {
	src := "# mine\n\n# approved \"make lint\"\n[[rule]]\naction = \"allow\"\ncommand = \"make lint\"\nmatch = [\"make lint\"]\n\n# keep\n[[rule]]\naction = \"ask\"\ncommand = \"make deploy *\"\n"
	file := writeFile(t, "policy.toml", src)
	removed, err := RemoveRule(file, 4)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(file)
	want := "# mine\n\n# keep\n[[rule]]\naction = \"ask\"\ncommand = \"make deploy *\"\n"
	if string(got) != want {
		t.Errorf("after removing:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(removed, `command = "make lint"`) || !strings.Contains(removed, "# approved") {
		t.Errorf("removed %q", removed)
	}
	if _, err := RemoveRule(file, 1); err == nil {
		t.Error("a line that starts no rule was accepted")
	}
}

// TestRemoveRuleWholeTable: a comment or blank line inside a table does
// not end it: the whole table goes, and the rule before it is unchanged.
func TestRemoveRuleWholeTable(t *testing.T) {
	src := "[[rule]]\naction = \"deny\"\npath = \"~/.aws/**\"\n\n[[ rule ]]\naction = \"ask\"\n# only writes\n\naccess = \"write\"\npath = \"/srv/**\"\n\n# next\n[[rule]]\naction = \"allow\"\ncommand = \"make\"\n"
	file := writeFile(t, "policy.toml", src)
	p, err := Load(Options{User: file, UserRequired: true, Home: filepath.Dir(file)})
	if err != nil {
		t.Fatal(err)
	}
	var origins []string
	for _, r := range p.Rules() {
		if strings.HasPrefix(r.Origin, file) {
			origins = append(origins, strings.TrimPrefix(r.Origin, file))
		}
	}
	if strings.Join(origins, " ") != ":1 :5 :13" {
		t.Fatalf("origins %v: [[ rule ]] with spaces must count", origins)
	}
	if _, err := RemoveRule(file, 5); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(file)
	want := "[[rule]]\naction = \"deny\"\npath = \"~/.aws/**\"\n\n# next\n[[rule]]\naction = \"allow\"\ncommand = \"make\"\n"
	if string(got) != want {
		t.Errorf("after removing the second rule:\n%s\nwant:\n%s", got, want)
	}
}

// TestReplaceFileKeepsAnEditMadeMeanwhile: a person who edits the policy
// file while the console adds a rule (or a network_allow host) keeps the
// edit: the new file is not renamed over one that changed since it was
// read, for both writers, and the caller is told to try again.
func TestReplaceFileKeepsAnEditMadeMeanwhile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		append func(file string) error
	}{
		{"a rule", func(file string) error {
			return AppendRule(file, NewRule{Action: "allow", Command: "make test"})
		}},
		{"a network_allow host", func(file string) error {
			_, err := AppendNetworkAllow(file, "registry.example", "allowed in a test")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "policy.toml")
			if err := os.WriteFile(file, []byte("# mine\n[defaults]\nmutating = \"ask\"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			edit := "# mine, edited meanwhile\n[defaults]\nmutating = \"deny\"\n"
			// The person's edit lands between the read and the rename: in
			// the check, which runs on the written temporary file.
			checkHook = func() {
				if err := os.WriteFile(file+".new", []byte(edit), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(file+".new", file); err != nil {
					t.Fatal(err)
				}
			}
			t.Cleanup(func() { checkHook = nil })
			err := tc.append(file)
			if err == nil || !strings.Contains(err.Error(), "changed while sluice was changing it") {
				t.Fatalf("adding over an edited file: %v", err)
			}
			if got, _ := os.ReadFile(file); string(got) != edit {
				t.Fatalf("the person's edit is lost:\n%s", got)
			}
		})
	}
}
