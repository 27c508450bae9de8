//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Codex speaks OpenAI's Responses API: POST {base}/responses with
// "stream": true and the conversation in "input"; the answer is a stream
// of events, of which Codex needs response.created, one
// response.output_item.done per output item (a message, or a
// function_call / custom_tool_call for a tool) and response.completed.
// Tool results come back as function_call_output / custom_tool_call_output
// items with the call's call_id.

// openaiRequest is the part of a Responses API request the model reads.
type openaiRequest struct {
	Input []map[string]any `json:"input"`
	Tools []map[string]any `json:"tools"`
}

func (m *model) openai() http.Handler {
	return providerAPI(m, nil, "", func(p string) bool { return strings.HasSuffix(p, "/responses") }, m.openaiAnswer)
}

// openaiAnswer answers a Responses API request, streamed, with the
// script's next step.
func (m *model) openaiAnswer(w http.ResponseWriter, _ *http.Request, req *openaiRequest) {
	n := 0
	for _, it := range req.Input {
		switch it["type"] {
		case "function_call_output", "custom_tool_call_output", "mcp_tool_call_output":
			id, _ := it["call_id"].(string)
			m.record(id, textOf(it["output"]))
			n++
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	id := fmt.Sprintf("resp_%d", n)
	sse(w, "response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": id}})
	item := m.openaiItem(n, toolNames(req.Tools))
	sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "item": item})
	sse(w, "response.completed", map[string]any{"type": "response.completed", "response": map[string]any{
		"id": id, "usage": map[string]any{"input_tokens": 10, "input_tokens_details": nil, "output_tokens": 5,
			"output_tokens_details": nil, "total_tokens": 15}}})
}

func toolNames(tools []map[string]any) map[string]bool {
	names := map[string]bool{}
	for _, t := range tools {
		if n, ok := t["name"].(string); ok {
			names[n] = true
		}
	}
	return names
}

// openaiItem is the output item for step n.
func (m *model) openaiItem(n int, tools map[string]bool) map[string]any {
	callID := fmt.Sprintf("call_%d", n)
	s := m.next(n)
	fn := func(name string, args any) map[string]any {
		b, _ := json.Marshal(args)
		return map[string]any{"type": "function_call", "id": "fc_" + callID, "call_id": callID, "name": name, "arguments": string(b)}
	}
	switch {
	case s == nil:
		return map[string]any{"type": "message", "role": "assistant", "id": "msg_done",
			"content": []any{map[string]any{"type": "output_text", "text": finalText, "annotations": []any{}}}}
	case s.shell != "":
		if tools["exec_command"] {
			return fn("exec_command", map[string]any{"cmd": s.shell, "login": false})
		}
		return fn("shell", map[string]any{"command": []string{"bash", "-c", s.shell}})
	case s.patch != "":
		if tools["apply_patch"] {
			return map[string]any{"type": "custom_tool_call", "id": "ctc_" + callID, "call_id": callID, "name": "apply_patch", "input": s.patch}
		}
		return fn("exec_command", map[string]any{"cmd": "apply_patch <<'EOF'\n" + s.patch + "\nEOF\n", "login": false})
	case s.mcp != nil:
		// Codex offers MCP tools in a namespace per server.
		call := fn(s.mcp.tool, s.mcp.args)
		call["namespace"] = "mcp__sluice"
		return call
	}
	return fn("exec_command", map[string]any{"cmd": "true"})
}
