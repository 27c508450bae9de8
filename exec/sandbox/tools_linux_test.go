//go:build linux

package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/exec"
	"github.com/sluice-dev/sluice/exec/sandbox"
)

// The positive side of confinement: the everyday tools of a project work
// under the profile a verdict gives them, with the secret paths hidden
// and only the default caches writable (exec.DefaultHidden and
// exec.DefaultWritable, as serve confines runs). Each tool that is not
// installed is skipped, by name.

// toolCaches holds the caches the tests' confined runs share, as the runs
// in one project share theirs (a cold Go build cache per test would
// compile the standard library again in each). It is made at first use:
// the confined helper children run this binary too.
var (
	toolCachesMu sync.Mutex
	toolCaches   string
)

func sharedCaches(t *testing.T) string {
	t.Helper()
	toolCachesMu.Lock()
	defer toolCachesMu.Unlock()
	if toolCaches == "" {
		d, err := os.MkdirTemp("", "sluice-tools-")
		if err != nil {
			t.Fatal(err)
		}
		toolCaches = d
	}
	return toolCaches
}

// toolBox is the helper the tools run through, as serve's runs do where
// sluice-box is installed: a link to this test binary (TestMain acts as
// the helper by that name).
func toolBox(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(sharedCaches(t), "sluice-box")
	if err := os.Symlink(self, p); err != nil && !errors.Is(err, os.ErrExist) {
		t.Fatal(err)
	}
	return p
}

func TestMain(m *testing.M) {
	// Run as sluice-box (a link to this binary, made by the box tests),
	// it is the helper.
	if filepath.Base(os.Args[0]) == "sluice-box" {
		sandbox.BoxExit(os.Args[1:])
	}
	code := m.Run()
	if toolCaches != "" {
		os.RemoveAll(toolCaches)
	}
	os.Exit(code)
}

// toolTimeout bounds one tool's run (a hang guard).
const toolTimeout = 2 * time.Minute

// needTools skips the test unless every tool is on PATH.
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := osexec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: %v", tool, err)
		}
	}
}

func needSandbox(t *testing.T) {
	t.Helper()
	if _, err := sandbox.Available(); err != nil {
		t.Skipf("no confinement on this machine: %v", err)
	}
}

// write creates files under dir: name → content.
func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// project makes a project directory (resolved: the jail as the runner
// has it).
func project(t *testing.T, files map[string]string) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, files)
	return dir
}

// unconfined runs a setup command in dir, unconfined.
func unconfined(t *testing.T, dir string, name string, args ...string) {
	t.Helper()
	cmd := osexec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("setup %s %v: %v\n%s", name, args, err, out)
	}
}

// confined runs name in dir under profile, as serve would: the project
// the jail, the home directories closed but for the default readable set,
// the user's default secrets hidden, the project's own caches writable
// (and the download caches for a networked run), a private TMPDIR. It
// fails the test, with the output, unless the tool exits 0.
func confined(t *testing.T, p sandbox.Profile, dir string, name string, args ...string) string {
	t.Helper()
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	return confinedIn(t, os.Environ(), home, p, dir, name, args...)
}

// confinedIn is confined with the environment env and the home directory
// home.
func confinedIn(t *testing.T, env []string, home string, p sandbox.Profile, dir string, name string, args ...string) string {
	t.Helper()
	out, err := confinedRun(t, env, home, p, dir, name, args...)
	if err != nil {
		t.Fatalf("%s %s under %s: %v\n%s", name, strings.Join(args, " "), p, err, out)
	}
	return out
}

// confinedOut is confinedIn whatever the tool's exit status.
func confinedOut(t *testing.T, env []string, home string, p sandbox.Profile, dir string, name string, args ...string) string {
	t.Helper()
	out, _ := confinedRun(t, env, home, p, dir, name, args...)
	return out
}

// confinedRun runs the tool and returns its output and how it ended.
func confinedRun(t *testing.T, env []string, home string, p sandbox.Profile, dir string, name string, args ...string) (string, error) {
	t.Helper()
	tmp := t.TempDir()
	caches := filepath.Join(sharedCaches(t), "caches")
	writable := []string{caches}
	if p.Network() {
		writable = append(writable, exec.DefaultFetchCaches(env, home)...)
	}
	if err := exec.MakeCaches(writable); err != nil {
		t.Fatal(err)
	}
	spec := sandbox.Spec{
		Profile:  p,
		Roots:    []string{dir},
		Writable: writable,
		Hidden:   exec.DefaultHidden(home),
		Closed:   exec.DefaultClosed(home),
		Readable: exec.DefaultReadable(env, home),
		TmpDir:   tmp,
		Box:      toolBox(t),
	}
	if p.Writes() {
		// As the runner gives them: what later runs unconfined is
		// read-only (boxed).
		spec.Protect = exec.TakeGuard([]string{dir}).Existing()
	}
	c, err := sandbox.Prepare(spec)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	cmd := osexec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(append(slices.Clone(env), "TMPDIR="+tmp, "PWD="+dir), exec.CacheEnv(caches)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := sandbox.Start(cmd, c, nil); err != nil {
		t.Fatalf("Start %s: %v", name, err)
	}
	err = cmd.Wait()
	return out.String(), err
}

// goModule is a tiny Go module with a package, a command and a test.
var goModule = map[string]string{
	"go.mod":        "module example.com/tiny\n\ngo 1.22\n",
	"tiny.go":       "package tiny\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n",
	"tiny_test.go":  "package tiny\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"no\")\n\t}\n}\n",
	"cmd/x/main.go": "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/tiny\"\n)\n\nfunc main() { fmt.Println(tiny.Add(1, 2)) }\n",
}

func TestToolsReadOnlyGo(t *testing.T) {
	needSandbox(t)
	needTools(t, "go")
	t.Parallel()
	dir := project(t, goModule)
	confined(t, sandbox.ReadOnly, dir, "go", "vet", "./...")
	out := confined(t, sandbox.ReadOnly, dir, "go", "list", "./...")
	if !strings.Contains(out, "example.com/tiny/cmd/x") {
		t.Errorf("go list: %q", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Error("a read-only go vet left a binary in the project")
	}
}

func TestToolsReadOnlyGit(t *testing.T) {
	needSandbox(t)
	needTools(t, "git")
	t.Parallel()
	dir := project(t, map[string]string{"committed.txt": "one\n"})
	unconfined(t, dir, "git", "init", "-q")
	unconfined(t, dir, "git", "add", "committed.txt")
	unconfined(t, dir, "git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first")
	write(t, dir, map[string]string{"untracked.txt": "two\n"})
	out := confined(t, sandbox.ReadOnly, dir, "git", "status")
	if !strings.Contains(out, "untracked.txt") {
		t.Errorf("git status does not list the untracked file:\n%s", out)
	}
	out = confined(t, sandbox.ReadOnly, dir, "git", "log", "--oneline")
	if !strings.Contains(out, "first") {
		t.Errorf("git log:\n%s", out)
	}
}

func TestToolsReadOnlyCargo(t *testing.T) {
	needSandbox(t)
	needTools(t, "cargo")
	t.Parallel()
	dir := project(t, map[string]string{
		"Cargo.toml": "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
		"src/lib.rs": "pub fn add(a: i32, b: i32) -> i32 { a + b }\n",
	})
	unconfined(t, dir, "cargo", "generate-lockfile", "--offline")
	if _, err := os.Stat(filepath.Join(dir, "Cargo.lock")); err != nil {
		t.Fatal(err)
	}
	out := confined(t, sandbox.ReadOnly, dir, "cargo", "metadata", "--format-version", "1", "--offline")
	if !strings.Contains(out, `"name":"tiny"`) {
		t.Errorf("cargo metadata:\n%s", out)
	}
}

func TestToolsMutatingGo(t *testing.T) {
	needSandbox(t)
	needTools(t, "go")
	t.Parallel()
	dir := project(t, goModule)
	confined(t, sandbox.Mutating, dir, "go", "build", "./...")
	confined(t, sandbox.Mutating, dir, "go", "build", "-o", "bin/x", "./cmd/x")
	if _, err := os.Stat(filepath.Join(dir, "bin", "x")); err != nil {
		t.Errorf("go build -o bin/x: %v", err)
	}
	out := confined(t, sandbox.Mutating, dir, "go", "test", "-count=1", "./...")
	if !strings.Contains(out, "ok") {
		t.Errorf("go test:\n%s", out)
	}
}

func TestToolsMutatingMake(t *testing.T) {
	needSandbox(t)
	needTools(t, "make", "cc")
	t.Parallel()
	dir := project(t, map[string]string{
		"hello.c":  "#include <stdio.h>\nint main(void) { puts(\"hello\"); return 0; }\n",
		"Makefile": "hello: hello.c\n\tcc -O2 -o hello hello.c\n",
	})
	confined(t, sandbox.Mutating, dir, "make")
	out, err := osexec.Command(filepath.Join(dir, "hello")).Output()
	if err != nil || string(out) != "hello\n" {
		t.Errorf("the binary make built: %q %v", out, err)
	}
}

func TestToolsMutatingNpm(t *testing.T) {
	needSandbox(t)
	needTools(t, "npm", "node")
	t.Parallel()
	dir := project(t, map[string]string{
		"package.json": `{"name": "tiny", "version": "1.0.0", "private": true, "scripts": {"test": "node test.js"}}` + "\n",
		"test.js":      "require('fs').writeFileSync('ran.txt', 'yes');\nconsole.log('tests pass');\n",
	})
	out := confined(t, sandbox.Mutating, dir, "npm", "test")
	if !strings.Contains(out, "tests pass") {
		t.Errorf("npm test:\n%s", out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "ran.txt")); err != nil || string(b) != "yes" {
		t.Errorf("the test script did not write in the project: %q %v", b, err)
	}
}

// freshHome is a home directory where nothing has run yet: the usual
// dotfiles and a secret beside them, no cache of any tool. The toolchains
// stay where they are installed (RUSTUP_HOME, PYENV_ROOT, GOROOT and PATH
// name them), as for a person who installed them system-wide.
func freshHome(t *testing.T) (env []string, home string) {
	t.Helper()
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	write(t, home, map[string]string{
		".gitconfig":              "[user]\n\tname = Fresh\n\temail = fresh@example.com\n[init]\n\tdefaultBranch = main\n",
		".bashrc":                 "export EDITOR=vi\n",
		".profile":                ". ~/.bashrc\n",
		".config/git/ignore":      "*.swp\n",
		".config/git/credentials": "https://u:ghp_freshsecret@github.com\n",
	})
	realHome, _ := os.UserHomeDir()
	env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "TERM=dumb"}
	for _, v := range []string{"RUSTUP_HOME", "PYENV_ROOT", "GOROOT", "RUSTUP_TOOLCHAIN"} {
		if s := os.Getenv(v); s != "" {
			env = append(env, v+"="+s)
		}
	}
	if os.Getenv("RUSTUP_HOME") == "" && realHome != "" {
		if _, err := os.Stat(filepath.Join(realHome, ".rustup")); err == nil {
			env = append(env, "RUSTUP_HOME="+filepath.Join(realHome, ".rustup"))
		}
	}
	return env, home
}

// TestToolsFreshHome: the first run of each everyday tool works confined
// from a home where no cache exists yet (a cache missing from the
// writable set must not make the tool fail for good), and none of them
// can read the secret beside the dotfiles.
func TestToolsFreshHome(t *testing.T) {
	needSandbox(t)
	t.Parallel()
	run := func(t *testing.T, p sandbox.Profile, dir, line string) string {
		t.Helper()
		env, home := freshHome(t)
		return confinedIn(t, env, home, p, dir, "bash", "-c", line)
	}
	t.Run("go", func(t *testing.T) {
		needTools(t, "go")
		t.Parallel()
		dir := project(t, goModule)
		run(t, sandbox.ReadOnly, dir, "go vet ./...")
		run(t, sandbox.Mutating, dir, "go build ./... && go build -o bin/x ./cmd/x")
		if out := run(t, sandbox.Mutating, dir, "go test -count=1 ./..."); !strings.Contains(out, "ok") {
			t.Errorf("go test:\n%s", out)
		}
	})
	t.Run("cargo", func(t *testing.T) {
		needTools(t, "cargo")
		t.Parallel()
		dir := project(t, map[string]string{
			"Cargo.toml": "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
			"src/lib.rs": "pub fn add(a: i32, b: i32) -> i32 { a + b }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() { assert_eq!(super::add(1, 2), 3); }\n}\n",
		})
		if out := run(t, sandbox.Mutating, dir, "cargo build --offline && cargo test --offline"); !strings.Contains(out, "test result: ok") {
			t.Errorf("cargo test:\n%s", out)
		}
	})
	t.Run("npm", func(t *testing.T) {
		needTools(t, "npm", "node")
		t.Parallel()
		dir := project(t, map[string]string{
			"package.json":      `{"name": "tiny", "version": "1.0.0", "private": true, "scripts": {"test": "node test.js"}}` + "\n",
			"package-lock.json": `{"name": "tiny", "version": "1.0.0", "lockfileVersion": 3, "requires": true, "packages": {"": {"name": "tiny", "version": "1.0.0"}}}` + "\n",
			"test.js":           "console.log('tests pass');\n",
		})
		if out := run(t, sandbox.Mutating, dir, "npm ci --offline && npm test"); !strings.Contains(out, "tests pass") {
			t.Errorf("npm ci && npm test:\n%s", out)
		}
	})
	t.Run("python", func(t *testing.T) {
		needTools(t, "python3")
		if err := osexec.Command("/usr/bin/python3", "-c", "import pytest, venv, ensurepip, setuptools").Run(); err != nil {
			t.Skip("Debian's python3 with pytest, venv and setuptools is not installed (apt-get install python3-pytest python3-venv python3-setuptools)")
		}
		t.Parallel()
		dir := project(t, map[string]string{
			"pyproject.toml":   "[build-system]\nrequires = [\"setuptools\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"tiny\"\nversion = \"0.1\"\n",
			"tiny/__init__.py": "def add(a, b):\n    return a + b\n",
			"test_tiny.py":     "from tiny import add\n\ndef test_add():\n    assert add(1, 2) == 3\n",
		})
		line := "/usr/bin/python3 -m venv --system-site-packages .venv && .venv/bin/pip install -q --no-index --no-build-isolation -e . && .venv/bin/python -m pytest -q"
		if out := run(t, sandbox.Mutating, dir, line); !strings.Contains(out, "1 passed") {
			t.Errorf("venv, pip install -e ., pytest:\n%s", out)
		}
	})
	t.Run("make", func(t *testing.T) {
		needTools(t, "make", "cc")
		t.Parallel()
		dir := project(t, map[string]string{
			"hello.c":  "#include <stdio.h>\nint main(void) { puts(\"hello\"); return 0; }\n",
			"Makefile": "hello: hello.c\n\tcc -O2 -o hello hello.c\n",
		})
		run(t, sandbox.Mutating, dir, "make")
	})
	t.Run("git", func(t *testing.T) {
		needTools(t, "git")
		t.Parallel()
		dir := project(t, map[string]string{"a.txt": "one\n"})
		run(t, sandbox.Mutating, dir, "git init -q && git add a.txt && git commit -qm first")
		write(t, dir, map[string]string{"a.txt": "two\n", "b.swp": "x\n"})
		out := run(t, sandbox.ReadOnly, dir, "git status --short && git log --oneline && git diff")
		for _, want := range []string{" M a.txt", "first", "+two"} {
			if !strings.Contains(out, want) {
				t.Errorf("git status/log/diff lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "b.swp") {
			t.Errorf("git did not read the excludes file ~/.config/git/ignore:\n%s", out)
		}
		run(t, sandbox.Mutating, dir, "git commit -qam second")
	})
	t.Run("secret", func(t *testing.T) {
		t.Parallel()
		env, home := freshHome(t)
		dir := project(t, map[string]string{"a.txt": "x\n"})
		out := confinedOut(t, env, home, sandbox.ReadOnly, dir, "bash", "-c", "cat ~/.config/git/credentials; cat ~/.gitconfig")
		if strings.Contains(out, "ghp_freshsecret") || !strings.Contains(out, "Fresh") {
			t.Errorf("read ~/.config/git/credentials or not ~/.gitconfig:\n%s", out)
		}
	})
}
