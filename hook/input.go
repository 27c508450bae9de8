package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/sluice-dev/sluice/queue"
)

// hookInput is the part of a pre-tool hook's input that Claude Code,
// Codex and Gemini CLI share. Other fields (transcript_path,
// permission_mode, tool_use_id, turn_id, model, timestamp, mcp_context)
// are accepted and not used.
type hookInput struct {
	SessionID     string          `json:"session_id"`
	Cwd           string          `json:"cwd"`
	HookEventName string          `json:"hook_event_name"`
	ToolName      string          `json:"tool_name"`
	ToolInput     json.RawMessage `json:"tool_input"`
}

// denyf is an answer given at once: the input cannot be queued.
func denyf(format string, args ...any) *Answer {
	return &Answer{Decision: Deny, Reason: "sluice: " + fmt.Sprintf(format, args...)}
}

// parseHookInput decodes the shared fields and checks them: event (when
// the agent names one), a tool name, an absolute cwd, a tool_input object.
func parseHookInput(data []byte, event string) (*hookInput, *Answer) {
	var in hookInput
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return nil, denyf("the hook input is not a JSON object")
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, denyf("the hook input is not valid JSON: %s", hookJSONError(err))
	}
	if err := strictJSON(data, jsonFields(in)); err != nil {
		return nil, denyf("the hook input %v", err)
	}
	if in.HookEventName != "" && in.HookEventName != event {
		return nil, denyf("this hook answers %s events, not %q; check the agent's hook settings", event, in.HookEventName)
	}
	if in.ToolName == "" {
		return nil, denyf("the hook input has no tool_name")
	}
	if in.Cwd == "" {
		return nil, denyf("the hook input has no cwd")
	}
	if !filepath.IsAbs(in.Cwd) {
		return nil, denyf("the hook input's cwd %q is not an absolute path", in.Cwd)
	}
	in.Cwd = filepath.Clean(in.Cwd)
	in.ToolInput = bytes.TrimSpace(in.ToolInput)
	if len(in.ToolInput) == 0 || bytes.Equal(in.ToolInput, []byte("null")) {
		in.ToolInput = json.RawMessage("{}")
	}
	if in.ToolInput[0] != '{' {
		return nil, denyf("the hook input's tool_input is not a JSON object")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, in.ToolInput); err == nil {
		in.ToolInput = compact.Bytes()
	}
	return &in, nil
}

// hookJSONError shortens encoding/json's messages.
func hookJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %q must be %s, not %s", te.Field, te.Type, te.Value)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of input"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// toolArgs decodes a tool's input into v; the error answers the call.
func toolArgs(in *hookInput, v any) *Answer {
	if err := json.Unmarshal(in.ToolInput, v); err != nil {
		return denyf("%s: malformed tool_input: %s", in.ToolName, hookJSONError(err))
	}
	if err := strictJSON(in.ToolInput, jsonFields(v)); err != nil {
		return denyf("%s: tool_input %v", in.ToolName, err)
	}
	return nil
}

// jsonFields are the member names v's struct type decodes, as spelled in
// its json tags.
func jsonFields(v any) map[string]bool {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	m := map[string]bool{}
	if t.Kind() != reflect.Struct {
		return m
	}
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			m[name] = true
		}
	}
	return m
}

// strictJSON refuses what encoding/json would quietly read differently
// from the agent: a key twice at any depth (JavaScript keeps the last,
// others the first), and, at the top, a key that is one of fields but
// for case ("Command" beside "command": encoding/json matches it to the
// same field, the agent does not, so the command judged would not be the
// command run).
func strictJSON(data []byte, fields map[string]bool) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil { // the opening '{', checked by the caller
		return err
	}
	return strictObject(dec, fields, 1)
}

// maxHookDepth bounds nesting in a hook input.
const maxHookDepth = 64

func strictObject(dec *json.Decoder, fields map[string]bool, depth int) error {
	if depth > maxHookDepth {
		return fmt.Errorf("is nested deeper than %d levels", maxHookDepth)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if seen[key] {
			return fmt.Errorf("has the key %q twice", key)
		}
		seen[key] = true
		if fields != nil && !fields[key] {
			for f := range fields {
				if strings.EqualFold(f, key) {
					return fmt.Errorf("has %q, which is not %q: keys are case-sensitive", key, f)
				}
			}
		}
		if err := strictValue(dec, depth); err != nil {
			return err
		}
	}
	_, err := dec.Token() // the closing '}'
	return err
}

func strictValue(dec *json.Decoder, depth int) error {
	if depth > maxHookDepth {
		return fmt.Errorf("is nested deeper than %d levels", maxHookDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		return strictObject(dec, nil, depth+1)
	case json.Delim('['):
		for dec.More() {
			if err := strictValue(dec, depth+1); err != nil {
				return err
			}
		}
		_, err = dec.Token() // the closing ']'
	}
	return err
}

// newHookRequest starts the request for a tool call.
func newHookRequest(in *hookInput) *queue.Request {
	return &queue.Request{Cwd: in.Cwd, Session: in.SessionID}
}

// toolRequest makes req a tool request: any tool sluice does not
// preview, judged by its name and the paths in its input.
func toolRequest(req *queue.Request, in *hookInput, note string) *queue.Request {
	req.Kind, req.Tool, req.Input, req.Note = queue.KindTool, in.ToolName, in.ToolInput, note
	return req
}

// hookPath resolves a tool's file path against the call's cwd.
func hookPath(cwd, p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(cwd, p)
	}
	return filepath.Clean(p)
}

// synopsis is every agent's command line after 'sluice hook AGENT'.
const synopsis = "[--wait DUR] [--fallback ask|deny] [--audit FILE] < hook-input.json"

// writeRequest maps a tool call that writes a whole file (Claude Code's
// Write, Gemini CLI's write_file: file_path and content) to a write
// request.
func writeRequest(req *queue.Request, in *hookInput) (*queue.Request, *Answer) {
	var wr struct {
		FilePath string `json:"file_path"`
		Content  string `json:"content"`
	}
	if ans := toolArgs(in, &wr); ans != nil {
		return nil, ans
	}
	if wr.FilePath == "" {
		return nil, denyf("%s: no file_path", in.ToolName)
	}
	req.Kind, req.Path, req.Content = queue.KindWrite, hookPath(in.Cwd, wr.FilePath), wr.Content
	return req, nil
}

// execRequest maps an agent's shell tool call to an exec request:
// command, its description the note, marked when the agent runs it in
// the background.
func execRequest(req *queue.Request, in *hookInput, command, description string, background bool) (*queue.Request, *Answer) {
	if strings.TrimSpace(command) == "" {
		return nil, denyf("%s: no command", in.ToolName)
	}
	req.Kind, req.Command, req.Note = queue.KindExec, command, description
	if background {
		req.Note = strings.TrimSpace(req.Note + " (runs in the background)")
	}
	return req, nil
}
