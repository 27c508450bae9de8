package main

import (
	"context"
	"encoding/json"
	"fmt"
	osexec "os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/sluice-dev/sluice/internal/e2e"
)

// cmdMCPCall implements "mcpcall TOOL ARGS": it starts 'sluice mcp' in
// $WORK with the script's spool, audit log and configuration, as an
// agent's MCP client would, calls TOOL with the JSON object ARGS, and
// prints the call's text to stdout, after "error: " when it is an error
// result; the server's log goes to stderr.
func cmdMCPCall(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! mcpcall")
	}
	if len(args) != 2 {
		ts.Fatalf("usage: mcpcall TOOL ARGS")
	}
	var arguments map[string]any
	if err := json.Unmarshal([]byte(args[1]), &arguments); err != nil {
		ts.Fatalf("mcpcall: ARGS: %v", err)
	}
	bin, err := osexec.LookPath("sluice")
	ts.Check(err)
	cmd := osexec.Command(bin, "mcp")
	cmd.Dir = ts.Getenv("WORK")
	for _, name := range []string{"PATH", "HOME", "TMPDIR", "GORACE", "SLUICE_SPOOL", "SLUICE_AUDIT", "SLUICE_CONFIG",
		"XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_CONFIG_HOME"} {
		cmd.Env = append(cmd.Env, name+"="+ts.Getenv(name))
	}
	var log e2e.Buffer
	cmd.Stderr = &log
	// A hang guard, not a timing: the script's actor answers at once.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "script-agent", Version: "v0.0.1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		ts.Fatalf("mcpcall: connect: %v\n%s", err, log.String())
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: args[0], Arguments: arguments})
	closeErr := cs.Close()
	fmt.Fprint(ts.Stderr(), log.String())
	if err != nil {
		ts.Fatalf("mcpcall: %s: %v", args[0], err)
	}
	ts.Check(closeErr)
	var text strings.Builder
	if res.IsError {
		text.WriteString("error: ")
	}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	fmt.Fprintln(ts.Stdout(), text.String())
}
