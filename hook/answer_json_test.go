package hook

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
)

// The answers as encoding/json writes them: what the hand-written ones
// must equal.

// claudeOutput is Claude Code's PreToolUse answer.
type claudeOutput struct {
	HookSpecificOutput struct {
		HookEventName            string          `json:"hookEventName"`
		PermissionDecision       Decision        `json:"permissionDecision"`
		PermissionDecisionReason string          `json:"permissionDecisionReason"`
		UpdatedInput             json.RawMessage `json:"updatedInput,omitempty"`
	} `json:"hookSpecificOutput"`
}

// geminiOutput is Gemini CLI's BeforeTool answer.
type geminiOutput struct {
	Decision           Decision            `json:"decision"`
	Reason             string              `json:"reason"`
	SystemMessage      string              `json:"systemMessage,omitempty"`
	HookSpecificOutput *geminiToolOverride `json:"hookSpecificOutput,omitempty"`
}

type geminiToolOverride struct {
	HookEventName string          `json:"hookEventName"`
	ToolInput     json.RawMessage `json:"tool_input"`
}

// writeHookJSON prints v as one line of JSON, HTML escaping off.
func writeHookJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// FuzzAnswerJSON: the answers written by hand are byte for byte what
// encoding/json writes for the answer types, for any reason and input
// (quotes, controls, invalid UTF-8, U+2028, '<' '&', input that is not
// JSON).
func FuzzAnswerJSON(f *testing.F) {
	f.Add("allow", "sluice: allowed by policy (read_only, risk low); runs confined: /usr/bin/sluice sandbox -- /bin/bash -c 'git status'", []byte(`{"command": "sluice sandbox -- ls", "description":"x"}`))
	f.Add("deny", "sluice: denied by \"alice\": rm -rf ~ <no> & \x1b[31m\u2028\xff", []byte(nil))
	f.Add("ask", "", []byte(`{}`))
	f.Add("ask", "nobody decided", []byte(`not json`))
	f.Add("allow", "x", []byte(``))
	f.Fuzz(func(t *testing.T, decision, reason string, input []byte) {
		a := Answer{Decision: Decision(decision), Reason: reason, Input: json.RawMessage(input)}
		if input == nil {
			a.Input = nil
		}
		var got, want bytes.Buffer

		writeClaude(&got, a)
		var co claudeOutput
		co.HookSpecificOutput.HookEventName = "PreToolUse"
		co.HookSpecificOutput.PermissionDecision = a.Decision
		co.HookSpecificOutput.PermissionDecisionReason = a.Reason
		co.HookSpecificOutput.UpdatedInput = a.Input
		writeHookJSON(&want, co)
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("claude:\n got %q\nwant %q", got.Bytes(), want.Bytes())
		}

		got.Reset()
		want.Reset()
		writeGemini(&got, a)
		g := geminiOutput{Decision: a.Decision, Reason: a.Reason}
		if a.Decision == Ask {
			g.SystemMessage = a.Reason
		}
		if a.Input != nil {
			g.HookSpecificOutput = &geminiToolOverride{HookEventName: "BeforeTool", ToolInput: a.Input}
		}
		writeHookJSON(&want, g)
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("gemini:\n got %q\nwant %q", got.Bytes(), want.Bytes())
		}

		if a.Decision == Ask {
			got.Reset()
			want.Reset()
			writeCodex(&got, a)
			writeHookJSON(&want, struct {
				SystemMessage string `json:"systemMessage"`
			}{a.Reason + "; Codex's own approval policy applies"})
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("codex:\n got %q\nwant %q", got.Bytes(), want.Bytes())
			}
		}
	})
}
