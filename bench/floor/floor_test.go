//go:build linux

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sluice-dev/sluice/exec/sandbox"
)

// TestMain lets the test binary be the helper a confined run starts:
// FLOOR_HELPER=socket tries a socket and exits 0 only if it was refused;
// FLOOR_HELPER=cgroup exits 0 only if the process is in a floor cgroup;
// FLOOR_HELPER=wrap is `floor wrap` with the arguments after "--".
func TestMain(m *testing.M) {
	switch os.Getenv("FLOOR_HELPER") {
	case "":
		os.Exit(m.Run())
	case "socket":
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err == nil {
			unix.Close(fd)
			os.Exit(1)
		}
		if !errors.Is(err, unix.EACCES) {
			fmt.Fprintln(os.Stderr, "socket:", err)
			os.Exit(2)
		}
		os.Exit(0)
	case "cgroup":
		data, _ := os.ReadFile("/proc/self/cgroup")
		if !strings.Contains(string(data), "/floor-") {
			fmt.Fprintf(os.Stderr, "not in a floor cgroup:\n%s", data)
			os.Exit(1)
		}
		os.Exit(0)
	case "wrap":
		i := len(os.Args)
		for j, a := range os.Args {
			if a == "--" {
				i = j + 1
				break
			}
		}
		code, err := wrap(os.Getenv("FLOOR_ROOT"), os.Args[i:])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(125)
		}
		os.Exit(code)
	}
}

func needLandlock(t *testing.T) {
	t.Helper()
	v, err := abi()
	if err != nil {
		t.Skip("no Landlock here:", err)
	}
	if v < 3 {
		t.Skipf("Landlock ABI %d: the floors need 3", v)
	}
}

// testBinary is this test binary's path: a program the confined runs may
// read, and the helpers (FLOOR_HELPER) they run.
func testBinary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return self
}

// confineCase is a shell line a floor runs and whether it must succeed.
type confineCase struct {
	name, line string
	ok         bool
}

// dirs makes a project, a hidden directory holding a secret, and a
// directory outside both.
func dirs(t *testing.T) (project, hidden, outside string) {
	t.Helper()
	// Resolved: the kernel grants objects, and TMPDIR may be a link.
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	project, hidden, outside = filepath.Join(root, "project"), filepath.Join(root, "hidden"), filepath.Join(root, "outside")
	for _, d := range []string{project, hidden, outside} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(hidden, "secret"), []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	return project, hidden, outside
}

// The confined floor does the job it stands for: a run writes in its own
// directory and nowhere else, reads no hidden path, opens no socket, runs
// in a cgroup of its own, and the server's other threads stay free.
func TestConfinedFloorConfines(t *testing.T) {
	needLandlock(t)
	project, hidden, outside := dirs(t)
	spec, _ := json.Marshal(sandbox.BaseSpec{Hidden: []string{hidden}})
	file := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(file, spec, 0o600); err != nil {
		t.Fatal(err)
	}
	c, describe, err := newConfined(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.cg.close)
	if !strings.Contains(describe, "rules") {
		t.Errorf("describe = %q", describe)
	}
	self := testBinary(t)
	for _, tc := range []confineCase{
		{"writes in its directory", "echo x > made && test -s made", true},
		{"reads outside the hidden path", "cat " + self + " > /dev/null", true},
		{"writes nowhere else", "echo x > " + filepath.Join(outside, "f"), false},
		{"reads no hidden path", "cat " + filepath.Join(hidden, "secret"), false},
		{"opens no socket", "FLOOR_HELPER=socket " + self, true},
		{"runs in a cgroup of its own", "FLOOR_HELPER=cgroup " + self, true},
		{"passes the status on", "exit 7", false},
	} {
		code, err := c.run(tc.line, project)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if (code == 0) != tc.ok {
			t.Errorf("%s: `%s` exited %d", tc.name, tc.line, code)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "f")); err == nil {
		t.Error("a confined run wrote outside its directory")
	}
	// The server's own threads are not confined.
	if err := os.WriteFile(filepath.Join(outside, "g"), nil, 0o600); err != nil {
		t.Errorf("the server was confined too: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(hidden, "secret")); err != nil || string(data) != "s" {
		t.Errorf("the server cannot read the hidden file: %v", err)
	}
}

// The wrapper floor writes in its root and nowhere else, and opens no
// socket.
func TestWrapperFloorConfines(t *testing.T) {
	needLandlock(t)
	project, _, outside := dirs(t)
	self := testBinary(t)
	for _, tc := range []confineCase{
		{"writes in its root", "echo x > " + filepath.Join(project, "made"), true},
		{"writes nowhere else", "echo x > " + filepath.Join(outside, "f"), false},
		{"reads everywhere", "cat " + self + " > /dev/null", true},
		{"opens no socket", "FLOOR_HELPER=socket " + self, true},
	} {
		cmd := exec.Command(self, "--", "/bin/sh", "-c", tc.line)
		cmd.Env = append(os.Environ(), "FLOOR_HELPER=wrap", "FLOOR_ROOT="+project)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) || cmd.ProcessState.ExitCode() == 125 {
			t.Fatalf("%s: %v\n%s", tc.name, err, out)
		}
		if (err == nil) != tc.ok {
			t.Errorf("%s: `%s`: %v\n%s", tc.name, tc.line, err, out)
		}
	}
}
