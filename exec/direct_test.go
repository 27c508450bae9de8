//go:build unix

package exec

import (
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/syntax"

	"github.com/sluice-dev/sluice/queue"
)

func TestDirectArgv(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string // nil: through the shell
	}{
		{"git status", []string{"git", "status"}},
		{"  go\ttest   ./...  ", []string{"go", "test", "./..."}},
		{"make -j4 build", []string{"make", "-j4", "build"}},
		{"ls -la /tmp", []string{"ls", "-la", "/tmp"}},
		{"npm run test:unit -- --reporter=dot", []string{"npm", "run", "test:unit", "--", "--reporter=dot"}},
		{"./x.sh", []string{"./x.sh"}},
		// Builtins do their own thing, whatever PATH holds.
		{"true", nil},
		{"false", nil},
		{"true --help", nil},
		{"echo hi", nil},
		{"cd /tmp", nil},
		{"exit 3", nil},
		{"kill -9 1", nil},
		{"test -f x", nil},
		{"[ -f x ]", nil},
		{"exec ls", nil},
		{"time ls", nil},
		{"if", nil},
		// Shell work of any kind.
		{"A=1 env", nil},
		{"ls *.go", nil},
		{"ls ~", nil},
		{"ls a=~/x", nil},
		{"echo {a,b}", nil},
		{"ls $HOME", nil},
		{"ls 'a b'", nil},
		{`ls "a"`, nil},
		{`ls a\ b`, nil},
		{"ls; rm x", nil},
		{"ls && rm x", nil},
		{"ls | wc", nil},
		{"ls > out", nil},
		{"ls # note", nil},
		{"ls\nrm x", nil},
		{"ls `id`", nil},
		{"ls $(id)", nil},
		{"!ls", nil},
		{"%1", nil},
		{"(ls)", nil},
		{"ls &", nil},
		{"", nil},
		{"   ", nil},
		{"ls \u00a0x", nil},
	} {
		got, ok := DirectArgv(tc.line)
		if ok != (tc.want != nil) || !slices.Equal(got, tc.want) {
			t.Errorf("DirectArgv(%q) = %q, %v; want %q", tc.line, got, ok, tc.want)
		}
	}
}

// FuzzDirectArgv: whatever DirectArgv runs without the shell, bash's
// grammar (mvdan.cc/sh, as the policy reads it) reads as one simple
// command of the same literal words, with nothing around it.
func FuzzDirectArgv(f *testing.F) {
	for _, s := range []string{"git status", "go test ./...", "a=b c", "ls -la\t/tmp", "x --y=z,w:v@u+t"} {
		f.Add(s)
	}
	p := syntax.NewParser(syntax.Variant(syntax.LangBash))
	f.Fuzz(func(t *testing.T, line string) {
		argv, ok := DirectArgv(line)
		if !ok {
			return
		}
		file, err := p.Parse(strings.NewReader(line), "")
		if err != nil {
			t.Fatalf("DirectArgv(%q) = %q, but bash's grammar rejects it: %v", line, argv, err)
		}
		if len(file.Stmts) != 1 {
			t.Fatalf("%q: %d statements", line, len(file.Stmts))
		}
		st := file.Stmts[0]
		call, isCall := st.Cmd.(*syntax.CallExpr)
		if !isCall || st.Negated || st.Background || st.Coprocess || len(st.Redirs) > 0 || len(call.Assigns) > 0 {
			t.Fatalf("%q: not a plain simple command: %#v", line, st)
		}
		var words []string
		for _, w := range call.Args {
			lit := w.Lit()
			if lit == "" || len(w.Parts) != 1 {
				t.Fatalf("%q: word %v is not one literal", line, w)
			}
			words = append(words, lit)
		}
		if !slices.Equal(words, argv) {
			t.Fatalf("DirectArgv(%q) = %q; bash's words are %q", line, argv, words)
		}
	})
}

func TestCommandIsDirect(t *testing.T) {
	env := []string{"PATH=/nonexistent:/usr/bin:/bin", "SHLVL=3", "_=/old"}
	cmd, direct := command("env -0", "/", env)
	if !direct || filepath.Base(cmd.Path) != "env" || !slices.Equal(cmd.Args, []string{"env", "-0"}) {
		t.Fatalf("command(env -0) = %s %q direct %v", cmd.Path, cmd.Args, direct)
	}
	if !slices.Contains(cmd.Env, "PWD=/") {
		t.Errorf("env %q: want PWD=/", cmd.Env)
	}
	if !slices.Contains(cmd.Env, "SHLVL=3") || !slices.Contains(cmd.Env, "_="+cmd.Path) || slices.Contains(cmd.Env, "_=/old") {
		t.Errorf("env %q: want SHLVL=3 and _=%s", cmd.Env, cmd.Path)
	}
	for _, tc := range []struct {
		line string
		env  []string
	}{
		{"env", []string{"PATH=:/usr/bin"}},               // a relative PATH entry first: the run's directory
		{"env", []string{"PATH=/usr/bin", "BASH_ENV=/x"}}, // a file bash reads first
		{"env", []string{"PATH=/usr/bin", "BASH_FUNC_env%%=() { :; }"}},
		{"env", []string{"PATH=/usr/bin", "SHELLOPTS=xtrace"}}, // bash traces, or with noexec runs nothing
		{"env", []string{"PATH=/usr/bin", "BASHOPTS=extglob"}},
		{"env", []string{"PATH=/usr/bin", "POSIXLY_CORRECT=1"}},
		{"env", []string{"PATH=/usr/bin", "SHLVL=abc"}}, // bash rewrites these
		{"env", []string{"PATH=/usr/bin", "SHLVL=07"}},
		{"env", []string{"PATH=/usr/bin", "SHLVL=-5"}},
		{"env", []string{"PATH=/usr/bin", "SHLVL=999"}}, // bash warns
		{"true", []string{"PATH=/usr/bin:/bin"}},        // the builtin
		{"no-such-program-sluice", []string{"PATH=/usr/bin:/bin"}},
		{"env", nil}, // no PATH
	} {
		if cmd, direct := command(tc.line, "/", tc.env); direct || cmd.Path != Shell() {
			t.Errorf("command(%q) with %q = %s direct %v; want the shell", tc.line, tc.env, cmd.Path, direct)
		}
	}
}

// TestRunDirectLikeBash: a command run without the shell sees exactly
// what bash gives a command it execs. The quoted 'env' goes through bash
// (DirectArgv does not take quotes), which execs env just the same.
func TestRunDirectLikeBash(t *testing.T) {
	t.Parallel()
	r := testRunner()
	r.BaseEnv = append(r.BaseEnv, "SHLVL=2", "OLDPWD=/")
	r.EnvAllow = []string{"SHLVL", "OLDPWD"} // not inherited by default
	outputs := map[string][]string{}
	id := ""
	for _, line := range []string{"env", "'env'"} {
		req := execReq(t, line)
		if id == "" {
			id = req.ID
		}
		req.ID = id
		o := run(t.Context(), t, r, req, Options{Pipe: true}, 10*time.Second)
		if o.res.Status != queue.StatusDone || *o.res.ExitCode != 0 {
			t.Fatalf("%s: %s %q", line, o.res.Status, o.log)
		}
		lines := strings.Split(strings.TrimSpace(string(o.log)), "\n")
		for i, l := range lines {
			if strings.HasPrefix(l, "TMPDIR=") || strings.HasPrefix(l, "PWD=") {
				lines[i] = strings.SplitN(l, "=", 2)[0] + "=(the run's)"
			}
		}
		slices.Sort(lines)
		outputs[line] = lines
	}
	if !slices.Equal(outputs["env"], outputs["'env'"]) {
		t.Errorf("without the shell:\n%s\nthrough bash:\n%s", strings.Join(outputs["env"], "\n"), strings.Join(outputs["'env'"], "\n"))
	}
	for _, kv := range []string{"SHLVL=2", "OLDPWD=/"} { // inherited, as bash passes them to what it execs
		if !slices.Contains(outputs["env"], kv) {
			t.Errorf("%s missing from the run's environment:\n%s", kv, strings.Join(outputs["env"], "\n"))
		}
	}
}

// TestRunDirectFallsBack: where bash would not simply exec the program,
// the line goes through bash and ends as it would there.
func TestRunDirectFallsBack(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, 0o755, map[string]string{
		"noshebang": "echo read-by-bash\n",                 // bash runs it as a script
		"badinterp": "#!/nonexistent/interp\necho never\n", // execve fails: bash says why, 126
		"ok":        "#!/bin/sh\necho ran-by-sh \"$0\"\n",  // a #! script runs as it is
	})
	for _, line := range []string{"./noshebang", "./badinterp", "./ok", "./missing"} {
		// What bash itself says and exits with.
		sh := osexec.Command(Shell(), "-c", line)
		sh.Dir = dir
		want, err := sh.CombinedOutput()
		code := 0
		if ee, ok := err.(*osexec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		req := execReq(t, line)
		req.Cwd = dir
		o := run(t.Context(), t, testRunner(), req, Options{Pipe: true}, 10*time.Second)
		if o.res.Status != queue.StatusDone || *o.res.ExitCode != code || string(o.log) != string(want) {
			t.Errorf("%s: %s exit %v %q; bash: exit %d %q", line, o.res.Status, *o.res.ExitCode, o.log, code, want)
		}
	}
}

// compareWithBash runs line with bash -c and with its direct start (which
// must exist) in dir with env, and fails if status, stdout or stderr
// differ.
func compareWithBash(t *testing.T, line, dir string, env []string) {
	t.Helper()
	out := func(cmd *osexec.Cmd) string {
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*osexec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(o.String(), "\n")
		slices.Sort(lines)
		return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", code, strings.Join(lines, "\n"), e.String())
	}
	d := Direct(line, dir, env)
	if d == nil {
		t.Fatalf("%q with %q: no direct start", line, env)
	}
	want := out(shellCommand(line, dir, env))
	if got := out(d); got != want {
		t.Errorf("%q with %q:\nbash -c:\n%s\ndirect (%s):\n%s", line, env, want, d.Path, got)
	}
}

// TestDirectSameAsBash: the cases a review found the direct start
// choosing otherwise than bash, now the same: a PATH entry with .. after
// a symlink (the kernel resolves it after the link), a stale PWD, $_ as
// PATH spells it; and a builtin's name on PATH (true) never runs the file.
func TestDirectSameAsBash(t *testing.T) {
	if ShellDialect() != "bash" {
		t.Skip("no bash here")
	}
	dir := t.TempDir()
	writeFiles(t, dir, 0o755, map[string]string{
		"far/bin/tool": "#!/bin/sh\necho far tool\n",
		"bin/tool":     "#!/bin/sh\necho lexical tool\n",
		"bin/true":     "#!/bin/sh\necho the agent's true\n",
	})
	if err := os.MkdirAll(filepath.Join(dir, "far/deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "far/deep"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	compareWithBash(t, "tool", dir, []string{"PATH=" + dir + "/link/../bin:/usr/bin:/bin"})
	compareWithBash(t, "env", dir, []string{"PATH=/usr//bin:/bin", "PWD=/nonexistent", "SHLVL=4"})
	compareWithBash(t, "env", dir, []string{"PATH=/usr/bin/../bin:/bin", "PWD=" + dir + "/far/..", "OLDPWD=/"})
	if cmd, direct := command("true", dir, []string{"PATH=" + dir + "/bin:/usr/bin:/bin"}); direct {
		t.Errorf("true runs %s, not bash's builtin", cmd.Path)
	}
}
