//go:build unix

package e2e

import (
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
)

// Gemini CLI, pinned; GOOGLE_GEMINI_BASE_URL points its Gemini API client
// at the scripted model, which answers POST
// /v1beta/models/M:streamGenerateContent?alt=sse with one chunk holding
// a functionCall part (or text), :generateContent alike in one JSON body,
// and :countTokens. Tool results come back as functionResponse parts in
// the conversation ("contents").
const geminiVersion = "0.61.0"

var geminiAgent = &cliAgent{
	name:    "gemini",
	pkg:     "@google/gemini-cli@" + geminiVersion,
	handler: func(m *model) http.Handler { return m.gemini() },
	prepare: func(e *agentEnv, baseURL string) error {
		e.baseURL = baseURL
		settings := `{"security":{"auth":{"selectedType":"gemini-api-key"}},"general":{"disableAutoUpdate":true,"disableUpdateNag":true},"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false}}`
		return writeSettings(filepath.Join(e.home, ".gemini", "settings.json"), settings)
	},
	command: func(e *agentEnv, cli, prompt string) *exec.Cmd {
		// --yolo: Gemini CLI asks nobody itself; only the hook stands
		// between the model and the tools.
		cmd := exec.Command(cli, "-p", prompt, "--yolo", "-m", "gemini-2.5-pro", "--output-format", "json")
		cmd.Env = e.environ("GEMINI_API_KEY=scripted", "GOOGLE_GEMINI_BASE_URL="+e.baseURL, "GEMINI_CLI_TRUST_WORKSPACE=true", "NO_COLOR=1")
		cmd.Dir = e.proj
		return cmd
	},
	oldHook: func(e *agentEnv) error {
		return writeSettings(filepath.Join(e.home, ".gemini", "settings.json"),
			`{"security":{"auth":{"selectedType":"gemini-api-key"}},"hooks":{"BeforeTool":[{"matcher":".*","hooks":[{"name":"sluice","type":"command","command":"sluice hook gemini","timeout":120000}]}]}}`)
	},
	writeFile: func(e *agentEnv, name, content string) step { return step{write: &fileBody{name, content}} },
}

// geminiRequest is the part of a generateContent request the model reads.
type geminiRequest struct {
	Contents []struct {
		Parts []map[string]any `json:"parts"`
	} `json:"contents"`
}

func (m *model) gemini() http.Handler {
	return providerAPI(m, func(p string) bool { return strings.HasSuffix(p, ":countTokens") }, `{"totalTokens": 10}`,
		func(p string) bool { return strings.Contains(p, "enerateContent") }, m.geminiAnswer)
}

// geminiAnswer answers a generateContent request (streamed or not) with
// the script's next step.
func (m *model) geminiAnswer(w http.ResponseWriter, r *http.Request, req *geminiRequest) {
	n := 0
	for ci, c := range req.Contents {
		for pi, p := range c.Parts {
			if fr, ok := p["functionResponse"].(map[string]any); ok {
				id, _ := fr["id"].(string)
				m.record(fmt.Sprintf("%d/%d/%s", ci, pi, id), textOf(fr["response"]))
				n++
			}
		}
	}
	resp := map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": []any{m.geminiPart(n)}},
			"finishReason": "STOP", "index": 0,
		}},
		"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
		"modelVersion":  "gemini-2.5-pro",
	}
	if strings.HasSuffix(r.URL.Path, ":streamGenerateContent") {
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, "", resp)
		return
	}
	writeJSON(w, resp)
}

// geminiPart is the model's part for step n.
func (m *model) geminiPart(n int) map[string]any {
	s := m.next(n)
	call := func(name string, args map[string]any) map[string]any {
		return map[string]any{"functionCall": map[string]any{"name": name, "args": args, "id": fmt.Sprintf("call_%d", n)}}
	}
	switch {
	case s == nil:
		return map[string]any{"text": finalText}
	case s.shell != "":
		return call("run_shell_command", map[string]any{"command": s.shell, "description": "e2e step"})
	case s.write != nil:
		return call("write_file", map[string]any{"file_path": s.write.path, "content": s.write.content})
	case s.mcp != nil:
		return call("mcp_sluice_"+s.mcp.tool, s.mcp.args)
	}
	return map[string]any{"text": finalText}
}
