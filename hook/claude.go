package hook

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/sluice-dev/sluice/change"
	"github.com/sluice-dev/sluice/queue"
)

// Claude Code's PreToolUse hook, from its hooks reference
// (https://docs.claude.com/en/docs/claude-code/hooks, "PreToolUse input"
// and "PreToolUse decision control"): stdin holds session_id,
// transcript_path, cwd, permission_mode, hook_event_name ("PreToolUse"),
// tool_name, tool_input and tool_use_id; the hook exits 0 and prints
//
//	{"hookSpecificOutput":{"hookEventName":"PreToolUse",
//	  "permissionDecision":"allow|deny|ask","permissionDecisionReason":"…"}}
//
// allow skips Claude Code's permission prompt, deny blocks the call and
// tells Claude the reason, ask shows the user Claude Code's own prompt
// with the reason. Tool inputs: Bash {command, description, timeout (ms),
// run_in_background}, Edit {file_path, old_string, new_string,
// replace_all}, MultiEdit {file_path, edits: [...]}, Write {file_path,
// content}; MCP tools are named mcp__<server>__<tool>.

const claudeHelp = `Claude Code PreToolUse hook. Claude Code runs it before each tool call with
the call as JSON on stdin; sluice queues the call as a decide-mode request,
waits for the console or 'sluice serve' to decide, and prints Claude Code's
decision:
  {"hookSpecificOutput":{"hookEventName":"PreToolUse",
    "permissionDecision":"allow|deny|ask","permissionDecisionReason":"..."}}

Setup: in ~/.claude/settings.json (or a project's .claude/settings.json)
  {"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"sluice hook claude","timeout":120}]}]}}
The timeout is in seconds and must be longer than --wait (110s by default),
so that sluice, not Claude Code, answers when nobody decides. Keep 'sluice
console' (or 'sluice serve') running on the same spool (SLUICE_SPOOL).

What is queued (agent "claude-code", session = Claude Code's session_id):
  Bash           exec: the command; the description is the note
  Edit           edit (a diff preview); write with the whole new file when
                 Claude Code's matching differs from a plain replacement
                 (curly quotes, a CRLF file, a deletion that takes the
                 line's newline with it)
  MultiEdit      write: all edits applied in order, as Claude Code applies
                 them, shown as one diff ("MultiEdit: N edits")
  Write          write
  anything else  tool (Read, Grep, WebFetch, mcp__*, ...): judged by the
                 tool's name and the paths in its input
An Edit or MultiEdit that Claude Code itself would refuse (old_string not
found, or found more than once without replace_all, ...) is denied with
Claude Code's reason, without asking anyone.

Answers:
  allow   the policy or a person allowed the call; when the person
          edited the command before approving it, with updatedInput, so
          that Claude Code runs the edited command
  deny    the policy or a person denied it; the reason says who and why
  ask     nobody decided (the fallback; --fallback deny to block instead):
          no console or serve is running (nothing is queued then), or no
          decision came within --wait (the request is then withdrawn:
          answered expired, so nobody can approve it later)
Malformed input (not JSON, no tool_name, a relative cwd, over 1 MiB) is
denied. The exit status is 0 except for a usage error of these flags (2,
which Claude Code treats as a block).
`

var Claude = &Agent{
	Name: "claude", ID: "claude-code", Synopsis: synopsis, Help: claudeHelp, shell: "Bash",
	FallbackHelp: "ask",
	request:      func(data []byte) (*queue.Request, *Answer) { return claudeRequest(data, false) },
	write:        writeClaude,
}

// writeClaude writes Claude Code's PreToolUse answer,
// {"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":D,
// "permissionDecisionReason":R[,"updatedInput":INPUT]}}, by hand
// (answer_json.go).
func writeClaude(w io.Writer, a Answer) {
	var inner, out jsonObject
	inner.str("hookEventName", "PreToolUse")
	inner.str("permissionDecision", string(a.Decision))
	inner.str("permissionDecisionReason", a.Reason)
	if len(a.Input) > 0 {
		inner.raw("updatedInput", a.Input)
	}
	out.object("hookSpecificOutput", &inner)
	out.write(w)
}

// claudeRequest maps a Claude Code (or Codex) tool call to a request.
func claudeRequest(data []byte, codex bool) (*queue.Request, *Answer) {
	in, ans := parseHookInput(data, "PreToolUse")
	if ans != nil {
		return nil, ans
	}
	req := newHookRequest(in)
	switch {
	case in.ToolName == "Bash":
		req, ans := claudeBash(req, in)
		if codex && req != nil {
			// Codex applies an "apply_patch <<'EOF' ... EOF" shell call
			// itself, as its apply_patch tool: preview it as that patch
			// (and never wrap it, which would make it a shell command).
			if patch, ok := codexShellPatch(req.Command); ok {
				note := codexPatchNote(patch)
				if err := codexPatchRequest(req, in.Cwd, patch); err == nil {
					req.Command, req.Note = "", note
					return req, nil
				}
				req.Note = strings.TrimSpace(req.Note + " (" + note + "; no diff preview)")
			}
		}
		return req, ans
	case in.ToolName == "Edit":
		var e struct {
			FilePath string `json:"file_path"`
			fileEdit
		}
		if ans := toolArgs(in, &e); ans != nil {
			return nil, ans
		}
		return claudeFileEdit(req, in, e.FilePath, []fileEdit{e.fileEdit})
	case in.ToolName == "MultiEdit":
		var e struct {
			FilePath string     `json:"file_path"`
			Edits    []fileEdit `json:"edits"`
		}
		if ans := toolArgs(in, &e); ans != nil {
			return nil, ans
		}
		if len(e.Edits) == 0 {
			return nil, denyf("MultiEdit: no edits")
		}
		return claudeFileEdit(req, in, e.FilePath, e.Edits)
	case in.ToolName == "Write":
		return writeRequest(req, in)
	case codex && in.ToolName == "apply_patch":
		var p struct {
			Command string `json:"command"`
		}
		if ans := toolArgs(in, &p); ans != nil {
			return nil, ans
		}
		note := codexPatchNote(p.Command)
		if err := codexPatchRequest(req, in.Cwd, p.Command); err != nil {
			return toolRequest(req, in, note+" (no diff preview: "+err.Error()+")"), nil
		}
		req.Note = note
		return req, nil
	}
	return toolRequest(req, in, ""), nil
}

// claudeBash maps a Bash call to an exec request.
func claudeBash(req *queue.Request, in *hookInput) (*queue.Request, *Answer) {
	var b struct {
		Command         string   `json:"command"`
		Description     string   `json:"description"`
		Timeout         *float64 `json:"timeout"` // milliseconds
		RunInBackground bool     `json:"run_in_background"`
	}
	if ans := toolArgs(in, &b); ans != nil {
		return nil, ans
	}
	if _, ans := execRequest(req, in, b.Command, b.Description, b.RunInBackground); ans != nil {
		return nil, ans
	}
	if t := b.Timeout; t != nil && *t > 0 && *t/1000 <= queue.MaxTimeout.Seconds() {
		req.TimeoutS = int(math.Ceil(*t / 1000))
	}
	return req, nil
}

// claudeFileEdit previews an Edit or MultiEdit: the change Claude Code
// will make, as an edit request when a plain replacement makes the same
// change, else as a write of the whole new file. An edit Claude Code would
// refuse is denied with its reason.
func claudeFileEdit(req *queue.Request, in *hookInput, file string, edits []fileEdit) (*queue.Request, *Answer) {
	if file == "" {
		return nil, denyf("%s: no file_path", in.ToolName)
	}
	path := hookPath(in.Cwd, file)
	content, exists, err := change.ReadPreview(path)
	if err != nil {
		return toolRequest(req, in, "no preview: "+err.Error()), nil
	}
	nw, err := claudeEdit(content, exists, edits)
	if err != nil {
		return nil, denyf("Claude Code would refuse this %s: %s", in.ToolName, err.Error())
	}
	req.Path = path
	if in.ToolName == "MultiEdit" {
		req.Kind, req.Content, req.Note = queue.KindWrite, nw, fmt.Sprintf("MultiEdit: %d edits", len(edits))
		return req, nil
	}
	e := edits[0]
	if plain, ok := plainEdit(content, e); exists && ok && plain == nw {
		req.Kind, req.OldString, req.NewString, req.ReplaceAll = queue.KindEdit, e.OldString, e.NewString, e.ReplaceAll
		return req, nil
	}
	req.Kind, req.Content = queue.KindWrite, nw
	switch {
	case !exists:
		req.Note = "Edit: creates the file"
	case e.OldString == "":
		req.Note = "Edit: fills the empty file"
	default:
		req.Note = "Edit, shown as the whole file Claude Code will write"
	}
	return req, nil
}

// plainEdit is what an edit request does to content (change.Plan): replace
// the one occurrence, or all with replace_all; false when it refuses.
func plainEdit(content string, e fileEdit) (string, bool) {
	n := strings.Count(content, e.OldString)
	switch {
	case e.OldString == "" || e.OldString == e.NewString || n == 0 || (n > 1 && !e.ReplaceAll):
		return "", false
	case e.ReplaceAll:
		return strings.ReplaceAll(content, e.OldString, e.NewString), true
	}
	return strings.Replace(content, e.OldString, e.NewString, 1), true
}
