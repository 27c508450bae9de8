//go:build unix

package e2e

import (
	"net/http"
	"os/exec"
	"path/filepath"
)

// Codex, pinned; it runs 'codex exec' against the scripted model through
// a custom model provider in ~/.codex/config.toml.
const codexVersion = "0.169.0"

var codexAgent = &cliAgent{
	name:    "codex",
	pkg:     "@openai/codex@" + codexVersion,
	handler: func(m *model) http.Handler { return m.openai() },
	prepare: func(e *agentEnv, baseURL string) error {
		config := `model = "gpt-5.5"
model_provider = "scripted"
approval_policy = "never"

[model_providers.scripted]
name = "scripted"
base_url = "` + baseURL + `/v1"
wire_api = "responses"
env_key = "SCRIPTED_API_KEY"
request_max_retries = 0
stream_max_retries = 0
`
		return writeSettings(filepath.Join(e.home, ".codex", "config.toml"), config)
	},
	command: func(e *agentEnv, cli, prompt string) *exec.Cmd {
		cmd := exec.Command(cli, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "-C", e.proj, prompt)
		cmd.Env, cmd.Dir = e.environ("SCRIPTED_API_KEY=scripted", "NO_COLOR=1"), e.proj
		return cmd
	},
	oldHook: func(e *agentEnv) error {
		return writeSettings(filepath.Join(e.home, ".codex", "hooks.json"),
			`{"hooks":{"PreToolUse":[{"matcher":"Bash|apply_patch|mcp__.*","hooks":[{"type":"command","command":"sluice hook codex","timeout":120}]}]}}`)
	},
	writeFile: func(e *agentEnv, name, content string) step {
		return step{patch: "*** Begin Patch\n*** Add File: " + name + "\n+" + content + "\n*** End Patch"}
	},
}
