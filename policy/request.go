package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// Judge implements queue.Judge: each request is judged by the user's
// policy layered with the .sluice/policy.toml of the project it runs in,
// then finished for the machine it would run on and the agent session's
// trust windows. What it returns is the whole verdict: nothing downstream
// edits it.
type Judge struct {
	// Options are the base options; Project is filled per request.
	Options Options
	// Machine answers what the verdict asks of this machine (see
	// finish); nil: the verdict as the policy gives it, for previews and
	// tests that run nothing.
	Machine Machine
	// Trusts are the agent sessions' trust windows; nil: none.
	Trusts *TrustStore

	mu    sync.Mutex
	cache map[string]*loaded // by project policy file
	// problem is why the last reload failed ("" when it did not): the
	// last good policy is kept meanwhile.
	problem string
	// goodUser is the user's policy file as it last loaded (nil before
	// it ever did): a project first judged after a broken edit of it gets
	// that, layered with its own file, not a question for everything.
	goodUser []byte
}

// Start loads the policy once, before any request, and keeps the user's
// file as it is now as the last good one: an edit that breaks it later
// leaves this in force. It returns why the policy does not load.
func (j *Judge) Start() error {
	src, err := j.readUser()
	if err != nil {
		return err
	}
	opts := j.Options
	opts.UserSource = src
	if _, err := Load(opts); err != nil {
		return err
	}
	j.mu.Lock()
	j.goodUser = src
	j.mu.Unlock()
	return nil
}

// readUser reads the user's policy file: empty (not nil) when it is
// missing and need not be there.
func (j *Judge) readUser() ([]byte, error) {
	if j.Options.User == "" {
		return []byte{}, nil
	}
	src, err := os.ReadFile(j.Options.User)
	switch {
	case err == nil:
		return src, nil
	case errors.Is(err, fs.ErrNotExist) && !j.Options.UserRequired:
		return []byte{}, nil
	}
	return nil, &LoadError{File: j.Options.User, Msg: err.Error()}
}

// loaded is a policy and the state of the files it was read from: a
// change to either file (mtime, size, inode) loads it again.
type loaded struct {
	p       *Policy
	stamps  [2]fileStamp
	checked time.Time // when the stamps were last compared with the files
}

// recheck is how long a loaded policy is used before its files are
// looked at again: an edit applies to requests judged after that, and a
// burst of requests does not stat two files each.
var recheck = 100 * time.Millisecond

type fileStamp struct {
	exists bool
	mtime  int64
	size   int64
	ino    uint64
}

func stampOf(path string) fileStamp {
	if path == "" {
		return fileStamp{}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	st := fileStamp{exists: true, mtime: fi.ModTime().UnixNano(), size: fi.Size()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = uint64(sys.Ino)
	}
	return st
}

// Problem says why the policy files as they are now do not load, while
// the last good policy stays in force; "" when they load.
func (j *Judge) Problem() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.problem
}

var _ queue.Judge = (*Judge)(nil)

// Judge implements queue.Judge.
func (j *Judge) Judge(req *queue.Request) queue.Verdict {
	return j.Verdict(req).Queue()
}

// Verdict judges a request of any kind, finished for the machine and the
// session's trusts. A policy that does not load makes every request ask,
// with the error as the reason: never allow.
func (j *Judge) Verdict(req *queue.Request) *Verdict {
	p, err := j.policyFor(req.Cwd)
	if err != nil {
		return &Verdict{Action: Ask, Category: Unknown, Risk: Medium, Reasons: []string{"the policy does not load: " + err.Error()}}
	}
	return j.finish(p, req, p.CheckRequest(req))
}

// Reset forgets the policies loaded so far: the next verdict reads the
// policy files again (after the user policy file changed).
func (j *Judge) Reset() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.cache = nil
}

// SetNetwork replaces config.toml's network_allow and network_deny
// (Options.NetworkAllow, NetworkDeny) after the configuration was read
// again: the next verdicts take them.
func (j *Judge) SetNetwork(allow, deny []string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if slices.Equal(allow, j.Options.NetworkAllow) && slices.Equal(deny, j.Options.NetworkDeny) {
		return // another key changed: the policies loaded stand
	}
	j.Options.NetworkAllow, j.Options.NetworkDeny = allow, deny
	j.cache = nil
}

// Policy is the policy that applies to requests in cwd.
func (j *Judge) Policy(cwd string) (*Policy, error) { return j.policyFor(cwd) }

func (j *Judge) policyFor(cwd string) (*Policy, error) {
	project := ""
	if cwd != "" {
		project = ProjectFile(cwd)
	}
	now := time.Now()
	j.mu.Lock()
	prev, ok := j.cache[project]
	if ok && now.Sub(prev.checked) < recheck {
		j.mu.Unlock()
		return prev.p, nil
	}
	j.mu.Unlock()
	stamps := [2]fileStamp{stampOf(j.Options.User), stampOf(project)}
	j.mu.Lock()
	defer j.mu.Unlock()
	prev, ok = j.cache[project]
	if ok && prev.stamps == stamps {
		prev.checked = now
		return prev.p, nil
	}
	// A policy file was edited (or this project is new): read it again.
	opts := j.Options
	opts.Project = project
	src, err := j.readUser()
	var p *Policy
	if err == nil {
		opts.UserSource = src
		p, err = Load(opts)
	}
	if j.cache == nil {
		j.cache = map[string]*loaded{}
	}
	if err != nil {
		if ok {
			// A broken edit keeps the last good policy, and says so.
			j.problem = err.Error() + " (the last good policy is in force)"
			prev.stamps, prev.checked = stamps, now
			return prev.p, nil
		}
		var le *LoadError
		if errors.As(err, &le) && le.File == j.Options.User && j.goodUser != nil {
			// A project first seen after the user's file broke: the
			// user's file as it last loaded, with this project's own.
			opts.UserSource = j.goodUser
			if good, gerr := Load(opts); gerr == nil {
				j.problem = err.Error() + " (the last good policy is in force)"
				j.cache[project] = &loaded{p: good, stamps: stamps, checked: now}
				return good, nil
			}
		}
		j.problem = err.Error() + " (every request asks until it is fixed)"
		return nil, err
	}
	j.problem = ""
	j.goodUser = src
	j.cache[project] = &loaded{p: p, stamps: stamps, checked: now}
	return p, nil
}

// CheckRequest judges a request: an exec request's command line, the
// paths a write, edit or patch would change, or a tool call by its name
// and the paths in its input.
func (p *Policy) CheckRequest(req *queue.Request) *Verdict {
	env := Env{Cwd: req.Cwd, Home: p.home}
	if req.Cwd != "" {
		env.Roots = Roots(req.Cwd)
	}
	switch req.Kind {
	case queue.KindExec:
		v := p.Check(req.Command, env)
		p.checkRequestEnv(v, req.Env, env)
		if v.Action == Deny {
			// The request's env made it a deny: nothing runs.
			v.Hosts, v.HostsBy, v.HostsDenied, v.HostsDeniedBy = nil, nil, nil, nil
		}
		return v
	case queue.KindWrite, queue.KindEdit:
		return p.checkWrites(string(req.Kind), []string{req.Path}, env)
	case queue.KindPatch:
		paths := patchPaths(req.Diff)
		if len(paths) == 0 {
			return &Verdict{Action: Ask, Category: Unknown, Risk: Medium, Reasons: []string{"the patch names no file sluice can read"}}
		}
		return p.checkWrites("patch", paths, env)
	case queue.KindTool:
		return p.checkTool(req, env)
	case queue.KindConnect:
		// A run asks about a host outside its verdict's set: only a
		// person widens the set (network_deny is refused by the run's
		// proxy before it asks).
		return &Verdict{Action: Ask, Category: Networked, Risk: Medium,
			Reasons: []string{"a networked run asks to reach " + req.Target() + ", a host its verdict does not name"}}
	}
	return &Verdict{Action: Ask, Category: Unknown, Risk: Medium, Reasons: []string{"unknown request kind " + string(req.Kind)}}
}

// checkWrites judges a file change: its paths, and a jail that would be
// the home directory or / (never granted: the request asks).
func (p *Policy) checkWrites(what string, paths []string, env Env) *Verdict {
	var ungranted string
	env.Roots, ungranted = grantable(env.Roots, env.Home)
	v := p.checkPaths(what, Mutating, "", paths, nil, env)
	if ungranted != "" {
		v.floor(Ask, Medium, ungranted)
	}
	return v
}

// checkPaths judges a request that writes and reads the given paths.
func (p *Policy) checkPaths(what string, cat Category, reason string, writes, reads []string, env Env) *Verdict {
	cwd := word{val: env.Cwd, src: env.Cwd}
	pt := part{words: []word{{val: what, src: what}}, cat: cat, label: what}
	if reason != "" {
		pt.reasons = append(pt.reasons, reason)
	}
	for _, w := range writes {
		pt.words = append(pt.words, word{val: w, src: w})
		pt.writes = append(pt.writes, pathRef{w: word{val: w, src: w}, cwd: cwd, how: what})
	}
	for _, r := range reads {
		pt.words = append(pt.words, word{val: r, src: r})
		pt.reads = append(pt.reads, pathRef{w: word{val: r, src: r}, cwd: cwd, how: what})
	}
	v := &Verdict{Action: Allow, Category: ReadOnly, Risk: Low}
	for _, s := range append(writes, reads...) {
		if bad := hiddenRunes(s); bad != "" {
			v.floor(Ask, High, "a path holds control or invisible characters ("+bad+")")
		}
	}
	pv, r := p.decide(&pt, env)
	v.Commands = []PartVerdict{pv}
	v.Category = max(v.Category, pv.Category)
	v.floor(pv.Action, r, pv.Reasons...)
	return v
}

// readTools are agent tools that only read (Claude Code's names).
var readTools = sync.OnceValue(func() map[string]bool {
	return map[string]bool{"Read": true, "Glob": true, "Grep": true, "LS": true, "NotebookRead": true,
		"TodoRead": true, "TodoWrite": true, "Task": true, "ExitPlanMode": true, "BashOutput": true, "ListMcpResourcesTool": true,
		"read_file": true, "list_directory": true, "glob": true, "search_file_content": true, "read_many_files": true}
})

// netTools fetch from the network.
var netTools = sync.OnceValue(func() map[string]bool {
	return map[string]bool{"WebFetch": true, "WebSearch": true, "web_fetch": true, "google_web_search": true}
})

// searchTools look through a directory (the cwd when no path is
// given): Claude's Grep, Glob and LS, Gemini's search_file_content, glob,
// list_directory and read_many_files.
var searchTools = sync.OnceValue(func() map[string]bool {
	return map[string]bool{"Glob": true, "Grep": true, "LS": true, "glob": true, "search_file_content": true,
		"list_directory": true, "read_many_files": true}
})

func (p *Policy) checkTool(req *queue.Request, env Env) *Verdict {
	var input map[string]any
	_ = json.Unmarshal(req.Input, &input)
	var paths []string
	for _, k := range []string{"file_path", "path", "notebook_path", "absolute_path", "dir_path", "directory"} {
		if s, ok := input[k].(string); ok && s != "" {
			paths = append(paths, s)
		}
	}
	if list, ok := input["paths"].([]any); ok {
		// read_many_files {paths: [...]}: files, directories or globs.
		for _, e := range list {
			if s, ok := e.(string); ok && s != "" {
				paths = append(paths, s)
			}
		}
	}
	if pat, ok := input["pattern"].(string); ok && searchTools()[req.Tool] && req.Tool != "Grep" && req.Tool != "search_file_content" {
		// Glob {pattern: "/home/me/.ssh/*"}: a pattern that is a path
		// reaches where its literal part points.
		if dir := globBase(pat); dir != "" {
			paths = append(paths, dir)
		}
	}
	switch {
	case readTools()[req.Tool]:
		v := p.checkPaths("tool "+req.Tool, ReadOnly, "", nil, paths, env)
		p.checkReach(v, req.Tool, paths, env)
		return v
	case netTools()[req.Tool]:
		return p.checkPaths("tool "+req.Tool, Networked, req.Tool+" reaches the network", nil, paths, env)
	}
	return p.checkPaths("tool "+req.Tool, Unknown, fmt.Sprintf("sluice does not know what the tool %s does", req.Tool), nil, paths, env)
}

// patchPaths lists the files a unified diff names (the new side, and the
// old side for deletions and renames), without a/ and b/ prefixes.
func patchPaths(diff string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range strings.Split(diff, "\n") {
		if !strings.HasPrefix(l, "+++ ") && !strings.HasPrefix(l, "--- ") {
			continue
		}
		p := strings.TrimSpace(l[4:])
		if i := strings.IndexByte(p, '\t'); i >= 0 {
			p = p[:i]
		}
		if p == "/dev/null" || p == "" {
			continue
		}
		if strings.HasPrefix(p, "a/") || strings.HasPrefix(p, "b/") {
			p = p[2:]
		}
		p = filepath.Clean(p)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// checkRequestEnv judges the variables a request sets for its command as
// if they were written before it on the command line (LD_PRELOAD=...,
// GIT_SSH_COMMAND=..., PAGER=...): the env map must not be a way around
// the rules for inline assignments.
func (p *Policy) checkRequestEnv(v *Verdict, vars map[string]string, env Env) {
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		ev := p.Check("export "+k+"="+quoteWord(vars[k]), env)
		if ev.Action > v.Action || ev.Risk > v.Risk {
			reasons := make([]string, 0, len(ev.Reasons))
			for _, r := range ev.Reasons {
				reasons = append(reasons, "env "+r)
			}
			v.floor(ev.Action, ev.Risk, reasons...)
			v.Category = max(v.Category, ev.Category)
		}
	}
}

// quoteWord quotes s as one shell word, literally.
func quoteWord(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// globBase is the directory a path pattern starts from, when the pattern
// is absolute or leaves the directory (/etc/*.conf, ~/.ssh/*, ../x/**):
// "" for a pattern relative to where the tool searches.
func globBase(pat string) string {
	if !filepath.IsAbs(pat) && !strings.HasPrefix(pat, "~") && !strings.HasPrefix(pat, "..") {
		return ""
	}
	lit := pat[:strings.IndexAny(pat+"*", "*?[{")]
	if i := strings.LastIndexByte(lit, '/'); i >= 0 && lit != pat {
		lit = lit[:i+1]
	}
	if lit == "" {
		return "/"
	}
	return lit
}

// checkReach holds an agent's file tool to the project: a path outside
// the project's roots (never the home directory or /) that is not in
// DefaultReadable asks, as does a project file that holds secrets, a
// search of a readable tree that holds one, and a search with no path
// from the home directory or /.
func (p *Policy) checkReach(v *Verdict, tool string, paths []string, env Env) {
	home := env.Home
	if home == "" {
		home = p.home
	}
	renv := env
	renv.Home = home
	roots := projectRoots(env.Roots, home)
	if len(paths) == 0 && searchTools()[tool] {
		switch cwd := filepath.Clean(env.Cwd); {
		case env.Cwd == "":
			v.floor(Ask, Medium, tool+" searches a directory sluice does not know (the request has no cwd)")
		case cwd == "/" || cwd == filepath.Clean(home):
			v.floor(Ask, Medium, tool+" searches "+cwd+" (the tool's directory), which is no project: everything under it")
		}
		return
	}
	for _, path := range paths {
		abs, ok := resolve(path, word{val: env.Cwd}, renv, false)
		if !ok || !filepath.IsAbs(abs) {
			v.floor(Ask, Medium, tool+" reads "+path+", relative to a directory sluice does not know")
			continue
		}
		if strings.ContainsAny(abs, "*?[{") {
			abs = filepath.Clean(globBase(abs))
		}
		switch {
		case inRoots(abs, roots) && len(roots) > 0:
			if g := p.secretFile(abs, roots); g != "" {
				v.floor(Ask, High, tool+" reads "+abs+", a file that usually holds secrets ("+g+")")
			}
		case readable(abs, home):
			if e := holdsException(abs, home); e != "" && searchTools()[tool] && tool != "LS" && tool != "list_directory" {
				v.floor(Ask, High, tool+" searches "+abs+", which holds "+e)
			}
		default:
			where := "no project"
			if len(roots) > 0 {
				where = "the project (" + strings.Join(roots, ", ") + ")"
			}
			v.floor(Ask, Medium, tool+" reads "+abs+", outside "+where+" and the system files tools read")
		}
	}
}

// projectRoots are the roots an agent's file tools may read freely: the
// request's roots, less the home directory and /, which are no project.
func projectRoots(roots []string, home string) []string {
	var out []string
	for _, r := range roots {
		if c := filepath.Clean(r); c != "/" && (home == "" || c != filepath.Clean(home)) {
			out = append(out, c)
		}
	}
	return out
}
