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

import (
	"flag"

	"github.com/sluice-dev/sluice/internal/e2e"
)

func main() {
	o := e2e.AgentsDefaults()
	flag.StringVar(&o.Agents, "agents", o.Agents, "the agents to drive, comma-separated")
	flag.StringVar(&o.Cache, "cache", o.Cache, "where the CLIs are installed (npm --prefix)")
	flag.StringVar(&o.Run, "run", "", "run only the scenarios whose agent/name matches this regular expression")
	flag.BoolVar(&o.Keep, "keep", false, "keep each scenario's directory (HOME, project, spool) for a look after")
	e2e.Main("e2eagents", "a smoke run: Claude Code only, four scenarios", &o, e2e.Agents)
}
