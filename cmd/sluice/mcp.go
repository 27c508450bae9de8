//go:build mcp

package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluice-dev/sluice/policy"
	"github.com/sluice-dev/sluice/queue"
)

const mcpHelp = `Serve MCP (the Model Context Protocol) on stdin and stdout, so that an
agent's shell commands and file changes go through the console. Each tool
call becomes a request in the spool (execute mode); the policy or a person
decides; the outcome is the tool's result.

Tools:
  run_command  run a shell command line; returns exit_code, status and the
               tail of its output (a denial is an error result with the reason)
  write_file   write a whole file; returns the diff that was applied
  edit_file    replace old_string (unique unless replace_all) in a file;
               returns the diff that was applied

write_file and edit_file are previewed against the file as it is now before
they are queued; a change that cannot apply (old_string missing or not
unique, a path outside the project) fails at once and queues nothing.

A console ('sluice console') or 'sluice serve' must be running on the same
spool: without one a call fails at once rather than wait for nobody, and a
request still pending when the last one stops is withdrawn. A request nobody
decides within --wait is withdrawn and the call fails; so is one whose call
the client cancels. Once approved, a command runs to its end (its timeout
bounds it). The request's agent is the MCP client's name (claude-code,
codex, ...) unless --agent or SLUICE_AGENT says otherwise.

stdout carries only the protocol; logs go to stderr.

Setup (add --spool DIR, or SLUICE_SPOOL in the client's env, when the console
uses another spool than the default):
  Claude Code   claude mcp add sluice -- sluice mcp
  Codex         in ~/.codex/config.toml:
                  [mcp_servers.sluice]
                  command = "sluice"
                  args = ["mcp"]
  Gemini CLI    in ~/.gemini/settings.json:
                  "mcpServers": {"sluice": {"command": "sluice", "args": ["mcp"]}}
`

// defaultMCPWait is how long a tool call waits for a decision: the
// request's expires_at, as for 'sluice run'.
const defaultMCPWait = 10 * time.Minute

func cmdMCP(args []string, std stdio, g *globals) int {
	fs := newFlags("mcp", "[--wait DUR] [--agent NAME]", mcpHelp, std, g)
	wait := fs.Duration("wait", defaultMCPWait, "withdraw a request nobody decided within `DUR` (its expires_at)")
	agent := fs.String("agent", os.Getenv("SLUICE_AGENT"), "the agent's `NAME` (env SLUICE_AGENT; default: the MCP client's name)")
	pos, code, ok := fs.parse(args, true)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageErr(std, "mcp", "takes no arguments")
	}
	if *wait <= 0 {
		return usageErr(std, "mcp", "--wait must be positive")
	}
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(std.err, "sluice mcp: %v\n", err)
		return exitFail
	}
	sp, err := g.openSpool()
	if err != nil {
		return spoolErr(std, "mcp", err)
	}
	if la, ok := sp.Recorder.(*lazyAudit); ok {
		defer la.Close()
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(std.err, "%s sluice mcp: %s\n", time.Now().Format("15:04:05"), show(fmt.Sprintf(format, args...)))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	m := &mcpServer{sp: sp, wait: *wait, cwd: cwd, agent: *agent, session: os.Getenv("SLUICE_SESSION"),
		logf: logf, base: ctx}
	if !sp.Serving() {
		logf("no console or serve is running on %s yet; tool calls fail until one is", sp.Dir())
	}
	logf("serving MCP on stdin/stdout for spool %s", sp.Dir())
	t := &mcp.IOTransport{Reader: readCloser(std.in), Writer: nopWriteCloser{std.out}}
	err = m.server(std.err).Run(ctx, t)
	if err != nil && ctx.Err() == nil {
		logf("%v", err)
		return exitFail
	}
	logf("stopped")
	return exitOK
}

// mcpServer puts MCP tool calls through the spool. It acts on nothing
// itself: a console or sluice serve decides and runs what it queues.
type mcpServer struct {
	sp      *queue.Spool
	wait    time.Duration // how long a request waits for a decision
	cwd     string        // the default cwd of a request
	agent   string        // the agent name; "" for the client's name
	session string        // the session; "" for one per MCP session
	logf    func(format string, args ...any)
	// base ends when the server stops: calls in flight withdraw their
	// requests (the SDK waits for them, without cancelling them).
	base context.Context
	// orphanGrace is how long a pending request may go without a console
	// or serve on the spool before it is withdrawn (default 5s); checkEvery
	// is how often that is looked at (default mcpCheck).
	orphanGrace, checkEvery time.Duration
}

// server builds the MCP server with its three tools; the SDK logs its
// warnings to logTo.
func (m *mcpServer) server(logTo io.Writer) *mcp.Server {
	if m.session == "" {
		m.session = "mcp-" + strings.ToLower(rand.Text()[:8])
	}
	opts := &mcp.ServerOptions{
		Instructions: "Shell commands and file changes made with these tools are shown to a person, " +
			"who approves or denies each one (some are decided by policy at once). " +
			"A call returns when it has been decided and carried out. " +
			"Say why in note: the person reads it.",
		Logger: slog.New(slog.NewTextHandler(logTo, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "sluice", Version: versionString()}, opts)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "run_command",
		Title:       "Run a shell command (after approval)",
		Description: "Run a shell command line with /bin/sh -c once the policy or a person approves it. Returns the exit code and the tail of the output. A denied command is an error result with the reason; do not retry it unchanged.",
	}, m.runCommand)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "write_file",
		Title:       "Write a file (after approval)",
		Description: "Create or replace a whole file once the policy or a person approves it. Returns the diff that was applied.",
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, OpenWorldHint: new(false)},
	}, m.writeFile)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "edit_file",
		Title:       "Edit a file (after approval)",
		Description: "Replace old_string with new_string in a file once the policy or a person approves it. old_string must occur exactly once unless replace_all is set. Returns the diff that was applied.",
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: new(false)},
	}, m.editFile)
	return s
}

// jail is the directories a request in cwd may change, as the engine's
// actor limits them.
func (m *mcpServer) jail(cwd string) []string { return policy.Roots(cwd) }

// readCloser makes r an io.ReadCloser for the transport; closing a reader
// that is not one does nothing.
func readCloser(r io.Reader) io.ReadCloser {
	if rc, ok := r.(io.ReadCloser); ok {
		return rc
	}
	return io.NopCloser(r)
}

// nopWriteCloser keeps the transport from closing stdout.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
