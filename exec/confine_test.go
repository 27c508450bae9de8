//go:build linux

package exec

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/exec/sandbox"
	"github.com/sluice-dev/sluice/policy"
	"github.com/sluice-dev/sluice/queue"
)

// confineHelperEnv makes the test binary a small Go program that fails
// the way Go programs do ("open X: permission denied"), for explain's
// parsing. It is handled in init, before TestMain.
const confineHelperEnv = "SLUICE_CONFINE_TEST_HELPER"

func init() {
	if op := os.Getenv(confineHelperEnv); op != "" {
		os.Exit(confineHelper(op, os.Args[1:]))
	}
}

// confineHelper: "write PATH", "read PATH" or "dial ADDR"; the error
// printed as a Go program prints it, exit 1.
func confineHelper(op string, args []string) int {
	var err error
	switch op {
	case "write":
		err = os.WriteFile(args[0], []byte("x\n"), 0o644)
	case "read":
		_, err = os.ReadFile(args[0])
	case "dial":
		var c net.Conn
		c, err = net.Dial("tcp", args[0])
		if err == nil {
			c.Close()
		}
	default:
		err = fmt.Errorf("unknown op %q", op)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// goHelper is a command that runs the Go helper with op and arg, and the
// request env it needs.
func goHelper(t *testing.T, op, arg string) (string, map[string]string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("'%s' '%s'", exe, arg), map[string]string{confineHelperEnv: op}
}

// confineFixture is a confining Runner and the places its runs touch: a
// home with a secret, sluice's spool, a project (the cwd and jail) and a
// directory outside it that the user can write.
type confineFixture struct {
	r                             *Runner
	home, secret, spool           string
	project, outside, spoolSecret string
}

func resolvedTemp(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func newConfineFixture(t *testing.T) *confineFixture {
	t.Helper()
	if _, err := sandbox.Available(); err != nil {
		t.Skipf("no confinement on this machine: %v", err)
	}
	f := &confineFixture{home: resolvedTemp(t), spool: resolvedTemp(t), project: resolvedTemp(t), outside: resolvedTemp(t)}
	f.secret = filepath.Join(f.home, ".ssh", "id_ed25519")
	f.spoolSecret = filepath.Join(f.spool, "audit.log")
	for _, d := range []string{filepath.Dir(f.secret), filepath.Join(f.spool, "out")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{f.secret, f.spoolSecret, filepath.Join(f.project, "file.txt"), filepath.Join(f.home, ".bashrc")} {
		if err := os.WriteFile(p, []byte("content\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f.r = testRunner()
	f.r.Confine = &Confine{Mode: SandboxPrefer, Hidden: DefaultHidden(f.home), Spool: f.spool}
	t.Cleanup(func() {
		if err := f.r.Close(); err != nil {
			t.Errorf("Runner.Close: %v", err)
		}
	})
	return f
}

// run runs cmd (with env) in the project under profile, with its log in
// the spool as serve has it.
func (f *confineFixture) run(t *testing.T, cmd string, env map[string]string, opt Options) runOut {
	t.Helper()
	req := execReq(t, cmd)
	req.Cwd = f.project
	req.Env = env
	if opt.LogPath == "" {
		opt.LogPath = filepath.Join(f.spool, "out", req.ID+".log")
	}
	o := run(t.Context(), t, f.r, req, opt, time.Minute)
	checkRan(t, req, o)
	if o.res.Status != queue.StatusDone {
		t.Fatalf("%q: status %s (%s)", cmd, o.res.Status, o.res.Reason)
	}
	return o
}

// lastLine is the log's last line, without its line ending.
func lastLine(log []byte) string {
	s := strings.TrimRight(string(log), "\r\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// sluiceNote is the explain line at the end of the log, or "".
func sluiceNote(log []byte) string {
	if l := lastLine(log); strings.HasPrefix(l, "sluice: ") {
		return l
	}
	return ""
}

func refusedWrite(p sandbox.Profile, path string) string {
	return fmt.Sprintf("sluice: the sandbox (%s: %s) refused to write %s;", p, p.Describe(), path)
}

func hides(path string) string {
	return fmt.Sprintf("sluice: the sandbox hides %s ", path)
}

func TestConfinedRunLabels(t *testing.T) {
	t.Parallel()
	f := newConfineFixture(t)
	for _, tc := range []struct {
		profile string
		label   string
		writes  bool // in the project
	}{
		{"", "read_only", false},
		{"bogus", "read_only", false},
		{"read_only", "read_only", false},
		{"mutating", "mutating", true},
		{"networked", "networked", true},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			t.Parallel()
			o := f.run(t, `echo x > ./written-`+tc.label+tc.profile+`; s=$?; cat file.txt; exit $s`, nil, Options{Profile: tc.profile})
			// A networked run's sandbox line says how it reaches the
			// network (network_test.go).
			if label, _, _ := strings.Cut(o.res.Sandbox, "; network: "); label != tc.label {
				t.Errorf("Sandbox = %q, want %q", o.res.Sandbox, tc.label)
			}
			if (*o.res.ExitCode == 0) != tc.writes {
				t.Errorf("exit %d writing in the project under %s:\n%s", *o.res.ExitCode, tc.label, o.log)
			}
			if !strings.Contains(string(o.log), "content") {
				t.Errorf("the project is not readable:\n%s", o.log)
			}
		})
	}
}

// TestConfinedRunTmpDir: a confined run gets a private TMPDIR that it can
// write and that is gone after the run.
func TestConfinedRunTmpDir(t *testing.T) {
	t.Parallel()
	f := newConfineFixture(t)
	for _, p := range sandbox.Profiles() {
		t.Run(string(p), func(t *testing.T) {
			t.Parallel()
			o := f.run(t, `echo "tmpdir=[$TMPDIR]" && echo x > "$TMPDIR/f" && mkdir "$TMPDIR/d" && echo wrote`, nil, Options{Profile: string(p)})
			if *o.res.ExitCode != 0 || !strings.Contains(string(o.log), "wrote") {
				t.Fatalf("exit %d:\n%s", *o.res.ExitCode, o.log)
			}
			m := regexp.MustCompile(`tmpdir=\[([^\]]*)\]`).FindSubmatch(o.log)
			if m == nil || len(m[1]) == 0 || !filepath.IsAbs(string(m[1])) {
				t.Fatalf("no TMPDIR in the run's environment:\n%s", o.log)
			}
			tmp := string(m[1])
			if !strings.HasPrefix(filepath.Base(tmp), "run-") || !strings.HasPrefix(filepath.Base(filepath.Dir(tmp)), "sluice-runs-") {
				t.Errorf("TMPDIR %s is not the run's own", tmp)
			}
			// It is removed in the background, right after the result.
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if _, err := os.Stat(tmp); errors.Is(err, os.ErrNotExist) {
					break
				}
			}
			if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("TMPDIR %s remains after the run: %v", tmp, err)
			}
		})
	}
}

// TestUnconfinedRuns: a person's "unconfined", sandbox = off and a Runner
// without Confine all run without confinement, labelled so.
func TestUnconfinedRuns(t *testing.T) {
	t.Parallel()
	f := newConfineFixture(t)
	off := testRunner()
	off.Confine = &Confine{Mode: SandboxOff, Hidden: DefaultHidden(f.home), Spool: f.spool}
	t.Cleanup(func() { off.Close() })
	none := testRunner()
	t.Cleanup(func() { none.Close() })
	for _, tc := range []struct {
		name  string
		r     *Runner
		opt   Options
		label string
	}{
		{"unconfined", f.r, Options{Profile: "read_only", Unconfined: true}, Unconfined},
		{"off", off, Options{Profile: "read_only"}, "none: sandbox = off"},
		{"nil", none, Options{Profile: "read_only"}, "none: sandbox = off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			target := filepath.Join(f.outside, tc.name)
			req := execReq(t, fmt.Sprintf(`echo "tmpdir=[$TMPDIR]"; echo x > '%s' && cat '%s' && echo wrote`, target, f.secret))
			req.Cwd = f.project
			o := run(t.Context(), t, tc.r, req, tc.opt, time.Minute)
			checkRan(t, req, o)
			// A networked run's sandbox line says how it reaches the
			// network (network_test.go).
			if label, _, _ := strings.Cut(o.res.Sandbox, "; network: "); label != tc.label {
				t.Errorf("Sandbox = %q, want %q", o.res.Sandbox, tc.label)
			}
			if *o.res.ExitCode != 0 || !strings.Contains(string(o.log), "wrote") {
				t.Errorf("exit %d:\n%s", *o.res.ExitCode, o.log)
			}
			if _, err := os.Stat(target); err != nil {
				t.Errorf("the unconfined write outside the roots did not happen: %v", err)
			}
			if !strings.Contains(string(o.log), "tmpdir=[]") {
				t.Errorf("an unconfined run got a TMPDIR:\n%s", o.log)
			}
			if n := sluiceNote(o.log); n != "" {
				t.Errorf("an unconfined run got a note: %q", n)
			}
		})
	}
}

// TestExplain: a confined run that fails because of the sandbox ends its
// log with a line that says so, naming the path; other runs do not. The
// messages are real, from the programs that print them.
func TestExplain(t *testing.T) {
	t.Parallel()
	f := newConfineFixture(t)
	have := func(tool string) bool { _, err := osexec.LookPath(tool); return err == nil }
	out := func(name string) string { return filepath.Join(f.outside, name) }
	type tcase struct {
		name    string
		tools   []string
		profile string
		cmd     string
		env     map[string]string
		want    string // the note's start; "" for none
	}
	goWrite, goWriteEnv := goHelper(t, "write", out("go-written"))
	goRead, goReadEnv := goHelper(t, "read", f.secret)
	goDial, goDialEnv := goHelper(t, "dial", "127.0.0.1:9")
	ro, mut := sandbox.ReadOnly, sandbox.Mutating
	cases := []tcase{
		// Writes outside the roots, as each program words it.
		{"dash", []string{"dash"}, "read_only", fmt.Sprintf(`echo x > '%s'`, out("dash")), nil, refusedWrite(ro, out("dash"))},
		{"bash", []string{"bash"}, "read_only", fmt.Sprintf(`bash -c "echo x > '%s'"`, out("bash")), nil, refusedWrite(ro, out("bash"))},
		{"cp", []string{"cp"}, "read_only", fmt.Sprintf(`cp file.txt '%s'`, out("cp")), nil, refusedWrite(ro, out("cp"))},
		{"touch", []string{"touch"}, "mutating", fmt.Sprintf(`touch '%s'`, out("touch")), nil, refusedWrite(mut, out("touch"))},
		{"mkdir", []string{"mkdir"}, "read_only", fmt.Sprintf(`mkdir '%s'`, out("mkdir")), nil, refusedWrite(ro, out("mkdir"))},
		{"mkdir utf-8", []string{"mkdir"}, "read_only", fmt.Sprintf(`mkdir '%s'`, out("mkdir-utf8")), map[string]string{"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}, refusedWrite(ro, out("mkdir-utf8"))},
		{"python3", []string{"python3"}, "mutating", fmt.Sprintf(`python3 -c "open('%s', 'w')"`, out("python")), nil, refusedWrite(mut, out("python"))},
		{"go", nil, "read_only", goWrite, goWriteEnv, refusedWrite(ro, out("go-written"))},
		// In the project: read_only refuses, a relative path is the
		// project's.
		{"relative", []string{"touch"}, "read_only", `touch ./new-file`, nil, refusedWrite(ro, filepath.Join(f.project, "new-file"))},
		// A bare name in the cwd, the commonest refusal of a read-only
		// run.
		{"bare name, mkdir", []string{"mkdir"}, "read_only", `mkdir -p sub/dir`, nil, refusedWrite(ro, filepath.Join(f.project, "sub"))},
		{"bare name, dash", []string{"dash"}, "read_only", `echo x > out.txt`, nil, refusedWrite(ro, filepath.Join(f.project, "out.txt"))},
		{"in the project", []string{"touch"}, "mutating", `touch ./other-file && exit 3`, nil, ""},
		// Secrets, read.
		{"cat secret", []string{"cat"}, "networked", fmt.Sprintf(`cat '%s'`, f.secret), nil, hides(f.secret)},
		{"bash secret", []string{"bash"}, "read_only", fmt.Sprintf(`bash -c "read x < '%s'"`, f.secret), nil, hides(f.secret)},
		{"python3 secret", []string{"python3"}, "read_only", fmt.Sprintf(`python3 -c "open('%s').read()"`, f.secret), nil, hides(f.secret)},
		{"go secret", nil, "mutating", goRead, goReadEnv, hides(f.secret)},
		{"spool", []string{"cat"}, "mutating", fmt.Sprintf(`cat '%s'`, f.spoolSecret), nil, hides(f.spoolSecret)},
		{"ls secret dir", []string{"ls", "cat"}, "read_only", fmt.Sprintf(`ls '%s' >/dev/null && cat '%s'/*`, filepath.Dir(f.secret), filepath.Dir(f.secret)), nil, hides(f.secret)},
		// The network.
		{"go dial", nil, "read_only", goDial, goDialEnv, "sluice: the sandbox (read_only: read-only, no network) refused a network connection;"},
		// Not the sandbox: no note.
		{"success", nil, "read_only", `cat file.txt`, nil, ""},
		{"success after a refusal", nil, "read_only", fmt.Sprintf(`echo x > '%s'; true`, out("ignored")), nil, ""},
		{"unrelated failure", []string{"cat"}, "read_only", `cat /nonexistent; exit 1`, nil, ""},
		{"exit code only", nil, "mutating", `exit 7`, nil, ""},
		// A write the sandbox allowed, then a failure.
		{"tmp written", nil, "read_only", `echo x > "$TMPDIR/f" && exit 2`, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, tool := range tc.tools {
				if !have(tool) {
					t.Skipf("%s is not installed", tool)
				}
			}
			o := f.run(t, tc.cmd, tc.env, Options{Profile: tc.profile})
			note := sluiceNote(o.log)
			switch {
			case tc.want == "" && note != "":
				t.Errorf("note %q for a run the sandbox did not fail:\n%s", note, o.log)
			case tc.want != "" && !strings.HasPrefix(note, tc.want):
				t.Errorf("note %q, want %q...; log:\n%s", note, tc.want, o.log)
			case tc.want != "" && *o.res.ExitCode == 0:
				t.Errorf("exit 0 with a note")
			}
			if tc.want != "" && !strings.Contains(o.res.OutputTail, strings.TrimSpace(note)) {
				t.Errorf("the note is not in the output tail")
			}
		})
	}
}

// TestExplainNotForExec: a script that is not executable fails with
// "Permission denied" for a reason of its own (the file's mode, not the
// sandbox), in a read_only run as in any other.
func TestExplainNotForExec(t *testing.T) {
	t.Parallel()
	f := newConfineFixture(t)
	script := filepath.Join(f.project, "script.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := f.run(t, `./script.sh`, nil, Options{Profile: "read_only"})
	if *o.res.ExitCode != 126 {
		t.Fatalf("exit %d:\n%s", *o.res.ExitCode, o.log)
	}
	if n := sluiceNote(o.log); n != "" {
		t.Errorf("note %q for a script without the x bit:\n%s", n, o.log)
	}
}

// TestConfinedRunTestProcessUntouched: the runner's process is not
// confined by the runs it confines.
func TestConfinedRunTestProcessUntouched(t *testing.T) {
	t.Parallel()
	f := newConfineFixture(t)
	for _, p := range sandbox.Profiles() {
		o := f.run(t, `true`, nil, Options{Profile: string(p)})
		if label, _, _ := strings.Cut(o.res.Sandbox, "; network: "); label != string(p) {
			t.Fatalf("Sandbox %q", o.res.Sandbox)
		}
	}
	target := filepath.Join(f.outside, "by-the-test")
	if err := os.WriteFile(target, []byte("x"), 0o600); err != nil {
		t.Errorf("the test process cannot write outside the roots after confined runs: %v", err)
	}
	if b, err := os.ReadFile(f.secret); err != nil || string(b) != "content\n" {
		t.Errorf("the test process cannot read the secret after confined runs: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Errorf("the test process cannot open a socket after confined runs: %v", err)
	} else {
		l.Close()
	}
}

// TestProjectCaches: a run with Caches (one the policy allowed with a
// checkpoint, no person involved) cannot write the shared caches other
// projects build from; its tools' caches point into its project's own.
func TestProjectCaches(t *testing.T) {
	f := newConfineFixture(t)
	shared := resolvedTemp(t)
	f.r.Confine.Writable = []string{shared}
	caches := filepath.Join(resolvedTemp(t), "proj-cache")
	cmd := `touch "$SHARED/poison" 2>/dev/null && echo poisoned; mkdir -p "$GOCACHE" && touch "$GOCACHE/entry" && echo "cache=$GOCACHE"`
	o := f.run(t, cmd, map[string]string{"SHARED": shared}, Options{Profile: "mutating", Jail: []string{f.project}, Caches: caches})
	if bytes.Contains(o.log, []byte("poisoned")) {
		t.Errorf("the run wrote the shared cache: %q", o.log)
	}
	if _, err := os.Stat(filepath.Join(shared, "poison")); err == nil {
		t.Error("poison is in the shared cache")
	}
	if !bytes.Contains(o.log, []byte("cache="+filepath.Join(caches, "go-build"))) {
		t.Errorf("GOCACHE does not point into the project's cache: %q", o.log)
	}
	if _, err := os.Stat(filepath.Join(caches, "go-build", "entry")); err != nil {
		t.Errorf("the project's cache was not written: %v", err)
	}
	// Without Caches (a person approved it), the shared caches stay
	// writable, as before.
	o = f.run(t, `touch "$SHARED/ok" && echo wrote`, map[string]string{"SHARED": shared}, Options{Profile: "mutating", Jail: []string{f.project}})
	if !bytes.Contains(o.log, []byte("wrote")) {
		t.Errorf("an approved run lost the shared caches: %q", o.log)
	}
}

// TestProjectSecretsHidden: a read_only run nobody approved cannot read
// the project's secret files as they exist when it starts (.env at the
// top, a key one directory down); a person's approval lets it; other
// files of the project stay readable, and the refusal says why.
func TestProjectSecretsHidden(t *testing.T) {
	f := newConfineFixture(t)
	writeFiles(t, f.project, 0o644, map[string]string{".env": "API_TOKEN=tok-top-secret\n", "certs/server.key": "KEY-secret-material\n",
		"README.md": "readme-visible\n", "src/deep/dir/.env": "deep\n"})
	cmd := `cat README.md; cat .env; cat certs/server.key`
	o := f.run(t, cmd, nil, Options{Profile: "read_only", Jail: []string{f.project}})
	if bytes.Contains(o.log, []byte("tok-top-secret")) || bytes.Contains(o.log, []byte("KEY-secret")) {
		t.Errorf("a read_only run nobody approved read the project's secrets:\n%s", o.log)
	}
	if !bytes.Contains(o.log, []byte("readme-visible")) {
		t.Errorf("the project's other files are not readable:\n%s", o.log)
	}
	if !bytes.Contains(o.log, []byte("a file of the project that usually holds secrets")) {
		t.Errorf("the refusal does not say why:\n%s", o.log)
	}
	o = f.run(t, cmd, nil, Options{Profile: "read_only", Jail: []string{f.project}, Approved: true})
	if !bytes.Contains(o.log, []byte("tok-top-secret")) || !bytes.Contains(o.log, []byte("KEY-secret")) {
		t.Errorf("an approved read_only run could not read what the person let it:\n%s", o.log)
	}
}

// TestNamedWritableWithProjectCaches: a place the person made writable in
// config.toml stays writable for a run that has the project's own caches
// (every run serve confines), while the shared caches do not.
func TestNamedWritableWithProjectCaches(t *testing.T) {
	f := newConfineFixture(t)
	shared, named := resolvedTemp(t), resolvedTemp(t)
	f.r.Confine.Writable = []string{shared, named}
	f.r.Confine.Named = []string{named}
	caches := filepath.Join(resolvedTemp(t), "proj-cache")
	cmd := `touch "$SHARED/x" 2>/dev/null && echo shared-written; touch "$NAMED/x" && echo named-written`
	o := f.run(t, cmd, map[string]string{"SHARED": shared, "NAMED": named}, Options{Profile: "mutating", Jail: []string{f.project}, Caches: caches})
	if bytes.Contains(o.log, []byte("shared-written")) || !bytes.Contains(o.log, []byte("named-written")) {
		t.Errorf("want the named place written and the shared cache not: %q", o.log)
	}
}

// TestApprovedGrantsWritable: the verdict on "cp file.txt DIR/" names
// DIR, outside the project, as a grant; an approved confined run may then
// write there, and nowhere else outside the project: not a second
// directory, not through a grant that is a symlink now, and not at all
// when nobody approved the run.
func TestApprovedGrantsWritable(t *testing.T) {
	f := newConfineFixture(t)
	granted, other := filepath.Join(f.outside, "x"), filepath.Join(f.outside, "y")
	for _, d := range []string{granted, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p, err := policy.Load(policy.Options{Home: f.home})
	if err != nil {
		t.Fatal(err)
	}
	v := p.Check("cp file.txt "+granted+"/", policy.Env{Cwd: f.project, Home: f.home, Roots: []string{f.project}})
	if v.Action != policy.Ask || !slices.Equal(v.Grants, []string{granted}) || !slices.Equal(v.Queue().Grants, v.Grants) {
		t.Fatalf("verdict %s, grants %q (queue %q): want ask, granting %s", v.Action, v.Grants, v.Queue().Grants, granted)
	}
	opt := Options{Profile: v.Profile(), Jail: []string{f.project}, Approved: true, Grants: v.Grants}
	cmd := `cp file.txt "$G/" && echo copied-granted; cp file.txt "$O/" 2>/dev/null || echo refused-other; cp file.txt "$G/new.txt" && echo copied-new`
	o := f.run(t, cmd, map[string]string{"G": granted, "O": other}, opt)
	for _, want := range []string{"copied-granted", "refused-other", "copied-new"} {
		if !bytes.Contains(o.log, []byte(want)) {
			t.Errorf("want %s in the log:\n%s", want, o.log)
		}
	}
	for p, want := range map[string]bool{filepath.Join(granted, "file.txt"): true, filepath.Join(granted, "new.txt"): true, filepath.Join(other, "file.txt"): false} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", p, err == nil, want)
		}
	}

	// A grant not there yet opens the directory it is made in.
	fresh := filepath.Join(f.outside, "fresh.txt")
	o = f.run(t, `cp file.txt "$F" && echo copied-fresh`, map[string]string{"F": fresh}, Options{Profile: "mutating", Jail: []string{f.project}, Approved: true, Grants: []string{fresh}})
	if !bytes.Contains(o.log, []byte("copied-fresh")) {
		t.Errorf("a grant not there yet was not writable:\n%s", o.log)
	}

	// Nobody approved it: the grant opens nothing.
	o = f.run(t, `cp file.txt "$O/" 2>/dev/null || echo refused-unapproved`, map[string]string{"O": other},
		Options{Profile: "mutating", Jail: []string{f.project}, Grants: []string{other}})
	if !bytes.Contains(o.log, []byte("refused-unapproved")) {
		t.Errorf("a grant opened a run nobody approved:\n%s", o.log)
	}

	// A grant that leads through a symlink now (put there after the
	// verdict, which names paths resolved) opens nothing.
	link := filepath.Join(f.outside, "link")
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}
	o = f.run(t, `cp file.txt "$L/" 2>/dev/null || echo refused-link`, map[string]string{"L": link},
		Options{Profile: "mutating", Jail: []string{f.project}, Approved: true, Grants: []string{link}})
	if !bytes.Contains(o.log, []byte("refused-link")) {
		t.Errorf("a grant through a symlink opened its target:\n%s", o.log)
	}
	if _, err := os.Stat(filepath.Join(other, "file.txt")); err == nil {
		t.Errorf("%s was written", filepath.Join(other, "file.txt"))
	}
}

// TestSweepRunDirs: the runners' directories of processes that are gone
// (an engine killed with SIGKILL leaves its own) are removed, and those
// older sluices named without the pid once untouched for longer than any
// run lasts; a live process's, another name's, a recent unnumbered one and
// a symlink stay.
func TestSweepRunDirs(t *testing.T) {
	dir := t.TempDir()
	dead := osexec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	mk := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Join(p, "run-1"), 0o700); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gone := mk(fmt.Sprintf("%s%d-123", runDirsPrefix, dead.Process.Pid))
	live := mk(fmt.Sprintf("%s%d-456", runDirsPrefix, os.Getpid()))
	old := mk(runDirsPrefix + "789")
	stale := mk(runDirsPrefix + "1023443498")
	long := time.Now().Add(-oldRunDirAge - time.Hour)
	if err := os.Chtimes(stale, long, long); err != nil {
		t.Fatal(err)
	}
	other := mk("sluice-sandbox-1")
	target := mk("elsewhere")
	link := filepath.Join(dir, fmt.Sprintf("%s%d-999", runDirsPrefix, dead.Process.Pid))
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}

	sweepRunDirs(dir)

	for _, p := range []string{gone, stale} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s remains: %v", filepath.Base(p), err)
		}
	}
	for _, p := range []string{live, old, other, filepath.Join(target, "run-1")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
	if _, err := os.Lstat(link); err != nil {
		t.Errorf("the symlink was removed: %v", err)
	}
}
