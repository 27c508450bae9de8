//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
)

// Claude Code, pinned; ANTHROPIC_BASE_URL points it at the scripted
// model, which answers POST /v1/messages: with "stream": true as the
// Messages API's server-sent events (message_start, a content block per
// tool_use or text with its deltas, message_delta with the stop reason,
// message_stop), else as one JSON message. Requests without tools (a
// title, a summary) get text. Tool results come back as tool_result
// blocks in the conversation ("messages").
const claudeVersion = "2.1.330"

var claudeAgent = &cliAgent{
	name:    "claude",
	pkg:     "@anthropic-ai/claude-code@" + claudeVersion,
	handler: func(m *model) http.Handler { return m.anthropic() },
	prepare: func(e *agentEnv, baseURL string) error {
		e.baseURL = baseURL
		// Onboarding done, nothing to show before the first prompt.
		state := `{"hasCompletedOnboarding":true,"bypassPermissionsModeAccepted":true,"autoUpdates":false}`
		return writeSettings(filepath.Join(e.home, ".claude.json"), state)
	},
	command: func(e *agentEnv, cli, prompt string) *exec.Cmd {
		// bypassPermissions: Claude Code asks nobody itself; only the hook
		// stands between the model and the tools.
		cmd := exec.Command(cli, "-p", prompt, "--permission-mode", "bypassPermissions", "--output-format", "json", "--model", "claude-sonnet-4-5")
		cmd.Env = e.environ("ANTHROPIC_API_KEY=sk-ant-scripted", "ANTHROPIC_BASE_URL="+e.baseURL,
			"DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
			"DISABLE_ERROR_REPORTING=1", "NO_COLOR=1", "IS_SANDBOX=1")
		cmd.Dir = e.proj
		return cmd
	},
	oldHook: func(e *agentEnv) error {
		return writeSettings(filepath.Join(e.home, ".claude", "settings.json"),
			`{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"sluice hook claude"}]}]}}`)
	},
	writeFile: func(e *agentEnv, name, content string) step {
		return step{write: &fileBody{filepath.Join(e.proj, name), content}}
	},
}

// anthropicRequest is the part of a Messages API request the model reads.
type anthropicRequest struct {
	Stream   bool              `json:"stream"`
	Model    string            `json:"model"`
	Tools    []json.RawMessage `json:"tools"`
	Messages []struct {
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

func (m *model) anthropic() http.Handler {
	return providerAPI(m, func(p string) bool { return strings.HasSuffix(p, "/count_tokens") }, `{"input_tokens": 10}`,
		func(p string) bool { return strings.HasSuffix(p, "/messages") }, m.anthropicAnswer)
}

// anthropicAnswer answers a Messages API request with the script's next
// step.
func (m *model) anthropicAnswer(w http.ResponseWriter, _ *http.Request, req *anthropicRequest) {
	n := 0
	for _, msg := range req.Messages {
		var blocks []map[string]any
		if json.Unmarshal(msg.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b["type"] == "tool_result" {
				id, _ := b["tool_use_id"].(string)
				m.record(id, textOf(b["content"]))
				n++
			}
		}
	}
	var block map[string]any
	stop := "end_turn"
	if s := m.next(n); s != nil && len(req.Tools) > 0 {
		block = m.anthropicToolUse(n, s, req.Messages != nil)
		stop = "tool_use"
	} else {
		block = map[string]any{"type": "text", "text": finalText}
	}
	msg := map[string]any{"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant", "model": req.Model,
		"stop_sequence": nil, "usage": map[string]any{"input_tokens": 10, "output_tokens": 5}}
	if !req.Stream {
		msg["content"], msg["stop_reason"] = []any{block}, stop
		writeJSON(w, msg)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	msg["content"], msg["stop_reason"] = []any{}, nil
	sse(w, "message_start", map[string]any{"type": "message_start", "message": msg})
	if block["type"] == "tool_use" {
		input, _ := json.Marshal(block["input"])
		start := map[string]any{"type": "tool_use", "id": block["id"], "name": block["name"], "input": map[string]any{}}
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": start})
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
	} else {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": block["text"]}})
	}
	sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 5}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

// anthropicToolUse is the tool_use block for step s.
func (m *model) anthropicToolUse(n int, s *step, _ bool) map[string]any {
	use := func(name string, input map[string]any) map[string]any {
		return map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%02d", n), "name": name, "input": input}
	}
	switch {
	case s.shell != "":
		return use("Bash", map[string]any{"command": s.shell, "description": "e2e step"})
	case s.write != nil:
		return use("Write", map[string]any{"file_path": s.write.path, "content": s.write.content})
	case s.mcp != nil:
		return use("mcp__sluice__"+s.mcp.tool, s.mcp.args)
	}
	return use("Bash", map[string]any{"command": "true"})
}
