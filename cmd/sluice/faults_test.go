//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFaultFullDisk: the spool's file system fills while a request waits;
// a person approves it; the command runs (its start and end are in the
// audit log) and its result cannot be written. The agent is never told
// "not run": it keeps waiting, and once there is space again it gets the
// run's real end (exit 0, its output). Meanwhile the audit log does not
// grow with the same event over and over, and serve says what is wrong
// once.
func TestFaultFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	dir := t.TempDir()
	fs := filepath.Join(dir, "fs")
	if err := os.Mkdir(fs, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", fs, "tmpfs", 0, "size=1m,mode=0700"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(fs, syscall.MNT_DETACH) })
	proj := filepath.Join(dir, "proj")
	if err := os.Mkdir(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(dir, "policy.toml")
	if err := os.WriteFile(policy, []byte("[[rule]]\naction = \"ask\"\ncommand = \"echo *\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	auditFile := filepath.Join(dir, "audit.jsonl")
	env := append(os.Environ(), "SLUICE_SPOOL="+filepath.Join(fs, "spool"), "SLUICE_AUDIT="+auditFile,
		"SLUICE_POLICY="+policy, "XDG_STATE_HOME="+filepath.Join(dir, "state"),
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
	defer cancel()
	sluice := func(args ...string) *osexec.Cmd {
		c := osexec.CommandContext(ctx, "sluice", args...)
		c.Env, c.Dir = env, proj
		return c
	}

	var serveLog syncBuffer
	serve := sluice("serve")
	serve.Stderr = &serveLog
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = serve.Process.Signal(os.Interrupt)
		_ = serve.Wait()
	}()
	var agentOut, agentErr bytes.Buffer
	agent := sluice("run", "--", "echo", "hello-from-the-run")
	agent.Stdout, agent.Stderr = &agentOut, &agentErr
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	agentDone := make(chan error, 1)
	go func() { agentDone <- agent.Wait() }()

	id := ""
	for id == "" {
		entries, _ := os.ReadDir(filepath.Join(fs, "spool", "new"))
		for _, e := range entries {
			if name, ok := strings.CutSuffix(e.Name(), ".json"); ok && !strings.HasPrefix(name, ".") {
				id = name
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal("the request never reached the spool")
		case <-time.After(20 * time.Millisecond):
		}
	}
	// The disk fills while the request waits.
	filler := filepath.Join(fs, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	block := make([]byte, 4096)
	for {
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	f.Close()

	// A person approves: the command runs, its result cannot be written.
	out, err := sluice("approve", id).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no space left") {
		t.Fatalf("sluice approve on a full disk: %v\n%s", err, out)
	}
	lines := func() int {
		b, _ := os.ReadFile(auditFile)
		return bytes.Count(b, []byte("\n"))
	}
	ran := lines()
	// Three of the engine's rescans (every 2 s) while the disk stays full.
	select {
	case err := <-agentDone:
		t.Fatalf("the agent was answered while no result could be written: %v\nstdout %q\nstderr %q", err, agentOut.String(), agentErr.String())
	case <-time.After(6500 * time.Millisecond):
	}
	if n := lines(); n > ran+5 {
		t.Errorf("the audit log grew by %d lines while the disk was full", n-ran)
	}
	if n := strings.Count(serveLog.String(), "cannot be written"); n != 1 {
		t.Errorf("serve said the fault %d times, want once:\n%s", n, serveLog.String())
	}

	// Space again: the agent gets the truth, the run's own exit status.
	// (Its output, written while the disk was full, may be lost.)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-agentDone:
		if err != nil {
			t.Errorf("the agent: %v, want the run's exit 0\nstdout %q\nstderr %q", err, agentOut.String(), agentErr.String())
		}
		if strings.Contains(agentErr.String(), "not run") {
			t.Errorf("the agent was told 'not run' of a run that ran: %q", agentErr.String())
		}
	case <-ctx.Done():
		t.Fatalf("the agent was never answered\nserve:\n%s", serveLog.String())
	}
}
