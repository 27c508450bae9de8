package main

import (
	"bytes"
	"context"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluice-dev/sluice/internal/e2e"
	"github.com/sluice-dev/sluice/queue"
)

// TestMCPProcess runs 'sluice mcp' as an MCP client would (a subprocess on
// stdin/stdout, through the SDK's CommandTransport) next to a real
// 'sluice serve' process on the same spool, and calls run_command end to
// end: a command the policy allows, and one it denies. Both sluice
// processes are this test binary, which TestMain puts on $PATH as sluice.
func TestMCPProcess(t *testing.T) {
	t.Parallel()
	bin, err := osexec.LookPath("sluice")
	if err != nil || !strings.Contains(bin, "testscript-main") {
		t.Fatalf("sluice on $PATH is %q (%v), want the test binary TestMain put there", bin, err)
	}
	tmp := t.TempDir()
	proj := filepath.Join(tmp, "proj")
	if err := os.Mkdir(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	env := processEnv(tmp)
	sp, err := queue.Open(filepath.Join(tmp, "spool"))
	if err != nil {
		t.Fatal(err)
	}

	var serveLog, mcpLog e2e.Buffer
	serve := osexec.Command(bin, "serve")
	serve.Env, serve.Stderr = env, &serveLog
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	serveDone := make(chan error, 1)
	go func() { serveDone <- serve.Wait() }()
	stopServe := func() {
		_ = serve.Process.Signal(os.Interrupt)
		if err := <-serveDone; err != nil {
			t.Errorf("sluice serve: %v\n%s", err, serveLog.String())
		}
	}
	defer func() {
		if serve.ProcessState == nil {
			stopServe()
		}
	}()
	e2e.Until(t, "sluice serve is serving", sp.Serving)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := osexec.Command(bin, "mcp")
	cmd.Env, cmd.Dir, cmd.Stderr = env, proj, &mcpLog
	client := mcp.NewClient(&mcp.Implementation{Name: "process-test", Version: "v0.0.1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, mcpLog.String())
	}

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if strings.Join(names, " ") != "edit_file run_command write_file" {
		t.Errorf("tools %v", names)
	}

	call := func(command string) (*mcp.CallToolResult, string, map[string]any) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": command}})
		if err != nil {
			t.Fatalf("run_command %q: %v\n%s", command, err, mcpLog.String())
		}
		text := ""
		if len(res.Content) > 0 {
			text = res.Content[0].(*mcp.TextContent).Text
		}
		out, _ := res.StructuredContent.(map[string]any)
		return res, text, out
	}

	// Allowed by the policy: run by serve, in the server's directory.
	res, text, out := call("echo hello; pwd")
	if res.IsError || out["status"] != "done" || out["exit_code"] != float64(0) || out["decided_by"] != "policy" {
		t.Errorf("echo: isError %v, %v", res.IsError, out)
	}
	if want := "exit 0\nhello\n" + proj; text != want {
		t.Errorf("echo: text %q, want %q", text, want)
	}

	// Denied by the policy: an error result with the reason.
	res, text, out = call("sudo ls")
	if !res.IsError || out["status"] != "denied" || out["decided_by"] != "policy" {
		t.Errorf("sudo: isError %v, %v", res.IsError, out)
	}
	if reason, _ := out["reason"].(string); reason == "" || text != "denied by policy: "+reason {
		t.Errorf("sudo: text %q, reason %q", text, reason)
	}

	// Closing stdin ends the server, cleanly.
	if err := cs.Close(); err != nil {
		t.Errorf("sluice mcp: %v", err)
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("sluice mcp exited %d", code)
	}
	stopServe()

	logs := mcpLog.String()
	for _, want := range []string{"(process-test): echo hello; pwd", "(process-test): sudo ls", ": done", ": denied", "stopped"} {
		if !strings.Contains(logs, want) {
			t.Errorf("sluice mcp's stderr lacks %q:\n%s", want, logs)
		}
	}
	if !strings.Contains(serveLog.String(), "denied") {
		t.Errorf("sluice serve's log:\n%s", serveLog.String())
	}
	auditLog, err := os.ReadFile(filepath.Join(tmp, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(auditLog, []byte(`"agent":"process-test"`)); n < 4 {
		t.Errorf("%d audit lines name the agent process-test, want queued, auto_allowed, ... for both:\n%s", n, auditLog)
	}
}

// processEnv is the environment of a sluice process kept inside dir: its
// own spool, audit log, home and XDG directories (so no policy or config of
// the user's applies).
func processEnv(dir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "SLUICE_") || strings.HasPrefix(name, "XDG_") || name == "HOME" || name == "GORACE" {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"SLUICE_SPOOL="+filepath.Join(dir, "spool"),
		"SLUICE_AUDIT="+filepath.Join(dir, "audit.jsonl"),
		"HOME="+filepath.Join(dir, "home"),
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
		"XDG_STATE_HOME="+filepath.Join(dir, "state"),
		// Under -race a process otherwise sleeps a second at exit.
		"GORACE=atexit_sleep_ms=0",
	)
}
