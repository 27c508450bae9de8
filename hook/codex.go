package hook

import (
	"io"
	"strings"

	"github.com/sluice-dev/sluice/change"
	"github.com/sluice-dev/sluice/queue"
)

// Codex's PreToolUse hook (https://developers.openai.com/codex/hooks;
// openai/codex codex-rs/hooks/schema/generated/pre-tool-use.command.
// {input,output}.schema.json and codex-rs/hooks/src/events/pre_tool_use.rs)
// takes Claude Code's format: session_id, turn_id, transcript_path (may be
// null), cwd, hook_event_name "PreToolUse", model, permission_mode,
// tool_name, tool_input, tool_use_id. tool_name is Bash (tool_input
// {command}), apply_patch (the patch text in tool_input.command) or an
// MCP tool mcp__<server>__<tool>. Of the answers it honours
// permissionDecision "deny" (and exit 2) and "allow" with updatedInput; a
// plain "allow" or "ask" is logged as unsupported and the call proceeds.

const codexHelp = `Codex PreToolUse hook. Codex sends Claude Code's hook format (session_id,
cwd, hook_event_name "PreToolUse", tool_name, tool_input, tool_use_id, and
turn_id and model besides), for these tools only:
  Bash         a shell command (tool_input.command): exec
  apply_patch  a file edit (the patch in tool_input.command): tool; the
               patch text is shown without a diff preview (Codex's patch
               format is not a unified diff), and the note names the files
  mcp__*       an MCP tool (its arguments): tool
Codex runs no hook for its other tools.

Setup: in ~/.codex/hooks.json (or a [hooks] table in ~/.codex/config.toml)
  {"hooks":{"PreToolUse":[{"matcher":"Bash|apply_patch|mcp__.*","hooks":[{"type":"command","command":"sluice hook codex","timeout":120}]}]}}
The timeout is in seconds and must be longer than --wait (110s by default).

Answers: Codex's PreToolUse hook can block a call but not allow one or
ask about it: Codex logs a plain "allow" or "ask" as unsupported and runs
the call anyway. So sluice prints
  deny     permissionDecision "deny" with the reason, when the policy or
           a person denies;
  nothing  when the call is allowed: Codex's own approval policy applies,
           as without the hook (a command a person edited before
           approving comes back as "allow" with updatedInput, which Codex
           does honour);
  a systemMessage saying why, when nobody decided (the fallback ask).
Use --fallback deny to block the calls nobody decided. The exit status is
0 except for a usage error of these flags.
`

var Codex = &Agent{
	Name: "codex", ID: "codex", Synopsis: synopsis, Help: codexHelp, shell: "Bash",
	fallback: func() Decision { return Deny }, FallbackHelp: "deny, as Codex runs the tool on ask",
	request: func(data []byte) (*queue.Request, *Answer) { return claudeRequest(data, true) },
	write:   writeCodex,
}

// writeCodex answers Codex, whose PreToolUse hook honours only deny, and
// allow with an updatedInput (openai/codex
// codex-rs/hooks/src/events/pre_tool_use.rs: a plain "allow" and "ask"
// are "unsupported permissionDecision" and fail open).
func writeCodex(w io.Writer, a Answer) {
	switch {
	case a.Decision == Deny, a.Decision == Allow && a.Input != nil:
		writeClaude(w, a)
	case a.Decision == Ask:
		var out jsonObject
		out.str("systemMessage", a.Reason+"; Codex's own approval policy applies")
		out.write(w)
	}
}

// codexPatchNote names what a Codex apply_patch changes, from the
// patch's "*** Add File: p" (Update, Delete) headers.
func codexPatchNote(patch string) string {
	var parts []string
	for _, l := range strings.Split(patch, "\n") {
		for _, op := range []string{"Add", "Update", "Delete"} {
			if p, ok := strings.CutPrefix(strings.TrimSpace(l), "*** "+op+" File: "); ok {
				parts = append(parts, strings.ToLower(op)+" "+strings.TrimSpace(p))
			}
		}
		if p, ok := strings.CutPrefix(strings.TrimSpace(l), "*** Move to: "); ok {
			parts = append(parts, "move to "+strings.TrimSpace(p))
		}
	}
	if len(parts) == 0 {
		return "apply_patch"
	}
	return queue.Clip("apply_patch: "+strings.Join(parts, ", "), 300)
}

// codexShellPatch is the patch of a shell call Codex carries out as
// apply_patch: "apply_patch <<'EOF'" (or applypatch, quoted or not), the
// patch, and the closing word, with nothing else on the line.
func codexShellPatch(command string) (string, bool) {
	first, body, ok := strings.Cut(strings.TrimSpace(command), "\n")
	if !ok {
		return "", false
	}
	f := strings.Fields(first)
	if len(f) < 2 || (f[0] != "apply_patch" && f[0] != "applypatch") {
		return "", false
	}
	word := strings.TrimPrefix(strings.Join(f[1:], ""), "<<")
	word = strings.TrimPrefix(word, "-")
	word = strings.Trim(word, `'"`)
	if word == "" || strings.ContainsAny(word, " <>|;&$`") {
		return "", false
	}
	end := strings.LastIndex(body, "\n"+word)
	switch {
	case strings.TrimSpace(body) == word:
		return "", false
	case end >= 0 && strings.TrimSpace(body[end+1+len(word):]) == "":
		return body[:end], true
	case strings.HasPrefix(body, word):
		return "", false
	}
	return "", false
}

// codexPatchRequest makes an apply_patch call a patch request whose diff
// is the change the patch makes to the files as they are now
// (change.PreviewCodexPatch), so that the person sees a diff preview. It
// returns why not when the patch cannot be previewed: the caller queues
// it as a tool then.
func codexPatchRequest(req *queue.Request, cwd, patch string) error {
	diff, err := change.PreviewCodexPatch(cwd, patch)
	if err != nil {
		return err
	}
	req.Kind, req.Diff = queue.KindPatch, diff
	return nil
}
