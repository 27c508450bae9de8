//go:build unix

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// scenario is one run of an agent: what the model asks for, who is
// there to decide, and what must (not) have happened.
type scenario struct {
	name    string
	serve   bool                                  // run 'sluice serve' (the policy)
	person  func(*queue.Request) choice           // a person deciding what serve leaves; nil: nobody
	install []string                              // extra 'sluice install' flags
	script  func(a *cliAgent, e *agentEnv) []step // the model's tool calls
	check   func(e *agentEnv, m *model) error     // what must hold after the run
	limit   time.Duration                         // the run must end within (default 90s)
	only    string                                // run for this agent only
	path    string                                // the agent's PATH, when set
	old     bool                                  // the old hand-written hook instead of 'sluice install'
	// setup, when set, runs after 'sluice install' (or, with noInstall,
	// instead of it): a person's own change to the agent's settings.
	setup     func(e *agentEnv, cli string) error
	noInstall bool
	// mayHang: a run that outlives limit is killed and recorded
	// (e.hung), not a failure; check then says what that means.
	mayHang bool
}

// Markers: files a command leaves in the project when it ran.
const (
	markDenied   = "denied-by-policy"
	markApproved = "approved-by-person"
	markRefused  = "denied-by-person"
	markBefore   = "edit-before"
	markAfter    = "edit-after"
	markNoEngine = "no-engine"
	markNobody   = "nobody-decided"
	markMCP      = "via-mcp"
	markUnasked  = "ran-unasked"
)

func approve(*queue.Request) choice { return choice{approve: true} }

func scenarios() []scenario {
	return []scenario{
		{name: "policy allows", serve: true,
			script: func(a *cliAgent, e *agentEnv) []step { return []step{{shell: "echo sluice-e2e-allowed-$((6*7))"}} },
			check: func(e *agentEnv, m *model) error {
				return resultHas(m, "sluice-e2e-allowed-42")
			}},
		{name: "policy denies", serve: true,
			script: func(a *cliAgent, e *agentEnv) []step {
				return []step{{shell: "touch " + markDenied + " && sudo -n true"}}
			},
			check: func(e *agentEnv, m *model) error {
				return all(absent(e, markDenied), resultHas(m, "denied by policy"))
			}},
		{name: "person approves", serve: true, person: approve,
			script: touch(markApproved),
			check: func(e *agentEnv, m *model) error {
				return all(present(e, markApproved), sawOne(e))
			}},
		{name: "person denies", serve: true,
			person: func(*queue.Request) choice { return choice{reason: "e2e: not this one"} },
			script: touch(markRefused),
			check: func(e *agentEnv, m *model) error {
				return all(absent(e, markRefused), resultHas(m, "e2e: not this one"))
			}},
		{name: "person edits", serve: true,
			person: func(r *queue.Request) choice {
				return choice{approve: true, edit: strings.ReplaceAll(r.Command, markBefore, markAfter)}
			},
			script: touch(markBefore),
			check: func(e *agentEnv, m *model) error {
				return all(absent(e, markBefore), present(e, markAfter))
			}},
		{name: "write with diff", serve: true, person: approve,
			script: func(a *cliAgent, e *agentEnv) []step {
				return []step{a.writeFile(e, "written.txt", "hello from the agent")}
			},
			check: func(e *agentEnv, m *model) error {
				if err := present(e, "written.txt"); err != nil {
					return err
				}
				for _, r := range e.seenRequests() {
					if r.Kind == queue.KindWrite || r.Kind == queue.KindPatch || r.Kind == queue.KindEdit {
						if strings.Contains(r.Content+r.Diff+r.NewString, "hello from the agent") {
							return nil
						}
					}
				}
				return fmt.Errorf("the person was not shown the change as a file request with its content: %s", kinds(e))
			}},
		{name: "shell apply_patch", serve: true, person: approve, only: "codex",
			script: func(a *cliAgent, e *agentEnv) []step {
				return []step{{shell: "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: shell-patched.txt\n+via the shell\n*** End Patch\nEOF\n"}}
			},
			check: func(e *agentEnv, m *model) error {
				if err := present(e, "shell-patched.txt"); err != nil {
					return err
				}
				for _, r := range e.seenRequests() {
					if r.Kind == queue.KindPatch && strings.Contains(r.Diff, "+via the shell") {
						return nil
					}
				}
				return fmt.Errorf("the person was not shown the patch: %s", kinds(e))
			}},
		{name: "write denied", serve: true,
			person: func(*queue.Request) choice { return choice{reason: "e2e: no new files"} },
			script: func(a *cliAgent, e *agentEnv) []step {
				return []step{a.writeFile(e, "refused.txt", "should not exist")}
			},
			check: func(e *agentEnv, m *model) error {
				return all(absent(e, "refused.txt"), resultHas(m, "e2e: no new files"))
			}},
		{name: "mcp run_command", serve: true, person: approve, install: []string{"--mcp"},
			script: func(a *cliAgent, e *agentEnv) []step {
				return []step{{mcp: &mcpCall{tool: "run_command", args: map[string]any{"command": "touch " + markMCP, "note": "e2e"}}}}
			},
			check: func(e *agentEnv, m *model) error {
				return all(present(e, markMCP), sawOne(e))
			}},
		{name: "sluice not on PATH", serve: true, person: approve, path: "/usr/local/bin:/usr/bin:/bin",
			script: touch(markApproved),
			check: func(e *agentEnv, m *model) error {
				return all(present(e, markApproved), sawOne(e))
			}},
		// The control: the hook as the README gave it before 'sluice
		// install', with sluice not on the agent's PATH. What the agent
		// does is recorded (a tool it runs here ran unasked); sluice
		// doctor must name the problem and exit 1.
		{name: "control: old hook", serve: true, old: true, path: "/usr/local/bin:/usr/bin:/bin",
			script: touch(markUnasked),
			check: func(e *agentEnv, m *model) error {
				if err := doctorFails(e, "the old hook", "FAIL-OPEN"); err != nil {
					return err
				}
				if e.exists(markUnasked) {
					e.note = "the agent ran the tool unasked (doctor: FAIL-OPEN)"
				} else {
					e.note = "the agent did not run the tool (doctor: FAIL-OPEN all the same)"
				}
				return nil
			}},
		// What issue 29 found: a person's setting that turns every hook
		// off, an MCP server added the old way and no hook, a fallback
		// that hangs a headless agent. Each run records what the agent
		// did; sluice doctor must catch each and exit 1, and for the
		// first, install must take the setting out (--yes) and doctor
		// be clean after.
		{name: "control: disableAllHooks", serve: true, only: "claude", install: []string{"--wait", "5s"},
			setup: func(e *agentEnv, cli string) error {
				return editFile(filepath.Join(e.home, ".claude", "settings.json"), func(s string) string {
					return strings.Replace(s, "{", "{\n  \"disableAllHooks\": true,", 1)
				})
			},
			script: touch(markUnasked),
			check: func(e *agentEnv, m *model) error {
				if err := doctorFails(e, "disableAllHooks", `settings.json sets "disableAllHooks": true: Claude Code runs no hook`); err != nil {
					return err
				}
				if _, err := e.sluice("--spool", e.spool, "install", "claude", "--yes"); err != nil {
					return err
				}
				if out, err := e.sluice("doctor"); err != nil || strings.Contains(out, "FAIL-OPEN") {
					return fmt.Errorf("after 'sluice install claude --yes' doctor still fails: %v\n%s", err, out)
				}
				e.note = ranUnasked(e, "doctor: FAIL-OPEN; install --yes took it out, then doctor clean")
				return nil
			}},
		{name: "control: claude mcp add", serve: true, only: "claude", noInstall: true,
			setup: func(e *agentEnv, cli string) error {
				// The old way: sluice's MCP server added with the real
				// 'claude mcp add' (local scope: ~/.claude.json,
				// projects.<dir>.mcpServers), and no hook.
				cmd := exec.Command(cli, "mcp", "add", "sluice", "--", filepath.Join(e.bin, "sluice"), "--spool", e.spool, "mcp")
				cmd.Env, cmd.Dir = e.environ("DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"), e.proj
				if out, err := cmd.CombinedOutput(); err != nil {
					return fmt.Errorf("claude mcp add: %v: %s", err, out)
				}
				data, err := os.ReadFile(filepath.Join(e.home, ".claude.json"))
				if err != nil || !strings.Contains(string(data), `"mcpServers"`) {
					return fmt.Errorf("claude mcp add wrote no MCP server in ~/.claude.json: %v\n%s", err, data)
				}
				return nil
			},
			script: touch(markUnasked),
			check: func(e *agentEnv, m *model) error {
				if err := doctorFails(e, "the MCP server without a hook", "registers sluice's MCP server for the project "); err != nil {
					return err
				}
				e.note = ranUnasked(e, "doctor: FAIL-OPEN")
				return nil
			}},
		{name: "control: fallback ask", only: "gemini", limit: 30 * time.Second, mayHang: true,
			setup: func(e *agentEnv, cli string) error {
				return editFile(filepath.Join(e.home, ".gemini", "settings.json"), func(s string) string {
					return strings.Replace(s, " hook gemini --wait ", " hook gemini --fallback ask --wait ", 1)
				})
			},
			script: touch(markUnasked),
			check: func(e *agentEnv, m *model) error {
				if err := doctorFails(e, "the --fallback ask hook", "gemini: HANGS: ", "hangs until it is killed"); err != nil {
					return err
				}
				switch {
				case e.hung:
					e.note = "gemini -p hung until killed (doctor: HANGS, exit 1)"
				default:
					e.note = ranUnasked(e, "gemini -p did not hang this time (doctor: HANGS, exit 1 all the same)")
				}
				return nil
			}},
		{name: "no engine running",
			script: touch(markNoEngine),
			check: func(e *agentEnv, m *model) error {
				return all(absent(e, markNoEngine), resultHas(m, "no sluice console"))
			}},
		{name: "short wait, nobody decides", serve: true, install: []string{"--wait", "3s"},
			script: touch(markNobody),
			check: func(e *agentEnv, m *model) error {
				return all(absent(e, markNobody), resultHas(m, "no decision within"))
			}},
		{name: "approved, still confined", serve: true, person: approve,
			script: func(a *cliAgent, e *agentEnv) []step { return []step{{shell: "touch ../outside-the-project"}} },
			check: func(e *agentEnv, m *model) error {
				if _, err := os.Stat(filepath.Join(e.root, "outside-the-project")); err == nil {
					return fmt.Errorf("an approved mutating command wrote outside the project: not confined")
				}
				// Landlock's refusal, or the box's read-only view (where
				// sluice-box is installed beside sluice).
				if resultHas(m, "Read-only file system") == nil {
					return nil
				}
				return resultHas(m, "Permission denied")
			}},
	}
}

// ranUnasked is the note of a control scenario: whether the agent ran
// the tool nobody was asked about, and what sluice said.
// touch is a script of one step: the model asks to run touch MARK.
func touch(mark string) func(*cliAgent, *agentEnv) []step {
	return func(*cliAgent, *agentEnv) []step { return []step{{shell: "touch " + mark}} }
}

// doctorFails checks that 'sluice doctor' fails, saying each of says
// about what.
func doctorFails(e *agentEnv, what string, says ...string) error {
	out, err := e.sluice("doctor")
	if err == nil {
		return fmt.Errorf("sluice doctor did not fail on %s:\n%s", what, out)
	}
	for _, s := range says {
		if !strings.Contains(out, s) {
			return fmt.Errorf("sluice doctor did not report %s (%q): %v\n%s", what, s, err, out)
		}
	}
	return nil
}

func ranUnasked(e *agentEnv, said string) string {
	if e.exists(markUnasked) {
		return "the agent ran the tool unasked (" + said + ")"
	}
	return "the agent did not run the tool (" + said + ")"
}

// editFile rewrites a file with f.
func editFile(path string, f func(string) string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out := f(string(data))
	if out == string(data) {
		return fmt.Errorf("%s: the edit changed nothing", path)
	}
	return os.WriteFile(path, []byte(out), 0o600)
}

func all(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func present(e *agentEnv, name string) error {
	if !e.exists(name) {
		return fmt.Errorf("%s was not made: the allowed call did not run", name)
	}
	return nil
}

func absent(e *agentEnv, name string) error {
	if e.exists(name) {
		return fmt.Errorf("%s exists: a call ran that nobody allowed", name)
	}
	return nil
}

// resultHas checks that a tool result the model got back holds text.
func resultHas(m *model, text string) error {
	for _, r := range m.Results() {
		if strings.Contains(r, text) {
			return nil
		}
	}
	return fmt.Errorf("no tool result told the model %q; it got %q", text, m.Results())
}

// sawOne checks that the person was asked exactly once.
func sawOne(e *agentEnv) error {
	if n := len(e.seenRequests()); n != 1 {
		return fmt.Errorf("the person was asked %d times, want once: %s", n, kinds(e))
	}
	return nil
}

func kinds(e *agentEnv) string {
	var k []string
	for _, r := range e.seenRequests() {
		k = append(k, fmt.Sprintf("%s %s", r.Kind, r.Summary()))
	}
	return fmt.Sprintf("%q", k)
}

// runScenario runs one scenario for one agent in dir.
func runScenario(a *cliAgent, sc scenario, cli, dir, bin string) (string, time.Duration, error) {
	if sc.only != "" && sc.only != a.name {
		return "", 0, errSkip
	}
	e, err := newEnv(dir, bin)
	if err != nil {
		return "", 0, err
	}
	defer e.close()
	m := newModel(sc.script(a, e)...)
	m.dump = e.root
	base, stop, err := serveModel(a.handler(m))
	if err != nil {
		return "", 0, err
	}
	e.stop = append(e.stop, stop)
	if err := a.prepare(e, base); err != nil {
		return "", 0, fmt.Errorf("prepare: %w", err)
	}
	switch {
	case sc.old:
		if err := a.oldHook(e); err != nil {
			return "", 0, err
		}
	case sc.noInstall:
	default:
		if err := e.install(a.name, sc.install...); err != nil {
			return "", 0, err
		}
	}
	if sc.setup != nil {
		if err := sc.setup(e, cli); err != nil {
			return "", 0, fmt.Errorf("setup: %w", err)
		}
	}
	if sc.serve {
		if err := e.serve(); err != nil {
			return "", 0, err
		}
	}
	if sc.person != nil {
		if err := e.startPerson(sc.person); err != nil {
			return "", 0, err
		}
	}
	limit := sc.limit
	if limit == 0 {
		limit = 90 * time.Second
	}
	cmd := a.command(e, cli, "Do what the task needs.")
	if sc.path != "" {
		if _, err := os.Stat(filepath.Join(strings.Split(sc.path, ":")[0], "sluice")); err == nil {
			return "", 0, fmt.Errorf("%s holds a sluice: the scenario needs a PATH without one", sc.path)
		}
		for i, kv := range cmd.Env {
			if strings.HasPrefix(kv, "PATH=") {
				cmd.Env[i] = "PATH=" + sc.path
			}
		}
	}
	out, took, hung, err := runLimited(cmd, limit)
	if err != nil {
		return "", 0, err
	}
	if hung {
		if !sc.mayHang {
			return "", took, fmt.Errorf("hung: still running after %s\n%s", limit, tail(out))
		}
		e.hung = true
	}
	cerr := sc.check(e, m)
	if cerr == nil {
		cerr = e.checkAudit()
	}
	if cerr != nil {
		return "", took, fmt.Errorf("%v\n--- agent output:\n%s\n--- serve:\n%s\n--- person:\n%s", cerr, tail(out), tail(e.serveLog()), tail(e.personLog()))
	}
	return e.note, took, nil
}

func tail(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 25 {
		lines = lines[len(lines)-25:]
	}
	return strings.Join(lines, "\n")
}
