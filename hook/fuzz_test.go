package hook

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzHookInput feeds hostile hook input to the Claude Code and Gemini CLI
// mappings: never a panic, and every request they build is one the spool
// would accept, or an answer is given instead.
func FuzzHookInput(f *testing.F) {
	for _, dir := range []string{"claude", "gemini", "codex"} {
		files, _ := filepath.Glob(filepath.Join("testdata", "hooks", dir, "*.json"))
		for _, p := range files {
			if data, err := os.ReadFile(p); err == nil {
				f.Add(data)
			}
		}
	}
	f.Add([]byte(`{"hook_event_name":"PreToolUse","tool_name":"Bash","cwd":"/tmp","tool_input":{"command":"\u001b[2J\u202erm -rf ~"}}`))
	f.Add([]byte(`{"hook_event_name":"PreToolUse","tool_name":"MultiEdit","cwd":"/tmp","tool_input":{"file_path":"../../etc/passwd","edits":[{"old_string":"","new_string":"x"}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, build := range []func() (bool, bool){
			func() (bool, bool) { r, a := claudeRequest(data, false); return r != nil, a != nil },
			func() (bool, bool) { r, a := claudeRequest(data, true); return r != nil, a != nil },
			func() (bool, bool) { r, a := geminiRequest(data); return r != nil, a != nil },
		} {
			gotReq, gotAns := build()
			if gotReq == gotAns {
				t.Fatalf("want exactly one of a request or an answer, got request %v answer %v", gotReq, gotAns)
			}
		}
		if req, _ := claudeRequest(data, false); req != nil {
			if _, err := json.Marshal(req); err != nil {
				t.Fatal(err)
			}
			if req.Cwd == "" || req.Cwd[0] != '/' {
				t.Fatalf("request with a non-absolute cwd %q", req.Cwd)
			}
		}
		var out bytes.Buffer
		writeClaude(&out, Answer{})
		if !json.Valid(out.Bytes()) {
			t.Fatalf("writeClaude wrote invalid JSON: %q", out.String())
		}
	})
}
