package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProgramMissing: without sluice-mcp beside sluice or on $PATH,
// 'sluice mcp' says where it looked and how to install the programs
// together, and exits 2; beside sluice, it is found there first.
func TestProgramMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if p, err := findBeside(filepath.Join(t.TempDir(), "sluice"), MCPProgram); err == nil {
		t.Fatalf("found %s", p)
	}
	dir := t.TempDir()
	want := filepath.Join(dir, MCPProgram)
	if err := os.WriteFile(want, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err := findBeside(filepath.Join(dir, "sluice"), MCPProgram); err != nil || p != want {
		t.Fatalf("findBeside beside sluice: %q, %v; want %q", p, err, want)
	}
	var errb bytes.Buffer
	if code := Handover(Stdio{Err: &errb}, "console", "sluice-console-not-here", nil); code != ExitUsage {
		t.Errorf("exit %d for a missing program, want %d", code, ExitUsage)
	}
	msg := errb.String()
	for _, w := range []string{"sluice console: ", "sluice-console-not-here, not found", "go install github.com/sluice-dev/sluice/cmd/...@latest", "make install"} {
		if !strings.Contains(msg, w) {
			t.Errorf("the message %q does not say %q", msg, w)
		}
	}
}
