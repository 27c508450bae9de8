//go:build linux

package sandbox

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// boxForTest is a sluice-box for the tests: a link to this test binary,
// whose TestMain acts as the helper when started by that name.
func boxForTest(t testing.TB) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "sluice-box")
	if err := os.Symlink(self, p); err != nil {
		t.Fatal(err)
	}
	if why := usernsWhy(); why != "" {
		t.Skip(why)
	}
	return p
}

// TestBox: a mutating run started through the helper writes its project
// (new files too, read back) but changes nothing outside it, not even a
// mode or a time (EROFS: Landlock governs neither, and without the box
// both take effect); it cannot change what later runs with the person's
// rights (a protected hook and config: their directory is read-only
// too), reads a masked secret as empty, and has an IPC namespace of its
// own.
func TestBox(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	f := newFixture(t)
	hooks := f.p("project/.git/hooks")
	for _, d := range []string{hooks} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{"outside/existing": "x", "project/.git/config": "[core]\n", "project/.env": "TOKEN=secret-token\n",
		"project/.git/hooks/pre-commit.sample": "#!/bin/sh\n", "project/existing": "x"}
	for rel, data := range files {
		if err := os.WriteFile(f.p(rel), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before, err := os.Stat(f.p("outside/existing"))
	if err != nil {
		t.Fatal(err)
	}
	s := f.spec(Mutating)
	s.Box = boxForTest(t)
	s.Protect = []string{hooks, f.p("project/.git/config")}
	s.Masked = []string{f.p("project/.env")}
	c := prepare(t, s)
	if boxed, why := c.Boxed(); !boxed {
		t.Fatalf("not boxed: %s", why)
	}
	ops := []string{
		"create:" + f.p("project/new"), "read:" + f.p("project/new"), "write:" + f.p("project/existing"),
		"chmod:" + f.p("outside/existing"), "utimes:" + f.p("outside/existing"), "chmod:" + f.p("project/existing"),
		"create:" + f.p("project/.git/hooks/pre-commit"), "write:" + f.p("project/.git/config"),
		"rename:" + f.p("project/existing") + ":" + f.p("project/.git/config"),
		"readfile:" + f.p("project/.env"), "create:" + f.p("tmp/t"), "ipcns",
	}
	got := runHelper(t, c, nil, ops...)
	want := map[string]string{
		"create:" + f.p("project/new"):                   "ok",
		"read:" + f.p("project/new"):                     "ok",
		"write:" + f.p("project/existing"):               "ok",
		"chmod:" + f.p("outside/existing"):               "err EROFS",
		"utimes:" + f.p("outside/existing"):              "err EROFS",
		"chmod:" + f.p("project/existing"):               "ok",
		"create:" + f.p("project/.git/hooks/pre-commit"): "err EROFS",
		"write:" + f.p("project/.git/config"):            "err EROFS",
		"readfile:" + f.p("project/.env"):                "ok \"\"",
		"create:" + f.p("tmp/t"):                         "ok",
	}
	for op, w := range want {
		if got[op] != w {
			t.Errorf("%s: %s, want %s", op, got[op], w)
		}
	}
	if r := got["rename:"+f.p("project/existing")+":"+f.p("project/.git/config")]; r == "ok" {
		t.Errorf("a file was renamed over the protected .git/config")
	}
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/ipc", &st); err != nil {
		t.Fatal(err)
	}
	if got["ipcns"] == "ok "+strconv.FormatUint(st.Ino, 10) {
		t.Errorf("the run shares the engine's IPC namespace (%s)", got["ipcns"])
	}
	if fi, err := os.Stat(f.p("outside/existing")); err != nil || fi.Mode() != before.Mode() || !fi.ModTime().Equal(before.ModTime()) {
		t.Errorf("outside/existing changed: %v %v %v", fi.Mode(), fi.ModTime(), err)
	}
	if _, err := os.Stat(f.p("project/.git/hooks/pre-commit")); err == nil {
		t.Error("a hook was planted")
	}
	if b, _ := os.ReadFile(f.p("project/.env")); !strings.Contains(string(b), "secret-token") {
		t.Errorf("the masked file changed: %q", b)
	}
}

// TestBoxFallsBack: without a helper (none installed beside sluice), a
// run that writes is confined as before, and Boxed says why not.
func TestBoxFallsBack(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	f := newFixture(t)
	c := prepare(t, f.spec(Mutating))
	if boxed, why := c.Boxed(); boxed || !strings.Contains(why, "sluice-box") {
		t.Errorf("Boxed() = %v, %q; want false and why", boxed, why)
	}
	got := runHelper(t, c, nil, "create:"+f.p("project/new"), "create:"+f.p("outside/new"))
	if got["create:"+f.p("project/new")] != "ok" || got["create:"+f.p("outside/new")] != "err EACCES" {
		t.Errorf("unboxed: %v", got)
	}
}

// TestBoxFallback: a boxed program that cannot start (a script without
// #!) runs through the fallback the caller named, as a failed Start would
// have had the caller do.
func TestBoxFallback(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	f := newFixture(t)
	script := f.p("project/noshebang")
	if err := os.WriteFile(script, []byte("echo ran-by-the-shell\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := f.spec(Mutating)
	s.Box = boxForTest(t)
	c := prepare(t, s)
	c.Fallback("/bin/sh", []string{"sh", "-c", script})
	cmd := osexec.Command(script)
	cmd.Dir = f.project
	out, err := startOutput(cmd, c)
	if err != nil || !strings.Contains(out, "ran-by-the-shell") {
		t.Errorf("the fallback did not run: %v\n%s", err, out)
	}
}
