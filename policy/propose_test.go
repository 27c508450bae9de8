package policy

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestPropose(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line, want string // want "" means refused
	}{
		// The generalisations.
		{"go test ./pkg -run X", "go test *"},
		{"npm run build -- --watch", "npm run build *"},
		{"make lint", "make lint"},               // make's words are targets: exactly those
		{"pytest -x tests/", "pytest -x tests/"}, // no subcommand: exactly as approved
		{`git commit -m "fix"`, "git commit *"},
		{"cargo build --release", "cargo build *"},
		{"ls", "ls"},
		{"ls -la src", "ls -la src"},
		{"git status", "git status *"},
		{"npm test", "npm test *"},
		{"cat README.md", "cat README.md"},
		{"mytool a b c", "mytool a b c"}, // unknown to the table: exactly
		{"make build:prod", "make build:prod"},
		{"git 'commit' -m x", "git commit *"}, // quoting removed as the shell would
		{"go test $PKG", "go test *"},         // a dynamic argument ends the subcommands
		{"go test ./... # all of it", "go test *"},
		{"/usr/bin/make lint", "make lint"}, // the engine matches the base name
		{"./gradlew build --info", "./gradlew build --info"},
		{"./script.sh", "./script.sh"},
		{"terraform fmt", "terraform fmt *"},

		// Not one simple command.
		{"ls | wc -l", ""},
		{"make && make test", ""},
		{"make; make test", ""},
		{"cd x && go test ./pkg", ""},
		{"go test ./... > out.txt", ""},
		{"go test ./... 2>&1", ""},
		{"FOO=1 make", ""},
		{"LD_PRELOAD=/tmp/x.so go test", ""},
		{"(make)", ""},
		{"{ make; }", ""},
		{"! make", ""},
		{"make &", ""},
		{"go test $(go list ./...)", ""},
		{"go test `go list ./...`", ""},
		{"diff <(ls a) <(ls b)", ""},
		{"export X=1", ""},
		{"f() { make; }", ""},
		{"", ""},
		{"   ", ""},
		{"go test (", ""}, // does not parse
		{"go test ./...\u202e", ""},

		// Dynamic or odd program names.
		{"$CMD x", ""},
		{"${CMD} x", ""},
		{"$(which go) test", ""},
		{"{ls,rm} x", ""},
		{"l* x", ""},
		{"~/bin/tool x", ""},
		{"-x y", ""},

		// Wrappers, shells, interpreters, builtins.
		{"sudo ls", ""},
		{"doas ls", ""},
		{"su -c ls", ""},
		{"env ls", ""},
		{"/usr/bin/env ls", ""},
		{"xargs ls", ""},
		{"eval ls", ""},
		{"exec ls", ""},
		{"timeout 60 go test ./...", ""},
		{"nohup make", ""},
		{`bash -c "x"`, ""},
		{"sh script.sh", ""},
		{"zsh", ""},
		{"dash -c ls", ""},
		{"python3 x.py", ""},
		{"python3.12 x.py", ""},
		{"python -m pytest", ""},
		{"node index.js", ""},
		{"perl x.pl", ""},
		{"ruby x.rb", ""},
		{"cd src", ""},
		{"source .env", ""},
		{"tee out.txt", ""},
		{"uv run pytest", ""},
		{"poetry run pytest", ""},
		{"/tmp/x/sudo ls", ""}, // not the system sudo, but never a blanket rule

		// Programs a blanket rule must never allow.
		{"rm -rf build", ""},
		{"rm x", ""},
		{"dd if=a of=b", ""},
		{"mkfs.ext4 /dev/sdz", ""},
		{"chmod +x build.sh", ""},
		{"chown me x", ""},
		{"curl x", ""},
		{"wget x", ""},
		{"ssh host", ""},
		{"docker ps", ""},
		{"kubectl get pods", ""},
		{"awk '{print $1}' f", ""},
		{"sed -n 1,10p f", ""},
		{"osascript -e x", ""},

		// Patterns that would cover more than mutating.
		{"git push origin main", ""},                           // networked
		{"git clean -n", "git clean -n"},                       // exactly; "git clean *" would cover -f
		{"git stash", "git stash"},                             // exactly; "git stash *" would cover drop
		{"git -C sub status", "git -C sub status"},             // exactly; never "git *"
		{"git config user.name me", "git config user.name me"}, // exactly; not every key
		{"go get example.com/x", ""},                           // networked
		{"go vet ./...", "go vet ./..."},                       // exactly; not -vettool
		{"go test -exec ./run.sh ./...", ""},                   // two parts: the rule would cover go only
		{"npm install", ""},                                    // networked
		{"cargo publish", ""},                                  // networked
		{"find . -name '*.go'", ""},                            // find -delete
		{"code .", "code ."},                                   // exactly; not --install-extension
		{"kitty @ send-text x", ""},                            // types into terminals
		{"git rebase -x 'make test' main", ""},                 // two parts
		{"go test -toolexec=./evil ./...", ""},                 // the line itself escalates
		{"npm run build --script-shell=./x", ""},               // the line itself escalates
	}
	for _, tt := range tests {
		got, ok := Propose(tt.line)
		if ok != (tt.want != "") || got != tt.want {
			t.Errorf("Propose(%q) = %q, %v; want %q", tt.line, got, ok, tt.want)
		}
	}
}

// TestProposedPatternsAreRules loads each proposed pattern through a
// policy file, as the console will write it, and checks the rule allows
// the line it came from.
func TestProposedPatternsAreRules(t *testing.T) {
	t.Parallel()
	lines := []string{"go test ./pkg -run X", "npm run build -- --watch", "make lint", "pytest -x tests/",
		`git commit -m "fix"`, "cargo build --release", "ls", "/usr/bin/make lint", "./gradlew build --info",
		"make build:prod", "git 'commit' -m x", "go test $PKG"}
	var src strings.Builder
	for _, l := range lines {
		pat, ok := Propose(l)
		if !ok {
			t.Fatalf("Propose(%q) refused", l)
		}
		fmt.Fprintf(&src, "[[rule]]\naction = \"allow\"\ncommand = %s\n\n", tomlString(pat))
	}
	p := load(t, src.String(), "")
	for _, l := range lines {
		pat, _ := Propose(l)
		if !p.Matches(pat, l, tableEnv) {
			t.Errorf("%q does not match the line %q it was proposed from", pat, l)
		}
		if v := p.Check(l, tableEnv); v.Action != Allow {
			t.Errorf("%q with %q allowed: %s (%s)", l, pat, v.Action, explain(v))
		}
	}
}

// TestProposeOverTheVerdictTables runs Propose over every line of the
// verdict tables (agent lines and attacks): whatever it proposes must
// compile, match its own line, and come from a line no worse than
// mutating.
func TestProposeOverTheVerdictTables(t *testing.T) {
	// Not parallel: walks of $'…' words race while walk.go's expandANSIC
	// passes a nil config to expand.Format, which then shares mvdan's
	// package-level buffer; these tables hold such words.
	p := loadIn(t, tableEnv.Home, "", "")
	proposed := 0
	for _, name := range []string{"verdicts.txt", "redteam.txt"} {
		for _, c := range readTable(t, name) {
			pat, ok := Propose(c.cmd)
			if !ok {
				continue
			}
			proposed++
			m, err := p.Matcher(pat)
			if err != nil {
				t.Errorf("%s:%d: %q proposes %q, which does not compile: %v", name, c.line, c.cmd, pat, err)
				continue
			}
			if !m(c.cmd, tableEnv) {
				t.Errorf("%s:%d: %q proposes %q, which does not match it", name, c.line, c.cmd, pat)
			}
			if v := p.Check(c.cmd, tableEnv); v.Category > Mutating {
				t.Errorf("%s:%d: %q (%s) proposes %q", name, c.line, c.cmd, v.Category, pat)
			}
		}
	}
	if proposed < 20 {
		t.Errorf("only %d lines of the tables got a proposal", proposed)
	}
}

func TestMatcher(t *testing.T) {
	t.Parallel()
	p := Default()
	tests := []struct {
		pattern, line string
		want          bool
	}{
		{"go test *", "go test ./...", true},
		{"go test *", "go test", true},
		{"go test *", "cd x && go test ./pkg", true},
		{"go test *", "go vet ./...", false},
		{"go test *", "go testx ./...", false},
		{"go test *", "gotest ./...", false},
		{"go test *", "echo go test", false},
		{"go test *", "# go test", false},
		{"go test *", "go test (", true}, // does not parse: Check judges the piece it salvages, go test
		{"go test *", "go vet (", false},
		{"go test *", "0\"&go vet", false},
		{"go test *", "/usr/bin/go test ./...", true},
		{"go test *", "./go test ./...", false}, // not the system go
		{"go test *", "g'o' \"test\" ./...", true},
		{"go test *", "g\\\no test", true},
		{"go test *", "$GO test ./...", false},
		{"go test *", "{go,x} test", false}, // runs "go x test"
		{"go test *", "go test ./... | tail -5", true},
		{"go test *", "echo $(go test ./...)", true},
		// The engine judges what wrappers run as parts of their own, and
		// rules match those parts.
		{"go test *", "timeout 60 go test ./...", true},
		{"go test *", "sudo go test ./...", true},
		{"go test *", "sh -c 'go test ./...'", true},
		{"go test *", "bash -c \"cd x && go test\"", true},
		{"go test *", "eval \"'go'\" test", true},
		{"go test *", "find . -exec go test {} \\;", true},
		{"go test *", "xargs go test", true},
		{"sudo *", "sudo go test ./...", true},
		{"ls *", "ls", true},
		{"ls *", "ls -la | grep x", true},
		{"ls", "ls -la", false}, // no final *: the argv must be exactly this
		{"ls -la", "ls -la", true},
		{"* --version", "go --version", true},
		{"* --version", "go version", false},
		{"git st*", "git status", true},
		{"./script.sh *", "./script.sh a b", true},
		{"make lint *", "make lint && make test", true},
	}
	for _, tt := range tests {
		m, err := p.Matcher(tt.pattern)
		if err != nil {
			t.Fatalf("Matcher(%q): %v", tt.pattern, err)
		}
		if got := m(tt.line, tableEnv); got != tt.want {
			t.Errorf("%q on %q = %v, want %v", tt.pattern, tt.line, got, tt.want)
		}
		if got := p.Matches(tt.pattern, tt.line, tableEnv); got != tt.want {
			t.Errorf("Matches(%q, %q) = %v, want %v", tt.pattern, tt.line, got, tt.want)
		}
	}
}

func TestMatcherRefusesInvalidPatterns(t *testing.T) {
	t.Parallel()
	p := Default()
	for _, pat := range []string{"", "  ", "ls; rm x", "ls | wc", "echo $(id)", "$X *", "A=1 ls", "ls > f", "go test ("} {
		if _, err := p.Matcher(pat); err == nil {
			t.Errorf("Matcher(%q) compiled", pat)
		}
		if p.Matches(pat, "ls", tableEnv) {
			t.Errorf("Matches(%q, ls) is true", pat)
		}
	}
}

// TestMatcherAgreesWithCheck compares Matcher, quick test included, with
// what Check does with the same pattern as a user's deny rule, over every
// line of the verdict tables.
func TestMatcherAgreesWithCheck(t *testing.T) {
	// Not parallel: walks of $'…' words race while walk.go's expandANSIC
	// passes a nil config to expand.Format, which then shares mvdan's
	// package-level buffer; these tables hold such words.
	var lines []string
	for _, name := range []string{"verdicts.txt", "redteam.txt"} {
		for _, c := range readTable(t, name) {
			lines = append(lines, c.cmd)
		}
	}
	lines = append(lines, agentLines...)
	for _, pat := range []string{"go test *", "git status *", "rm *", "ls *", "cat *", "sh *", "curl *", "git *", "* --version", "bash -c *", "python3 *", "npm run *", "env *"} {
		t.Run(pat, func(t *testing.T) {
			p, m := markedRule(t, pat)
			hits := 0
			for _, l := range lines {
				if _, err := p.parse(l); err != nil {
					// A line that does not parse never matches a rule
					// (Matcher); Check judges its pieces, which can only
					// make the verdict stricter (salvage).
					continue
				}
				want := ruleMarked(p, l)
				if got := m(l, tableEnv); got != want {
					t.Errorf("%q: Matcher %v, Check %v", l, got, want)
				}
				if want {
					hits++
				}
			}
			if hits == 0 {
				t.Errorf("no line matched %q: the comparison proves nothing", pat)
			}
		})
	}
}

// ruleMarker is the reason of the deny rule markedRule loads.
const ruleMarker = "matched by the pattern under test"

// markedRule loads a policy whose one rule denies pattern with
// ruleMarker as its reason, and returns it with the pattern's Matcher.
func markedRule(t testing.TB, pattern string) (*Policy, func(string, Env) bool) {
	t.Helper()
	p := load(t, fmt.Sprintf("[[rule]]\naction = \"deny\"\ncommand = %s\nreason = %q\n", tomlString(pattern), ruleMarker), "")
	m, err := p.Matcher(pattern)
	if err != nil {
		t.Fatal(err)
	}
	return p, m
}

// ruleMarked reports whether Check matched markedRule's rule on line.
func ruleMarked(p *Policy, line string) bool {
	for _, c := range p.Check(line, tableEnv).Commands {
		if slices.Contains(c.Reasons, ruleMarker) {
			return true
		}
	}
	return false
}

func BenchmarkMatcher(b *testing.B) {
	p := Default()
	m, err := p.Matcher("go test *")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		m(agentLines[i%len(agentLines)], tableEnv)
		i++
	}
}

// FuzzPropose checks Propose never panics, and that whatever it proposes
// compiles as a rule and matches the line it came from.
func FuzzPropose(f *testing.F) {
	for _, s := range []string{"go test ./pkg -run X", "npm run build -- --watch", "git commit -m \"fix\"", "ls | wc -l",
		"sudo ls", "./script.sh a b", "/usr/bin/make lint", "{ls,rm} x", "g'o' test", "go test $(x)", "{,}", "make {lint,test}"} {
		f.Add(s)
	}
	p := Default()
	f.Fuzz(func(t *testing.T, line string) {
		pat, ok := Propose(line)
		if !ok {
			return
		}
		m, err := p.Matcher(pat)
		if err != nil {
			t.Fatalf("%q proposes %q, which does not compile: %v", line, pat, err)
		}
		if !m(line, tableEnv) {
			t.Fatalf("%q proposes %q, which does not match it", line, pat)
		}
	})
}

// FuzzMatcherAgreesWithCheck checks Matcher, quick test included, against
// Check with the pattern as a user's deny rule.
func FuzzMatcherAgreesWithCheck(f *testing.F) {
	for _, s := range []string{"go test ./...", "g'o' test", "g\\\no test", "eval \"'go\" \"test'\"", "sh -c 'go test'",
		"timeout 5 go test", "/usr/bin/go test", "echo go test", "cd x && go test", "go\ttest", "bash <<'E'\ngo test\nE"} {
		f.Add(s)
	}
	p, m := markedRule(f, "go test *")
	f.Fuzz(func(t *testing.T, line string) {
		want := ruleMarked(p, line)
		if got := m(line, tableEnv); got != want {
			t.Fatalf("%q: Matcher %v, Check %v", line, got, want)
		}
	})
}

// TestProposals: the choices a person gets, narrowest first, and the one
// offered first: never the bare program (no "tar *", "make *"), never
// past the targets approved (no "make test *" for make test unit).
func TestProposals(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		line string
		want []string
		def  int
	}{
		{"make test unit", []string{"make test unit", "make test unit *"}, 0},
		{"tar -czf out.tgz src", []string{"tar -czf out.tgz src"}, 0},
		{"go test ./pkg -run X", []string{"go test ./pkg -run X", "go test *"}, 1},
		{"npm run build -- --watch", []string{"npm run build -- --watch", "npm run build *"}, 1},
		{"git log --oneline -20", []string{"git log --oneline -20", "git log *"}, 1},
		{`pytest -k "slow and db"`, []string{`pytest -k 'slow and db'`}, 0},
		{"rm -rf build", nil, 0},
		// A runner's package stays in the pattern: never "npm exec *".
		{"npm exec prettier --write x", []string{"npm exec prettier --write x", "npm exec prettier *"}, 1},
		{"go run ./cmd/x -v", []string{"go run ./cmd/x -v", "go run ./cmd/x *"}, 1},
	} {
		got, def := Proposals(tt.line)
		if !slices.Equal(got, tt.want) || def != tt.def {
			t.Errorf("Proposals(%q) = %q, %d; want %q, %d", tt.line, got, def, tt.want, tt.def)
		}
		for _, pat := range got {
			if pat == "tar *" || pat == "make *" || pat == "make test *" {
				t.Errorf("Proposals(%q) offers %q", tt.line, pat)
			}
		}
	}
}
