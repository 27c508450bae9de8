package hook

import (
	"cmp"
	"fmt"
	"io"
	"strings"

	"github.com/sluice-dev/sluice/change"
	"github.com/sluice-dev/sluice/queue"
)

// Gemini CLI's BeforeTool hook, from its hooks reference
// (https://geminicli.com/docs/hooks/reference, google-gemini/gemini-cli
// docs/hooks/reference.md and packages/core/src/hooks/types.ts): stdin
// holds session_id, transcript_path, cwd, hook_event_name ("BeforeTool"),
// timestamp, tool_name, tool_input and, for MCP tools, mcp_context; the
// hook exits 0 and prints {"decision": "allow"|"deny"|"ask", "reason":
// "…"}. deny (alias block) stops the call and sends the reason to the
// model; ask (google-gemini/gemini-cli#21146, in types.ts but not yet in
// the reference) makes Gemini CLI show its confirmation prompt even when
// it would auto-approve, with systemMessage shown to the user. Hook
// timeouts are in milliseconds (default 60000). Tool inputs
// (packages/core/src/tools/definitions/base-declarations.ts, edit.ts):
// run_shell_command {command, description, dir_path (older: directory),
// is_background}, replace {file_path, old_string, new_string,
// allow_multiple (older: expected_replacements, default 1),
// instruction}, write_file {file_path, content}.

const geminiHelp = `Gemini CLI BeforeTool hook. Gemini CLI runs it before each tool call with the
call as JSON on stdin; sluice queues the call as a decide-mode request,
waits for the console or 'sluice serve' to decide, and prints
  {"decision":"allow|deny|ask","reason":"..."}
(ask adds a "systemMessage", which Gemini CLI shows in its prompt).

Setup: in ~/.gemini/settings.json (or a project's .gemini/settings.json)
  {"hooks":{"BeforeTool":[{"matcher":".*","hooks":[{"name":"sluice","type":"command","command":"sluice hook gemini","timeout":120000}]}]}}
The timeout is in milliseconds and must be longer than --wait (110s by
default; Gemini CLI's own default is 60000). Versions where hooks are
experimental also need "tools":{"enableHooks":true} and
"hooks":{"enabled":true}.

What is queued (agent "gemini-cli", session = Gemini CLI's session_id):
  run_shell_command  exec: the command, in dir_path (or directory) if
                     given; the description is the note
  replace            edit (a diff preview), or write when it creates the
                     file; when old_string does not occur exactly as often
                     as allow_multiple / expected_replacements require,
                     Gemini CLI may correct it with the model, so there is
                     no preview: queued as tool. A replace Gemini CLI
                     would refuse outright (no such file, nothing to
                     change) is denied with its reason.
  write_file         write
  anything else      tool (read_file, glob, web_fetch, MCP tools, ...):
                     judged by the tool's name and the paths in its input

Answers: allow or deny as the policy or a person decided (the reason says
who; a command the person edited before approving comes back in
hookSpecificOutput.tool_input, which Gemini CLI runs instead); ask when
nobody decided (the fallback; --fallback deny to block):
no console or serve is running (nothing is queued then), or no decision
came within --wait (the request is then withdrawn). Gemini CLI versions
without "ask" treat it as no objection and apply their own approval mode.
Malformed input is denied. The exit status is 0 except for a usage error
of these flags (2, which Gemini CLI treats as a block).
`

var Gemini = &Agent{
	Name: "gemini", ID: "gemini-cli", Synopsis: synopsis, Help: geminiHelp, shell: "run_shell_command",
	fallback: geminiFallback, FallbackHelp: "ask in a terminal, deny in headless mode, where nobody could answer Gemini CLI's prompt",
	request: geminiRequest,
	write:   writeGemini,
}

// writeGemini writes Gemini CLI's BeforeTool answer,
// {"decision":D,"reason":R[,"systemMessage":R][,"hookSpecificOutput":
// {"hookEventName":"BeforeTool","tool_input":INPUT}]}, by hand
// (answer_json.go); tool_input replaces tool arguments (merged over the
// model's).
func writeGemini(w io.Writer, a Answer) {
	var out jsonObject
	out.str("decision", string(a.Decision))
	out.str("reason", a.Reason)
	if a.Decision == Ask && a.Reason != "" {
		out.str("systemMessage", a.Reason)
	}
	if a.Input != nil {
		var inner jsonObject
		inner.str("hookEventName", "BeforeTool")
		inner.raw("tool_input", a.Input)
		out.object("hookSpecificOutput", &inner)
	}
	out.write(w)
}

// geminiRequest maps a Gemini CLI tool call to a request.
func geminiRequest(data []byte) (*queue.Request, *Answer) {
	in, ans := parseHookInput(data, "BeforeTool")
	if ans != nil {
		return nil, ans
	}
	req := newHookRequest(in)
	switch in.ToolName {
	case "run_shell_command":
		var s struct {
			Command      string `json:"command"`
			Description  string `json:"description"`
			DirPath      string `json:"dir_path"`
			Directory    string `json:"directory"`
			IsBackground bool   `json:"is_background"`
		}
		if ans := toolArgs(in, &s); ans != nil {
			return nil, ans
		}
		if dir := cmp.Or(s.DirPath, s.Directory); dir != "" {
			req.Cwd = hookPath(in.Cwd, dir)
		}
		return execRequest(req, in, s.Command, s.Description, s.IsBackground)
	case "replace":
		return geminiReplace(req, in)
	case "write_file":
		return writeRequest(req, in)
	}
	return toolRequest(req, in, ""), nil
}

// geminiReplace previews Gemini CLI's replace (edit.ts calculateEdit):
// old_string must occur exactly expected_replacements times (default 1;
// with allow_multiple, once or more), and every occurrence is replaced.
func geminiReplace(req *queue.Request, in *hookInput) (*queue.Request, *Answer) {
	var r struct {
		FilePath             string   `json:"file_path"`
		OldString            string   `json:"old_string"`
		NewString            string   `json:"new_string"`
		ExpectedReplacements *float64 `json:"expected_replacements"`
		AllowMultiple        *bool    `json:"allow_multiple"`
		Instruction          string   `json:"instruction"`
	}
	if ans := toolArgs(in, &r); ans != nil {
		return nil, ans
	}
	if r.FilePath == "" {
		return nil, denyf("%s: no file_path", in.ToolName)
	}
	path := hookPath(in.Cwd, r.FilePath)
	content, exists, err := change.ReadPreview(path)
	if err != nil {
		return toolRequest(req, in, "no preview: "+err.Error()), nil
	}
	refuse := func(why string) (*queue.Request, *Answer) {
		return nil, denyf("Gemini CLI would refuse this replace: %s", why)
	}
	req.Path, req.Note = path, r.Instruction
	switch {
	case r.OldString == "" && !exists:
		req.Kind, req.Content = queue.KindWrite, r.NewString
		return req, nil
	case !exists:
		return refuse("File not found. Cannot apply edit. Use an empty old_string to create a new file.")
	case r.OldString == "":
		return refuse("Failed to edit. Attempted to create a file that already exists.")
	case r.OldString == r.NewString:
		return refuse("No changes to apply. The old_string and new_string are identical.")
	case strings.Contains(content, "\r\n"):
		// Gemini CLI matches against the file with CRLF read as LF.
		return toolRequest(req, in, "no preview: the file has CRLF line endings"), nil
	}
	n := strings.Count(content, r.OldString)
	want, ok := "1", n == 1
	switch {
	case r.AllowMultiple != nil:
		if *r.AllowMultiple {
			want, ok = "1 or more", n >= 1
		}
	case r.ExpectedReplacements != nil:
		want, ok = fmt.Sprint(*r.ExpectedReplacements), float64(n) == *r.ExpectedReplacements
	}
	if !ok {
		return toolRequest(req, in, fmt.Sprintf("no preview: old_string occurs %d times, not %s; Gemini CLI may correct it with the model", n, want)), nil
	}
	req.Kind, req.OldString, req.NewString, req.ReplaceAll = queue.KindEdit, r.OldString, r.NewString, n > 1
	return req, nil
}

// geminiFallback is deny unless Gemini CLI runs interactively, where its
// own prompt can be answered: headless (-p, a piped prompt, CI), its
// prompt would have nobody to ask.
func geminiFallback() Decision {
	if geminiInteractive() {
		return Ask
	}
	return Deny
}
