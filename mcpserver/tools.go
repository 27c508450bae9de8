package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluice-dev/sluice/change"
	"github.com/sluice-dev/sluice/queue"
)

// runCommandIn is run_command's arguments.
type runCommandIn struct {
	Command  string `json:"command" jsonschema:"the shell command line, run with /bin/sh -c"`
	Cwd      string `json:"cwd,omitempty" jsonschema:"absolute directory to run in (default: the directory the sluice MCP server started in)"`
	TimeoutS int    `json:"timeout_s,omitempty" jsonschema:"kill the command after this many seconds (default: the console's configured timeout)"`
	Note     string `json:"note,omitempty" jsonschema:"why the command is needed, for the person who decides"`
}

// runCommandOut is run_command's structured result.
type runCommandOut struct {
	ID          string `json:"id" jsonschema:"the request's id in the spool"`
	Status      string `json:"status" jsonschema:"done (ran: see exit_code), denied, timeout, killed, expired, failed, interrupted or invalid"`
	ExitCode    *int   `json:"exit_code,omitempty" jsonschema:"the command's exit status, when it ran"`
	OutputTail  string `json:"output_tail,omitempty" jsonschema:"the end of the command's output (at most 64 KiB)"`
	OutputBytes int64  `json:"output_bytes,omitempty" jsonschema:"the size of the whole output in bytes"`
	Reason      string `json:"reason,omitempty" jsonschema:"why it was denied or did not run"`
	DecidedBy   string `json:"decided_by,omitempty" jsonschema:"policy or human"`
	Command     string `json:"command,omitempty" jsonschema:"the command that ran, when the person edited it before approving"`
	Log         string `json:"log,omitempty" jsonschema:"the file holding the whole output"`
	// ChangedFiles: what the command created, changed or deleted.
	ChangedFiles []queue.FileChange `json:"changed_files,omitempty" jsonschema:"the files the command created, changed or deleted in the project (a person can undo them)"`
}

// changeIn is the arguments write_file and edit_file share; embedded,
// its fields are theirs (in JSON and in the tools' schemas).
type changeIn struct {
	Cwd  string `json:"cwd,omitempty" jsonschema:"absolute project directory (default: the directory the sluice MCP server started in)"`
	Note string `json:"note,omitempty" jsonschema:"why the change is needed, for the person who decides"`
}

// writeFileIn is write_file's arguments.
type writeFileIn struct {
	Path    string `json:"path" jsonschema:"the file to write: absolute, or relative to cwd"`
	Content string `json:"content" jsonschema:"the file's whole new content"`
	changeIn
}

// editFileIn is edit_file's arguments.
type editFileIn struct {
	Path       string `json:"path" jsonschema:"the file to edit: absolute, or relative to cwd"`
	OldString  string `json:"old_string" jsonschema:"the exact text to replace; it must occur exactly once unless replace_all is set"`
	NewString  string `json:"new_string" jsonschema:"the text to put in its place"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"replace every occurrence of old_string"`
	changeIn
}

// fileOut is the structured result of write_file and edit_file.
type fileOut struct {
	ID        string `json:"id,omitempty" jsonschema:"the request's id in the spool (none when nothing needed changing)"`
	Status    string `json:"status" jsonschema:"done (applied), unchanged (nothing to do), denied, failed, expired, interrupted or invalid"`
	Path      string `json:"path" jsonschema:"the file, absolute"`
	Applied   bool   `json:"applied" jsonschema:"whether the change was written"`
	Diff      string `json:"diff,omitempty" jsonschema:"the unified diff applied; when not applied, the diff that was proposed"`
	Reason    string `json:"reason,omitempty" jsonschema:"why it was denied or not applied"`
	DecidedBy string `json:"decided_by,omitempty" jsonschema:"policy or human"`
}

func (m *Server) runCommand(ctx context.Context, call *mcp.CallToolRequest, in runCommandIn) (*mcp.CallToolResult, runCommandOut, error) {
	if strings.TrimSpace(in.Command) == "" {
		return nil, runCommandOut{}, errors.New("command is empty")
	}
	if in.TimeoutS < 0 || in.TimeoutS > int(queue.MaxTimeout/time.Second) {
		return nil, runCommandOut{}, fmt.Errorf("timeout_s must be between 0 (the default) and %d", int(queue.MaxTimeout/time.Second))
	}
	cwd, err := m.dir(in.Cwd)
	if err != nil {
		return nil, runCommandOut{}, err
	}
	req := m.request(call, queue.KindExec, cwd, in.Note)
	req.Command, req.TimeoutS = in.Command, in.TimeoutS
	res, err := m.submitAndAwait(ctx, req)
	if err != nil {
		return nil, runCommandOut{}, err
	}
	out := runCommandOut{ID: req.ID, Status: string(res.Status), ExitCode: res.ExitCode, OutputTail: res.OutputTail,
		OutputBytes: res.OutputBytes, Reason: res.Reason, DecidedBy: string(res.DecidedBy), Command: res.Command,
		ChangedFiles: res.ChangedFiles}
	if res.Ran() && res.Log != "" {
		out.Log = filepath.Join(m.Spool.Dir(), filepath.FromSlash(res.Log))
	}
	text, isErr := describeRun(res, out.Log)
	return textResult(text, isErr), out, nil
}

func (m *Server) writeFile(ctx context.Context, call *mcp.CallToolRequest, in writeFileIn) (*mcp.CallToolResult, fileOut, error) {
	cwd, err := m.dir(in.Cwd)
	if err != nil {
		return nil, fileOut{}, err
	}
	req := m.request(call, queue.KindWrite, cwd, in.Note)
	req.Path, req.Content = absPath(cwd, in.Path), in.Content
	return m.change(ctx, req)
}

func (m *Server) editFile(ctx context.Context, call *mcp.CallToolRequest, in editFileIn) (*mcp.CallToolResult, fileOut, error) {
	cwd, err := m.dir(in.Cwd)
	if err != nil {
		return nil, fileOut{}, err
	}
	req := m.request(call, queue.KindEdit, cwd, in.Note)
	req.Path, req.OldString, req.NewString, req.ReplaceAll = absPath(cwd, in.Path), in.OldString, in.NewString, in.ReplaceAll
	return m.change(ctx, req)
}

// change previews a write or edit request against the file as it is now,
// queues it if it applies and changes something, and waits for it.
func (m *Server) change(ctx context.Context, req *queue.Request) (*mcp.CallToolResult, fileOut, error) {
	if strings.TrimSpace(req.Path) == "" {
		return nil, fileOut{}, errors.New("path is empty")
	}
	plan, err := change.Plan(req, m.jail(req.Cwd))
	if err != nil {
		return nil, fileOut{}, fmt.Errorf("not queued: %s", strings.TrimPrefix(err.Error(), "exec: "))
	}
	out := fileOut{Status: "unchanged", Path: req.Path, Diff: plan.Diff()}
	if len(plan.Files) == 1 {
		out.Path = plan.Files[0].Path
	}
	if out.Diff == "" {
		return textResult(out.Path+" already has this content; nothing was queued", false), out, nil
	}
	res, err := m.submitAndAwait(ctx, req)
	if err != nil {
		return nil, fileOut{}, err
	}
	out.ID, out.Status, out.Reason, out.DecidedBy = req.ID, string(res.Status), res.Reason, string(res.DecidedBy)
	if res.Status == queue.StatusDone {
		// The actor logs the diff it applied: what the file became, which
		// may differ from the preview if the file changed meanwhile.
		out.Applied, out.Diff = true, res.OutputTail
	}
	text, isErr := describeChange(res, out)
	return textResult(text, isErr), out, nil
}

// request starts a request from a tool call: execute mode, this server's
// agent and session, expiring when the wait ends.
func (m *Server) request(call *mcp.CallToolRequest, kind queue.Kind, cwd, note string) *queue.Request {
	now := time.Now().UTC()
	return &queue.Request{
		Version:   queue.Version,
		ID:        queue.NewID(),
		Kind:      kind,
		Mode:      queue.ModeExecute,
		Cwd:       cwd,
		Agent:     m.agentName(call),
		Session:   m.Session,
		Note:      note,
		CreatedAt: now,
		ExpiresAt: now.Add(m.Wait),
		TTY:       new(bool), // the model reads the output: no terminal, no colour codes
	}
}

// agentName is --agent, else the client's name from the initialize
// handshake, else "mcp".
func (m *Server) agentName(call *mcp.CallToolRequest) string {
	if m.Agent != "" {
		return m.Agent
	}
	if call != nil && call.Session != nil {
		if p := call.Session.InitializeParams(); p != nil && p.ClientInfo != nil && strings.TrimSpace(p.ClientInfo.Name) != "" {
			return p.ClientInfo.Name
		}
	}
	return "mcp"
}

// dir checks a tool's cwd argument: absolute and a directory; empty is
// the server's own directory.
func (m *Server) dir(cwd string) (string, error) {
	if cwd == "" {
		return m.Cwd, nil
	}
	if !filepath.IsAbs(cwd) {
		return "", fmt.Errorf("cwd %q is not an absolute path", cwd)
	}
	fi, err := os.Stat(cwd)
	if err != nil {
		return "", fmt.Errorf("cwd: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("cwd %s is not a directory", cwd)
	}
	return filepath.Clean(cwd), nil
}

// absPath is p made absolute against cwd (the request then names the file
// the person sees unambiguously).
func absPath(cwd, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(cwd, p)
}

func textResult(text string, isErr bool) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: isErr}
}
