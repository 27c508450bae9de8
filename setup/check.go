package setup

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Severity is how much a problem matters.
type Severity int

const (
	// Warning: worth fixing; no tool runs unasked for it.
	Warning Severity = iota
	// Broken: the agent does not start, or cannot be set up as it is.
	Broken
	// Hangs: the agent waits forever (until killed).
	Hangs
	// FailOpen: a tool can run that neither the policy nor a person
	// allowed.
	FailOpen
)

func (s Severity) String() string {
	switch s {
	case Broken:
		return "BROKEN"
	case Hangs:
		return "HANGS"
	case FailOpen:
		return "FAIL-OPEN"
	}
	return "warning"
}

// Problem is something in an agent's configuration that a person should
// fix, and how.
type Problem struct {
	Agent    string
	Severity Severity
	What     string
	Fix      string
}

// Fails reports whether the problem is more than a warning: doctor
// exits 1 for it.
func (p Problem) Fails() bool { return p.Severity != Warning }

func (p Problem) String() string {
	return fmt.Sprintf("%s: %s: %s\n  fix: %s", p.Agent, p.Severity, p.What, p.Fix)
}

// Finding is what Check found for one agent.
type Finding struct {
	Agent      string
	Configured bool     // a sluice hook or MCP server is set up in some file
	Files      []string // the settings files read
	Problems   []Problem
	seen       map[string]bool
}

func (f *Finding) add(sev Severity, what, fix string) {
	f.Problems = append(f.Problems, Problem{Agent: f.Agent, Severity: sev, What: what, Fix: fix})
}

// once reports whether key is new to f (a problem said once per agent).
func (f *Finding) once(key string) bool {
	if f.seen == nil {
		f.seen = map[string]bool{}
	}
	if f.seen[key] {
		return false
	}
	f.seen[key] = true
	return true
}

// defaultWait is the hook's --wait when its command line gives none
// (hook.DefaultWait), and hookGrace how long past it the hook may still
// wait for an actor caught mid-answer (hook.Grace).
const (
	defaultWait = 110 * time.Second
	hookGrace   = 2 * time.Second
)

// Check reads every place each agent reads its configuration from (the
// user's, the system's and, in opt's working directory, the project's)
// and reports what would let a tool run unasked or leave an agent
// waiting forever.
func Check(opt Options) []Finding {
	return []Finding{checkClaude(opt), checkCodex(opt), checkGemini(opt)}
}

// checkHook checks one sluice hook entry: the program, the timeout
// against the wait. agentTimeout is the agent's default hook timeout.
func checkHook(f *Finding, opt Options, h hookEntry, agentTimeout time.Duration, install string) {
	fail := func(what, fix string) { f.add(FailOpen, h.file+": "+what, fix) }
	words := strings.Fields(h.command)
	prog := strings.Trim(words[0], `'"`)
	switch {
	case !filepath.IsAbs(prog):
		fail(fmt.Sprintf("the hook runs %q by a relative name: where it is not on the agent's PATH the hook fails to start, and the agent runs the tool", prog),
			install+" (it writes the absolute path of sluice)")
	default:
		if fi, err := os.Stat(prog); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			fail(fmt.Sprintf("the hook runs %s, which is missing or not executable: the hook fails to start, and the agent runs the tool", prog),
				install+" (from the sluice you mean to use)")
		} else {
			checkProgram(f, opt, h.file, prog, install)
		}
	}
	wait := defaultWait
	for i, w := range words {
		if (w == "--wait" || w == "-wait") && i+1 < len(words) {
			if d, err := time.ParseDuration(words[i+1]); err == nil {
				wait = d
			}
		} else if v, ok := strings.CutPrefix(w, "--wait="); ok {
			if d, err := time.ParseDuration(v); err == nil {
				wait = d
			}
		}
	}
	timeout := h.timeout
	if timeout == 0 {
		timeout = agentTimeout
	}
	if timeout <= wait+hookGrace {
		fail(fmt.Sprintf("the agent kills the hook after %s, before sluice answers (it waits up to %s for a decision): the agent then runs the tool", timeout, wait+hookGrace),
			install+fmt.Sprintf(" (it sets the timeout to the wait plus %s)", Margin))
	}
}

// checkProgram tells when the sluice a hook runs is not the one on the
// person's PATH: the console they start and the hook can then be
// different builds, and a build inside a source clone goes away with a
// 'make clean' (and the hook with it).
func checkProgram(f *Finding, opt Options, file, prog, install string) {
	real, err := filepath.EvalSymlinks(prog)
	if err != nil {
		real = prog
	}
	if !f.once("program " + real) {
		return
	}
	clone := sourceClone(real)
	switch {
	case opt.PathSluice == "" && clone != "":
		f.add(Warning, fmt.Sprintf("%s: the hook runs %s, a build inside the source clone %s, and no sluice is on your PATH: rebuilding or cleaning the clone changes or removes the program under the agent (a hook that fails to start lets the tool run)", file, prog, clone),
			"put sluice on your PATH ('go install ./cmd/...' in the clone), then run "+install+" with it")
	case opt.PathSluice != "" && !samePath(real, opt.PathSluice):
		what := fmt.Sprintf("%s: the hook runs %s, but the sluice on your PATH is %s: the console you start and the hook may be different builds", file, prog, opt.PathSluice)
		if clone != "" {
			what += fmt.Sprintf(", and %s goes away with a 'make clean' of %s (a hook that fails to start lets the tool run)", prog, clone)
		}
		f.add(Warning, what, install+" (run with the sluice on your PATH, it writes its own path)")
	}
}

// sourceClone is the sluice source clone whose bin/ holds prog, "" when
// it is not in one.
func sourceClone(prog string) string {
	dir := filepath.Dir(prog)
	if filepath.Base(dir) != "bin" {
		return ""
	}
	clone := filepath.Dir(dir)
	data, err := os.ReadFile(filepath.Join(clone, "go.mod"))
	if err != nil || !strings.Contains(string(data), "module github.com/sluice-dev/sluice\n") {
		return ""
	}
	return clone
}

// matchesAll reports whether a hook matcher (a tool name, names joined by
// |, * or empty for all, or a regular expression) matches every tool in
// names; known is false when the expression is one Go cannot read
// (JavaScript's lookahead).
func matchesAll(matcher string, names ...string) (all, known bool) {
	switch matcher {
	case "", "*", ".*", claudeMatcher, geminiMatcher:
		return true, true
	}
	if regexp.MustCompile(`^[A-Za-z0-9_|]+$`).MatchString(matcher) {
		for _, n := range names {
			if !strings.Contains("|"+matcher+"|", "|"+n+"|") {
				return false, true
			}
		}
		return true, true
	}
	re, err := regexp.Compile(matcher)
	if err != nil {
		return false, false
	}
	for _, n := range names {
		if !re.MatchString(n) {
			return false, true
		}
	}
	return true, true
}

// readSettings reads a settings file an agent reads as an object: nil
// when it is missing, unreadable or invalid (then bad says what that
// means for the agent, and it is added to f).
func readSettings(f *Finding, path string, dl dialect, bad func(err error) (Severity, string, string)) *object {
	data, ok := f.read(path)
	if !ok {
		return nil
	}
	d, err := parseDoc(data, dl)
	if err != nil {
		sev, what, fix := bad(err)
		f.add(sev, what, fix)
		return nil
	}
	o, _ := d.top().read().(*object)
	return o
}

// read reads a file the agent reads, and lists it in f.Files; false when
// it is missing, or unreadable (a warning in f).
func (f *Finding) read(path string) ([]byte, bool) {
	data, existed, _, err := readFile(path)
	if err != nil {
		f.add(Warning, fmt.Sprintf("cannot read %s: %v", path, err), "make it readable")
		return nil, false
	}
	if !existed {
		return nil, false
	}
	f.Files = append(f.Files, path)
	return data, true
}

// notJSON is what an invalid settings file means to an agent that
// skips it (sev FailOpen) or refuses to start (Broken).
func notJSON(path string, sev Severity, consequence string) func(error) (Severity, string, string) {
	return func(err error) (Severity, string, string) {
		return sev, fmt.Sprintf("%s is not valid JSON (%v): %s", path, err, consequence), "fix the file by hand"
	}
}

// fallbackOf is a hook command line's --fallback value, "" when not
// given.
func fallbackOf(command string) string {
	words := strings.Fields(command)
	for i, w := range words {
		if (w == "--fallback" || w == "-fallback") && i+1 < len(words) {
			return strings.Trim(words[i+1], `'"`)
		}
		if v, ok := strings.CutPrefix(w, "--fallback="); ok {
			return strings.Trim(v, `'"`)
		}
	}
	return ""
}

// fallback is what a hook answers when nobody decides, and where that
// was set: its --fallback, else SLUICE_HOOK_FALLBACK in the environment
// the agent inherits.
func fallback(opt Options, command string) (value, from string) {
	if v := fallbackOf(command); v != "" {
		return v, "the hook's --fallback " + v
	}
	if v := opt.env("SLUICE_HOOK_FALLBACK"); v != "" {
		return v, "SLUICE_HOOK_FALLBACK=" + v + " (set here, and inherited by an agent started here)"
	}
	return "", ""
}

// truthy is how the agents read a boolean environment variable.
func truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}
