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
// audit log) and its result cannot be written. sluice approve keeps the
// result and says once why it waits; the agent is never told "not run":
// it keeps waiting, and once there is space again it gets the run's real
// end (exit 0, its output, whose log could not be written, from the tail
// the engine kept). Meanwhile the audit log does not grow.
func TestFaultFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	dir := t.TempDir()
	fs := smallTmpfs(t, "1m")
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
	var agentOut, agentErr syncBuffer
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

	// A person approves: the command runs, its result cannot be written
	// yet; sluice approve keeps it, says why, and waits.
	var approveErr syncBuffer
	approve := sluice("approve", id)
	approve.Stderr = &approveErr
	if err := approve.Start(); err != nil {
		t.Fatal(err)
	}
	approveDone := make(chan error, 1)
	go func() { approveDone <- approve.Wait() }()
	lines := func() int {
		b, _ := os.ReadFile(auditFile)
		return bytes.Count(b, []byte("\n"))
	}
	// Three of the engine's rescans (every 2 s) while the disk stays full.
	select {
	case err := <-agentDone:
		t.Fatalf("the agent was answered while no result could be written: %v\nstdout %q\nstderr %q", err, agentOut.String(), agentErr.String())
	case err := <-approveDone:
		t.Fatalf("sluice approve ended while its result could not be written: %v\n%s", err, approveErr.String())
	case <-time.After(6500 * time.Millisecond):
	}
	if n := strings.Count(approveErr.String(), "cannot be written yet"); n != 1 {
		t.Errorf("sluice approve said the fault %d times, want once:\n%s", n, approveErr.String())
	}
	if !strings.Contains(approveErr.String(), "free space") {
		t.Errorf("sluice approve does not say what to do:\n%s", approveErr.String())
	}
	if !strings.Contains(agentErr.String(), "still waiting: the command ended; its result waits to be written: free space") {
		t.Errorf("the agent's stderr does not say why it waits: %q", agentErr.String())
	}
	if n := lines(); n > 5 {
		t.Errorf("the audit log has %d lines while the disk is full (queued, approved, started, finished and no more expected)", n)
	}

	// Space again: the result is written, the agent gets the truth: the
	// run's exit 0 and its output, from the tail the engine kept.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-approveDone:
		if err != nil {
			t.Errorf("sluice approve: %v\n%s", err, approveErr.String())
		}
	case <-ctx.Done():
		t.Fatalf("sluice approve never ended\n%s", approveErr.String())
	}
	select {
	case err := <-agentDone:
		if err != nil || !strings.Contains(agentOut.String(), "hello-from-the-run") {
			t.Errorf("the agent: %v, want the run's exit 0 and its output\nstdout %q\nstderr %q", err, agentOut.String(), agentErr.String())
		}
		if strings.Contains(agentErr.String(), "not run") {
			t.Errorf("the agent was told 'not run' of a run that ran: %q", agentErr.String())
		}
	case <-ctx.Done():
		t.Fatalf("the agent was never answered\nserve:\n%s", serveLog.String())
	}
}

// smallTmpfs mounts a tmpfs of size (a mount option: "1m") in a temporary
// directory for the test, unmounted after it; it skips the test where
// that cannot be done (not root, no mount allowed).
func smallTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	fs := t.TempDir()
	if err := syscall.Mount("tmpfs", fs, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(fs, syscall.MNT_DETACH) })
	return fs
}
