package e2e

import (
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// BinEnv names a directory of programs built elsewhere (sluice,
// sluice-hub, and sluice-box where that commit has it) for the suite to
// run instead of this module's: an older commit's, to see a case fail
// there.
const BinEnv = "SLUICE_E2E_BIN"

var built struct {
	once sync.Once
	dir  string // the programs
	tmp  string // what Cleanup removes ("" with $SLUICE_E2E_BIN)
	err  error
}

// Bin is the directory of the programs the suite runs (Programs); it
// fails the test where they cannot be had.
func Bin(t testing.TB) string {
	t.Helper()
	dir, err := Programs()
	if err != nil {
		t.Fatalf("the programs: %v", err)
	}
	return dir
}

// Programs is the directory of the programs the harness runs:
// $SLUICE_E2E_BIN, else this module's ./cmd/... built on first use (once
// per process, CGO_ENABLED=0 as 'make build' builds them, into a
// temporary directory Cleanup removes).
func Programs() (string, error) {
	built.once.Do(func() {
		if dir := os.Getenv(BinEnv); dir != "" {
			built.dir, built.err = filepath.Abs(dir)
			if built.err == nil {
				if _, err := os.Stat(filepath.Join(built.dir, "sluice")); err != nil {
					built.err = fmt.Errorf("$%s: %w", BinEnv, err)
				}
			}
			return
		}
		built.tmp, built.err = os.MkdirTemp("", "sluice-e2e-bin-")
		if built.err != nil {
			return
		}
		built.dir = built.tmp
		built.err = build(built.dir)
	})
	return built.dir, built.err
}

// Cleanup removes the programs Programs built; TestMain (and each
// harness's main) calls it at its end.
func Cleanup() {
	if built.tmp != "" {
		os.RemoveAll(built.tmp)
	}
}

// build builds ./cmd/... of the module the test runs in into dir.
func build(dir string) error {
	gomod, err := osexec.Command("go", "env", "GOMOD").Output()
	mod := strings.TrimSpace(string(gomod))
	if err != nil || mod == "" || mod == os.DevNull {
		return errors.New("not inside the sluice module (go env GOMOD)")
	}
	cmd := osexec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/...")
	cmd.Dir = filepath.Dir(mod)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/...: %v\n%s", err, out)
	}
	return nil
}

// sluiceProgram is the sluice a harness runs: bin made absolute, or, when
// bin is "", the one in Programs.
func sluiceProgram(bin string) (string, error) {
	if bin != "" {
		return filepath.Abs(bin)
	}
	dir, err := Programs()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "sluice"), nil
}

// scrubbedEnv is this process's environment without what would lead a
// harness's sluice (or agent) to the caller's own spool, log, policy or
// settings: HOME, XDG_*, SLUICE_* and the variables whose names begin
// with one of prefixes.
func scrubbedEnv(prefixes ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "HOME" || slices.ContainsFunc(append([]string{"XDG_", "SLUICE_"}, prefixes...), func(p string) bool {
			return strings.HasPrefix(k, p)
		}) {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// serveArgs are 'sluice serve's arguments with --max-auto maxAuto, or
// without it for 0 (the engine's own).
func serveArgs(maxAuto int) []string {
	args := []string{"serve"}
	if maxAuto > 0 {
		args = append(args, "--max-auto", fmt.Sprint(maxAuto))
	}
	return args
}
