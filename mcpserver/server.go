package mcpserver

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/queue"
)

// Help describes the server.
const Help = `Serve MCP (the Model Context Protocol) on stdin and stdout, so that an
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
bounds it). A result is reported only when the audit log the console or
serve publishes (or SLUICE_AUDIT) holds its decision; otherwise the call
fails saying the result could not be verified. The request's agent is the MCP client's name (claude-code,
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

// Version is the server's version in the MCP handshake; cmd/sluice-mcp
// sets it.
var Version = "dev"

// Main is the whole sluice-mcp program: flags, the spool, the server on
// stdin and stdout until the client closes them or a signal comes. roots
// is Server.Roots (cmd/sluice-mcp passes policy.Roots). It returns the
// exit status: 0, 1 on a failure, 2 on a usage error.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, roots func(cwd string) []string) int {
	// 'sluice mcp' passes its own name first.
	if len(args) > 0 && args[0] == "mcp" {
		args = args[1:]
	}
	fs := flag.NewFlagSet("sluice mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	spool := fs.String("spool", "", "spool `DIR` (env SLUICE_SPOOL; default: the same for every process of the user, see 'sluice --help')")
	wait := fs.Duration("wait", defaultMCPWait, "withdraw a request nobody decided within `DUR` (its expires_at)")
	agent := fs.String("agent", os.Getenv("SLUICE_AGENT"), "the agent's `NAME` (env SLUICE_AGENT; default: the MCP client's name)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, "Usage: sluice mcp [--spool DIR] [--wait DUR] [--agent NAME]\n\n%s\nFlags:\n", Help)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		fmt.Fprintln(stderr, "Run 'sluice mcp --help' for usage.")
		return 2
	}
	usage := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "sluice mcp: %s\nRun 'sluice mcp --help' for usage.\n", fmt.Sprintf(format, args...))
		return 2
	}
	if fs.NArg() > 0 {
		return usage("takes no arguments")
	}
	if *wait <= 0 {
		return usage("--wait must be positive")
	}
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(stderr, "sluice mcp: %v\n", err)
		return 1
	}
	dir := *spool
	if dir == "" {
		dir = os.Getenv("SLUICE_SPOOL")
	}
	if dir == "" {
		if dir, err = queue.DefaultDir(); err != nil {
			fmt.Fprintf(stderr, "sluice mcp: %v\n", err)
			return 1
		}
	}
	sp, err := queue.Open(dir)
	if err != nil {
		fmt.Fprintf(stderr, "sluice mcp: %v\n", err)
		var pe *queue.PermError
		if errors.As(err, &pe) {
			return 2
		}
		return 1
	}
	// A request withdrawn is recorded in the log of the engine serving
	// the spool.
	rec := &audit.Lazy{Path: func() (string, error) {
		if p := os.Getenv("SLUICE_AUDIT"); p != "" {
			return p, nil
		}
		if p := sp.AuditPath(); p != "" {
			return p, nil
		}
		return audit.DefaultPath()
	}}
	defer rec.Close()
	sp.Recorder = rec
	logf := func(format string, args ...any) {
		fmt.Fprintf(stderr, "%s sluice mcp: %s\n", time.Now().Format("15:04:05"), show(fmt.Sprintf(format, args...)))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// An allow is believed when the audit log the engine publishes (or
	// SLUICE_AUDIT) holds it; not the default log: it is not the record
	// of an engine that did not say so.
	m := &Server{Spool: sp, Wait: *wait, Cwd: cwd, Agent: *agent, Session: os.Getenv("SLUICE_SESSION"),
		Logf: logf, Base: ctx, Actor: audit.Login(), Roots: roots,
		Verify: audit.Verifier{Path: os.Getenv("SLUICE_AUDIT"), Spool: sp}}
	if !sp.Serving() {
		logf("no console or serve is running on %s yet; tool calls fail until one is", sp.Dir())
	}
	logf("serving MCP on stdin/stdout for spool %s", sp.Dir())
	t := &mcp.IOTransport{Reader: readCloser(stdin), Writer: nopWriteCloser{stdout}}
	err = m.MCP(stderr).Run(ctx, t)
	if err != nil && ctx.Err() == nil {
		logf("%v", err)
		return 1
	}
	logf("stopped")
	return 0
}

// show makes agent-written text safe to print to a terminal.
func show(s string) string {
	p, _ := queue.Printable(s)
	return p
}

// Server puts MCP tool calls through the spool. It acts on nothing
// itself: a console or sluice serve decides and runs what it queues.
type Server struct {
	Spool   *queue.Spool
	Wait    time.Duration // how long a request waits for a decision
	Cwd     string        // the default cwd of a request
	Agent   string        // the agent name; "" for the client's name
	Session string        // the session; "" for one per MCP session
	Actor   string        // who the audit log names when a request is withdrawn
	// Verify checks a result that says a request was allowed or ran
	// before a tool reports it (queue.SendOptions.Verify): one it does
	// not back is a tool error saying the result could not be verified.
	Verify queue.Verifier
	// Roots is the directories a request in cwd may change, as the
	// engine's actor limits them (policy's decision; the caller passes
	// policy.Roots): write_file and edit_file are previewed within them.
	// nil limits no path here (the engine's actor still does).
	Roots func(cwd string) []string
	Logf  func(format string, args ...any)
	// Base ends when the server stops: calls in flight withdraw their
	// requests (the SDK waits for them, without cancelling them).
	Base context.Context
	// orphanGrace is how long a pending request may go without a console
	// or serve on the spool before it is withdrawn (default 5s).
	orphanGrace time.Duration
}

// MCP builds the MCP server with its three tools; the SDK logs its
// warnings to logTo.
func (m *Server) MCP(logTo io.Writer) *mcp.Server {
	if m.Session == "" {
		m.Session = "mcp-" + strings.ToLower(rand.Text()[:8])
	}
	opts := &mcp.ServerOptions{
		Instructions: "Shell commands and file changes made with these tools are shown to a person, " +
			"who approves or denies each one (some are decided by policy at once). " +
			"A call returns when it has been decided and carried out. " +
			"Say why in note: the person reads it.",
		Logger: slog.New(slog.NewTextHandler(logTo, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "sluice", Version: Version}, opts)
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

// jail is the directories a request in cwd may change (Roots).
func (m *Server) jail(cwd string) []string {
	if m.Roots == nil {
		return nil
	}
	return m.Roots(cwd)
}

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
