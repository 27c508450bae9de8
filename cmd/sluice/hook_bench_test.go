package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkHookClaude is what Claude Code waits for before each tool call
// the policy allows alone: a new `sluice hook claude` process reads the
// PreToolUse input for Bash `git status`, finds the serving lock held,
// queues a decide-mode request, and a real `sluice serve` process judges
// it (allow), records it in the audit log (fsynced) and answers; the hook
// prints Claude Code's allow JSON and exits. As in BenchmarkRunServe, the
// spool and audit log are on tmpfs and `sh -c true` is timed alongside as
// the floor. Reported: hook-p50-ms, hook-p99-ms, sh-p50-ms.
func BenchmarkHookClaude(b *testing.B) {
	bin, env, dir := startBenchServe(b)
	input, err := json.Marshal(map[string]any{
		"session_id": "bench", "transcript_path": filepath.Join(dir, "t.jsonl"), "cwd": dir,
		"permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
		"tool_input":  map[string]any{"command": "git status", "description": "Show working tree status"},
		"tool_use_id": "toolu_bench",
	})
	if err != nil {
		b.Fatal(err)
	}
	// The engine is up once a hook is answered allow rather than the
	// no-console fallback.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if out, _ := runHookProcess(b, env, input, bin); bytes.Contains(out, []byte(`"permissionDecision":"allow"`)) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("sluice serve did not start answering within 10s")
		}
	}
	var hooks, direct []time.Duration
	for b.Loop() {
		direct = append(direct, timeProcess(b, env, "/bin/sh", "-c", "true"))
		out, d := runHookProcess(b, env, input, bin)
		if !bytes.Contains(out, []byte(`"permissionDecision":"allow"`)) {
			b.Fatalf("sluice hook claude: %s", out)
		}
		hooks = append(hooks, d)
	}
	b.ReportMetric(ms(percentile(hooks, 50)), "hook-p50-ms")
	b.ReportMetric(ms(percentile(hooks, 99)), "hook-p99-ms")
	b.ReportMetric(ms(percentile(direct, 50)), "sh-p50-ms")
}

// runHookProcess runs `sluice hook claude` with input on stdin and
// returns its stdout and wall time; it fails the benchmark unless the
// hook exits 0.
func runHookProcess(b *testing.B, env []string, input []byte, bin string) ([]byte, time.Duration) {
	b.Helper()
	cmd := exec.Command(bin, "hook", "claude")
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	d := time.Since(start)
	if err != nil {
		b.Fatalf("sluice hook claude: %v\n%s", err, stderr.Bytes())
	}
	return out, d
}
