// Command e2eagents is sluice's real-agent suite (make e2e-agents): Claude
// Code, Codex and Gemini CLI (pinned versions from npm) driven against a
// scripted model on 127.0.0.1 through the hooks 'sluice install' writes,
// with a real 'sluice serve' and a scripted person; no tool runs that
// neither the policy nor a person allowed, no run hangs, every denial
// reaches the model. It is e2e.Agents' flags; see internal/e2e/agents.go.
// It needs node and npm (the CLIs are installed into the cache on first
// use) and git.
//
//	go run ./scripts/e2eagents [-agents claude,codex,gemini] [-cache DIR] [-run REGEXP] [-keep] [-quick]
package main

import "github.com/sluice-dev/sluice/internal/e2e"

func main() {
	e2e.Main("e2eagents", "a smoke run: Claude Code only, four scenarios", e2e.AgentsDefaults(), e2e.Agents)
}
