//go:build unix

package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// The agents suite (make e2e-agents, scripts/e2eagents) drives the real
// agent CLIs (Claude Code, Codex, Gemini CLI, pinned versions from npm)
// against a scripted model server on 127.0.0.1, through the hooks
// 'sluice install' writes, with a real 'sluice serve' and a scripted
// Person, and checks what each CLI did with sluice's answers: no tool ran
// that neither the policy nor a person allowed, no run hung, every
// denial's reason reached the model, the audit chain verifies. It needs
// node and npm (the CLIs are installed into the cache on first use) and
// git.

// cliAgent is what differs between the CLIs.
type cliAgent struct {
	name, pkg string // the CLI's name (its program's too) and npm package
	handler   func(m *model) http.Handler
	// prepare writes the CLI's own state in the scenario's HOME: the
	// scripted provider, onboarding done.
	prepare func(e *agentEnv, baseURL string) error
	// command runs the CLI headless on prompt.
	command func(e *agentEnv, cli, prompt string) *exec.Cmd
	// writeFile is the step with which the model creates a file with
	// the CLI's own file tool.
	writeFile func(e *agentEnv, name, content string) step
	// oldHook writes the hook the way the README said before 'sluice
	// install' existed: a bare "sluice hook AGENT", the agent's default
	// trust and timeout.
	oldHook func(e *agentEnv) error
}

var cliAgents = []*cliAgent{claudeAgent, codexAgent, geminiAgent}

// errSkip is a scenario's answer for an agent it is not for.
var errSkip = errors.New("skipped")

// AgentsOptions are the agents suite's knobs.
type AgentsOptions struct {
	Agents string // the CLIs to drive, comma-separated: claude, codex, gemini
	Cache  string // where the CLIs are installed (npm --prefix)
	Run    string // a regular expression: only the scenarios (agent/name) it matches
	Keep   bool   // keep each scenario's directory (HOME, project, spool)

	Out io.Writer // the report (default stdout)
}

// AgentsDefaults are scripts/e2eagents' defaults: every CLI, every
// scenario, the CLIs cached in the user's cache directory.
func AgentsDefaults() AgentsOptions {
	cache := filepath.Join(os.TempDir(), "sluice-e2e-agents")
	if d, err := os.UserCacheDir(); err == nil {
		cache = filepath.Join(d, "sluice-e2e-agents")
	}
	return AgentsOptions{Agents: "claude,codex,gemini", Cache: cache}
}

// Quick is a smoke run: Claude Code only, the four scenarios that show
// an allow, an approval, a denial and no engine.
func (o AgentsOptions) Quick() AgentsOptions {
	o.Agents, o.Run = "claude", "/(policy allows|person approves|person denies|no engine running)$"
	return o
}

// Valid says what is wrong with the options.
func (o AgentsOptions) Valid() error {
	if _, err := regexp.Compile(o.Run); err != nil {
		return fmt.Errorf("-run: %w", err)
	}
	return nil
}

// Agents runs the scenarios of each CLI asked for, reporting each to
// o.Out; it fails when one fails or none ran. The second value is the
// directory of the scenarios, kept with o.Keep.
func Agents(o AgentsOptions) (Failures, string) {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	re, err := regexp.Compile(o.Run)
	if err != nil {
		return Failures{err.Error()}, ""
	}
	root, err := os.MkdirTemp("", "sluice-e2e-agents-")
	if err != nil {
		return Failures{err.Error()}, ""
	}
	if !o.Keep {
		defer os.RemoveAll(root)
	}
	bin, err := Programs() // built once, or $SLUICE_E2E_BIN
	if err != nil {
		return Failures{err.Error()}, root
	}
	var failed Failures
	ran, start := 0, time.Now()
	for _, a := range cliAgents {
		if !strings.Contains(","+o.Agents+",", ","+a.name+",") {
			continue
		}
		cli, err := a.installCLI(o.Cache)
		if err != nil {
			failed.Addf("install %s: %v", a.pkg, err)
			continue
		}
		fmt.Fprintf(o.Out, "== %s (%s)\n", a.name, a.pkg)
		for _, sc := range scenarios() {
			if !re.MatchString(a.name + "/" + sc.name) {
				continue
			}
			dir := filepath.Join(root, a.name, strings.ReplaceAll(sc.name, " ", "-"))
			note, took, err := runScenario(a, sc, cli, dir, bin)
			switch {
			case errors.Is(err, errSkip):
				fmt.Fprintf(o.Out, "   skip  %-28s\n", sc.name)
				continue
			case err != nil:
				failed.Addf("%s/%s: %v", a.name, sc.name, err)
				fmt.Fprintf(o.Out, "   FAIL  %-28s %6.1fs  %v\n", sc.name, took.Seconds(), err)
			default:
				fmt.Fprintf(o.Out, "   ok    %-28s %6.1fs  %s\n", sc.name, took.Seconds(), note)
			}
			ran++
		}
	}
	fmt.Fprintf(o.Out, "%d scenarios, %d failed, %s\n", ran, len(failed), time.Since(start).Round(time.Second))
	if o.Keep {
		fmt.Fprintf(o.Out, "scenario directories kept in %s\n", root)
	}
	if ran == 0 && len(failed) == 0 {
		failed.Addf("no scenario ran (-agents %q, -run %q)", o.Agents, o.Run)
	}
	return failed, root
}

// installCLI installs the pinned package into cache/NAME (once) and
// returns the path of its program.
func (a *cliAgent) installCLI(cache string) (string, error) {
	dir := filepath.Join(cache, a.name)
	cli := filepath.Join(dir, "node_modules", ".bin", a.name)
	stamp := filepath.Join(dir, ".installed")
	if b, err := os.ReadFile(stamp); err == nil && string(b) == a.pkg {
		return cli, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--prefix", dir, a.pkg)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%v\n%s", err, out)
	}
	if _, err := os.Stat(cli); err != nil {
		return "", err
	}
	return cli, os.WriteFile(stamp, []byte(a.pkg), 0o644)
}
