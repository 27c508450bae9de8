// Command e2eagents drives the real agent CLIs (Claude Code, Codex,
// Gemini CLI, pinned versions from npm) against a scripted model server
// on 127.0.0.1, through the hooks 'sluice install' writes, with a real
// 'sluice serve' and a scripted person, and checks what each CLI did with
// sluice's answers: no tool ran that neither the policy nor a person
// allowed, no run hung, every denial's reason reached the model.
//
//	go run ./scripts/e2eagents [-agents claude,codex,gemini] [-cache DIR] [-run REGEXP] [-keep]
//
// It needs node and npm (the CLIs are installed into the cache on first
// use), git and the sluice sources; 'make e2e-agents' runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/internal/e2e"
)

// agent is what differs between the CLIs.
type agent struct {
	name, pkg, bin string
	handler        func(m *model) http.Handler
	// prepare writes the CLI's own state in the scenario's HOME: the
	// scripted provider, onboarding done.
	prepare func(e *env, baseURL string) error
	// command runs the CLI headless on prompt.
	command func(e *env, cli, prompt string) *exec.Cmd
	// writeFile is the step with which the model creates a file with
	// the CLI's own file tool.
	writeFile func(e *env, name, content string) step
	// oldHook writes the hook the way the README said before 'sluice
	// install' existed: a bare "sluice hook AGENT", the agent's default
	// trust and timeout.
	oldHook func(e *env) error
}

var agents = []*agent{claudeAgent, codexAgent, geminiAgent}

func main() {
	names := flag.String("agents", "claude,codex,gemini", "the agents to drive, comma-separated")
	cache := flag.String("cache", defaultCache(), "where the CLIs are installed (npm --prefix)")
	only := flag.String("run", "", "run only the scenarios whose name matches this regular expression")
	keep := flag.Bool("keep", false, "keep each scenario's directory (HOME, project, spool) for a look after")
	flag.Parse()
	re, err := regexp.Compile(*only)
	if err != nil {
		fatalf("-run: %v", err)
	}
	root, err := os.MkdirTemp("", "sluice-e2e-agents-")
	if err != nil {
		fatalf("%v", err)
	}
	if !*keep {
		defer os.RemoveAll(root)
	}
	bin, err := e2e.Programs() // built once, or $SLUICE_E2E_BIN
	if err != nil {
		fatalf("%v", err)
	}
	defer e2e.Cleanup()
	failed, ran := 0, 0
	start := time.Now()
	for _, a := range agents {
		if !strings.Contains(","+*names+",", ","+a.name+",") {
			continue
		}
		cli, err := a.installCLI(*cache)
		if err != nil {
			fatalf("install %s: %v", a.pkg, err)
		}
		fmt.Printf("== %s (%s)\n", a.name, a.pkg)
		for _, sc := range scenarios() {
			if !re.MatchString(a.name + "/" + sc.name) {
				continue
			}
			ran++
			dir := filepath.Join(root, a.name, strings.ReplaceAll(sc.name, " ", "-"))
			note, took, err := runScenario(a, sc, cli, dir, bin)
			switch {
			case err == errSkip:
				ran--
				fmt.Printf("   skip  %-28s\n", sc.name)
			case err != nil:
				failed++
				fmt.Printf("   FAIL  %-28s %6.1fs  %v\n", sc.name, took.Seconds(), err)
			default:
				fmt.Printf("   ok    %-28s %6.1fs  %s\n", sc.name, took.Seconds(), note)
			}
		}
	}
	fmt.Printf("%d scenarios, %d failed, %s\n", ran, failed, time.Since(start).Round(time.Second))
	if *keep {
		fmt.Printf("scenario directories kept in %s\n", root)
	}
	if failed > 0 || ran == 0 {
		e2e.Cleanup()
		os.Exit(1)
	}
}

func defaultCache() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "sluice-e2e-agents")
	}
	return filepath.Join(os.TempDir(), "sluice-e2e-agents")
}

// installCLI installs the pinned package into cache/NAME (once) and
// returns the path of its program.
func (a *agent) installCLI(cache string) (string, error) {
	dir := filepath.Join(cache, a.name)
	cli := filepath.Join(dir, "node_modules", ".bin", a.bin)
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

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "e2eagents: "+format+"\n", args...)
	e2e.Cleanup()
	os.Exit(2)
}
