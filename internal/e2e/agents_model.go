//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// A scripted model: each agent's CLI talks to it as to its provider's API,
// on 127.0.0.1, and it answers with the next tool call of its script.
// Which step comes next is read from the request itself (how many tool
// results the conversation already holds), so that retries and the
// agents' side requests (titles, token counts) cannot put it out of step.

// step is one turn of the model.
type step struct {
	shell string    // run this shell command
	write *fileBody // create or replace a file
	patch string    // Codex: apply this patch (its own format)
	mcp   *mcpCall  // call one of sluice's MCP tools
}

type fileBody struct{ path, content string }

type mcpCall struct {
	tool string
	args map[string]any
}

// finalText is what the model says once its script is done.
const finalText = "All done."

// model is the state shared by every protocol: the script, and what the
// agent sent back.
type model struct {
	script []step

	mu       sync.Mutex
	results  []string // the tool results the agent sent, in order
	seen     map[string]bool
	requests int
	lastBody []byte
	dump     string // when set, each request body is written here as req-N.json
}

func newModel(script ...step) *model { return &model{script: script, seen: map[string]bool{}} }

// next is the step after n tool results, or nil: say finalText.
func (m *model) next(n int) *step {
	if n < len(m.script) {
		return &m.script[n]
	}
	return nil
}

// record keeps a tool result the first time its call id is seen.
func (m *model) record(id, text string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen[id] {
		return
	}
	m.seen[id] = true
	m.results = append(m.results, text)
}

// Results are the tool results the agent sent back.
func (m *model) Results() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.results...)
}

// serve starts handler on a free port of 127.0.0.1 and returns its base
// URL and a stop function.
func serveModel(h http.Handler) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	return "http://" + l.Addr().String(), func() { srv.Close() }, nil
}

// providerAPI is a scripted provider's HTTP handler: POST only; a path
// isCount names (nil: none) gets tokens, a token count in JSON; a path
// isChat names has its body decoded as R (400 if it is not) and is
// answered by answer; any other is not found. Every body posted is kept
// (readBody).
func providerAPI[R any](m *model, isCount func(path string) bool, tokens string, isChat func(path string) bool,
	answer func(w http.ResponseWriter, r *http.Request, req *R)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		body := m.readBody(r)
		switch {
		case isCount != nil && isCount(r.URL.Path):
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, tokens)
			return
		case !isChat(r.URL.Path):
			http.NotFound(w, r)
			return
		}
		var req R
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		answer(w, r, &req)
	})
}

// writeJSON answers with v as one JSON body.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// sse writes one server-sent event.
func sse(w io.Writer, event string, data any) {
	b, _ := json.Marshal(data)
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// readBody reads a request body and keeps it for a failing run's report.
func (m *model) readBody(r *http.Request) []byte {
	b, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	m.mu.Lock()
	m.requests++
	m.lastBody = b
	n := m.requests
	m.mu.Unlock()
	if m.dump != "" {
		_ = os.WriteFile(filepath.Join(m.dump, fmt.Sprintf("req-%d.json", n)), b, 0o600)
	}
	return b
}

// textOf flattens a tool result's content (a string, or a list of
// parts with text) into text.
func textOf(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []any:
		var parts []string
		for _, p := range v {
			parts = append(parts, textOf(p))
		}
		return strings.Join(parts, "\n")
	case map[string]any:
		for _, k := range []string{"text", "output", "content", "result", "error", "response"} {
			if x, ok := v[k]; ok {
				return textOf(x)
			}
		}
		b, _ := json.Marshal(v)
		return string(b)
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}
