package setup

import "fmt"

// Install plans the agent's configuration with sluice in it: its hook
// (and, with opt.MCP, sluice's MCP server), replacing any sluice hook
// already there. Applying the plan twice changes nothing the second time.
func Install(agent string, opt Options) (*Plan, error) {
	return edit(agent, opt, true)
}

// Uninstall plans the agent's configuration with sluice's hook, MCP
// server and permissions taken out, and everything else left as it is.
func Uninstall(agent string, opt Options) (*Plan, error) {
	opt.MCP = true // take out whatever Install may have written
	return edit(agent, opt, false)
}

func edit(agent string, opt Options, install bool) (*Plan, error) {
	switch agent {
	case "claude":
		return claude(opt, install)
	case "codex":
		return codex(opt, install)
	case "gemini":
		return gemini(opt, install)
	}
	return nil, fmt.Errorf("unknown agent %q (want claude, codex or gemini)", agent)
}
