// Package setup writes and checks the agents' own configuration (Claude
// Code, Codex, Gemini CLI) so that their hooks cannot fail open: the
// absolute path of sluice, a hook timeout above sluice's wait, matchers
// that skip sluice's own MCP tools, the agent's trust and environment
// settings. Install and Uninstall return a Plan, whose Diff a person reads
// before Apply writes it (keeping a backup); Check finds what would let a
// tool run with nobody asked.
package setup

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	udiff "github.com/aymanbagabas/go-udiff"
)

// Options say where and how to set an agent up.
type Options struct {
	// Home is the user's home directory, where the agents keep their
	// user settings.
	Home string
	// Project, when set, is a project directory: the agent's project
	// settings there are written instead of the user's (where the agent
	// has them).
	Project string
	// Sluice is the absolute path of the sluice program the hooks run;
	// MCP is the sluice-mcp beside it ('sluice mcp' execs it).
	Sluice string
	// Wait is the hook's --wait; the agent's hook timeout is set to
	// Wait+Margin.
	Wait time.Duration
	// MCP also registers sluice's MCP server with the agent.
	MCP bool
	// Spool, when set, is passed to the hook and the MCP server as
	// --spool (the default spool needs nothing).
	Spool string
	// CodexHome is Codex's directory ($CODEX_HOME); default ~/.codex.
	CodexHome string
	// Cwd is where the agents are started from (the current directory):
	// the project settings each agent reads there are checked too, and
	// install takes a switch that turns every hook off out of them.
	Cwd string
	// Getenv is the environment the agents inherit (nil: none): the
	// agents' own variables that move their settings (CLAUDE_CONFIG_DIR,
	// GEMINI_CLI_HOME, GEMINI_CLI_SYSTEM_SETTINGS_PATH, ...) or turn
	// hooks off (CLAUDE_CODE_SAFE_MODE, GEMINI_CLI_TRUST_WORKSPACE), and
	// SLUICE_HOOK_FALLBACK.
	Getenv func(string) string
	// SystemRoot is prefixed to the system-wide paths where an
	// administrator manages the agents' settings (/etc/claude-code,
	// /etc/codex, /etc/gemini-cli): "" on a real machine, a directory in
	// tests.
	SystemRoot string
	// PathSluice is the sluice a person's shell finds on PATH ("" when
	// none), to tell when a hook runs another.
	PathSluice string
}

// env is the variable k of the agents' environment.
func (o Options) env(k string) string {
	if o.Getenv == nil {
		return ""
	}
	return o.Getenv(k)
}

// cwd is where the agents are started: Cwd, else Project.
func (o Options) cwd() string {
	if o.Cwd != "" {
		return o.Cwd
	}
	return o.Project
}

// system is a system-wide path under SystemRoot.
func (o Options) system(path string) string {
	if o.SystemRoot == "" {
		return path
	}
	return filepath.Join(o.SystemRoot, path)
}

// Margin is how much longer the agent's hook timeout is than sluice's
// wait (and its grace after it): sluice answers, the agent never kills it.
const Margin = 10 * time.Second

// Agents are the agents Install knows.
var Agents = []string{"claude", "codex", "gemini"}

// Change is the new content of one file.
type Change struct {
	Path          string
	Before, After []byte
	Existed       bool
	// Remove: the file goes (uninstall took out all there was in it).
	Remove bool
	Mode   fs.FileMode
}

// Plan is what Install or Uninstall would write.
type Plan struct {
	Agent   string
	Changes []Change
	// Asks are changes the plan makes to the person's own settings
	// (not sluice's): a person agrees to them before the plan is
	// applied.
	Asks []Ask
	// Notes are what a person should know: steps sluice cannot take.
	Notes []string
}

// Ask is a setting of the person's that install changes: one that turns
// sluice's hook off with every other.
type Ask struct {
	File     string
	Setting  string // as it is written: "disableAllHooks": true
	Why      string // what it does
	Question string // what install asks: Take "disableAllHooks": true out of FILE?
	Done     string // what install says it did: took out "disableAllHooks": true
}

func (a Ask) String() string { return fmt.Sprintf("%s sets %s: %s", a.File, a.Setting, a.Why) }

// Empty reports whether the plan changes nothing: already set up (or
// already removed).
func (p *Plan) Empty() bool { return len(p.Changes) == 0 }

// Diff is the plan as unified diffs of the files it changes.
func (p *Plan) Diff() string {
	var b strings.Builder
	for _, c := range p.Changes {
		from, to := c.Path, c.Path
		if !c.Existed {
			from = "/dev/null"
		}
		if c.Remove {
			to = "/dev/null"
		}
		b.WriteString(udiff.Unified(from, to, string(c.Before), string(c.After)))
	}
	return b.String()
}

// Apply writes the plan. Each file that existed is first copied to
// PATH.sluice-backup-TIME (returned), and each is replaced atomically
// (a temporary file renamed over it), so that an agent reading its
// settings meanwhile sees the old file or the new one. A file the plan
// removes held only what sluice wrote: it goes without a backup, and so
// does the agent's directory it was in (.claude, .codex, .gemini) when
// that leaves it empty.
func (p *Plan) Apply(now time.Time) (backups []string, err error) {
	stamp := now.UTC().Format("20060102T150405Z")
	for _, c := range p.Changes {
		mode := c.Mode
		if mode == 0 {
			mode = 0o600
		}
		if c.Remove {
			// Nothing but sluice's was in it: no backup, and its
			// directory goes too when that leaves it empty.
			if err := os.Remove(c.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return backups, err
			}
			if dir := filepath.Dir(c.Path); slices.Contains([]string{".claude", ".codex", ".gemini"}, filepath.Base(dir)) {
				_ = os.Remove(dir) // only when empty
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(c.Path), 0o700); err != nil {
			return backups, err
		}
		if c.Existed {
			b, err := backup(c.Path+".sluice-backup-"+stamp, c.Before, mode)
			if err != nil {
				return backups, fmt.Errorf("backup of %s: %w", c.Path, err)
			}
			backups = append(backups, b)
		}
		if err := writeFile(c.Path, c.After, mode); err != nil {
			return backups, err
		}
	}
	return backups, nil
}

// backup writes data to a new file at name, or name-2, name-3, ...: a
// backup never replaces another.
func backup(name string, data []byte, mode fs.FileMode) (string, error) {
	for i := 1; ; i++ {
		p := name
		if i > 1 {
			p = fmt.Sprintf("%s-%d", name, i)
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, fs.ErrExist) && i < 100 {
			continue
		}
		if err != nil {
			return "", err
		}
		_, err = f.Write(data)
		if err2 := f.Close(); err == nil {
			err = err2
		}
		return p, err
	}
}

// writeFile replaces path with data through a temporary file in its
// directory.
func writeFile(path string, data []byte, mode fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".sluice-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// maxSettings bounds a settings file sluice reads.
const maxSettings = 16 << 20

// readFile reads a settings file; a missing one is empty, and its mode
// is what a new one gets.
func readFile(path string) (data []byte, existed bool, mode fs.FileMode, err error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, 0o600, nil
	}
	if err != nil {
		return nil, false, 0, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		// Follow it: dotfile managers link settings in; the change goes
		// to the file the agent reads.
		if fi, err = os.Stat(path); err != nil {
			return nil, false, 0, err
		}
	}
	if !fi.Mode().IsRegular() {
		return nil, false, 0, fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > maxSettings {
		return nil, false, 0, fmt.Errorf("%s is over %d MiB", path, maxSettings>>20)
	}
	data, err = os.ReadFile(path)
	return data, true, fi.Mode().Perm(), err
}

// change adds path's new content to the plan when it differs.
func (p *Plan) change(path string, before []byte, existed bool, mode fs.FileMode, after []byte) {
	if existed && string(before) == string(after) {
		return
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	p.Changes = append(p.Changes, Change{Path: path, Before: before, After: after, Existed: existed, Mode: mode})
}

// remove adds the removal of path to the plan.
func (p *Plan) remove(path string, before []byte, mode fs.FileMode) {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	p.Changes = append(p.Changes, Change{Path: path, Before: before, Existed: true, Remove: true, Mode: mode})
}

// editJSON reads path (missing is empty) in its agent's dialect, lets
// edit change it, and adds the result to the plan. A missing file is
// made only when something is written in it; with removeEmpty (an
// uninstall), a file left with nothing in it goes.
func editJSON(p *Plan, path string, dl dialect, removeEmpty bool, edit func(*doc) error) error {
	data, existed, mode, err := readFile(path)
	if err != nil {
		return err
	}
	d, err := parseDoc(data, dl)
	if err != nil {
		return fmt.Errorf("%s is not valid JSON (%v): fix it by hand, then run this again", path, err)
	}
	orig := d.bytes()
	if err := edit(d); err != nil {
		return fmt.Errorf("%s: %w; fix it by hand, then run this again", path, err)
	}
	after := d.bytes()
	switch {
	case bytes.Equal(after, orig): // nothing of sluice's to add or take out
	case !existed && d.top().empty():
	case existed && removeEmpty && d.top().empty() && !hasComment(after):
		p.remove(path, data, mode)
	default:
		p.change(path, data, existed, mode, after)
	}
	return nil
}

// hasComment reports whether a settings file holds a comment.
func hasComment(data []byte) bool {
	d, err := parseDoc(data, jsonComments)
	if err != nil {
		return true
	}
	c := d.root.Clone()
	c.Standardize()
	return !bytes.Equal(c.Pack(), data)
}

// hookCommand is the command line an agent runs for its hook.
func hookCommand(opt Options, agent string, extra ...string) string {
	words := []string{ShellQuote(opt.Sluice)}
	if opt.Spool != "" {
		words = append(words, "--spool", ShellQuote(opt.Spool))
	}
	words = append(words, "hook", agent, "--wait", opt.Wait.String())
	words = append(words, extra...)
	return strings.Join(words, " ")
}

// mcpArgs are the MCP server's arguments after the sluice program.
func mcpArgs(opt Options) []any {
	args := []any{}
	if opt.Spool != "" {
		args = append(args, "--spool", opt.Spool)
	}
	return append(args, "mcp")
}

// isSluiceHook reports whether an agent's hook command is sluice's hook
// for agent, however it was written (a bare "sluice", a path, a wrapper
// script named sluice-hook is not).
func isSluiceHook(command, agent string) bool {
	words := strings.Fields(command)
	for i, w := range words {
		if filepath.Base(strings.Trim(w, `'"`)) == "sluice" {
			rest := words[i+1:]
			for len(rest) >= 2 && strings.HasPrefix(rest[0], "--") && !strings.Contains(rest[0], "=") {
				rest = rest[2:] // --spool DIR, --config FILE
			}
			return len(rest) >= 2 && rest[0] == "hook" && rest[1] == agent
		}
	}
	return false
}

// ShellQuote quotes s for a POSIX shell, leaving plain words as they are.
func ShellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Known reports whether agent is one Install knows.
func Known(agent string) bool { return slices.Contains(Agents, agent) }
