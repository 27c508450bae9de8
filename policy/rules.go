package policy

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/bmatcuk/doublestar/v4"
	"mvdan.cc/sh/v3/syntax"
)

//go:embed default.toml
var defaultTOML string

// Origin names of the policy layers.
const (
	OriginDefault = "default"
	originUser    = "user"
	originProject = "project"
)

// Rule is one rule of a policy file: an action for the commands matching
// a pattern over one simple command's argv, or for the paths matching a
// glob.
type Rule struct {
	Action  Action
	Command string // "go test *": words matched against argv; a final * matches any rest
	Path    string // a doublestar glob: "~/.ssh/**", "./build/**", "/etc/**", "*.pem"
	Access  string // for Path: "read", "write" or "any"
	Reason  string
	Origin  string // "default", or FILE:LINE
	// Project, when set, is the directory the rule is for: it applies
	// only to commands run in it or below (scope "this project").
	Project string
	// Match and NotMatch are example command lines the rule must and
	// must not match; a rule its examples disagree with does not load.
	Match, NotMatch []string

	words []string // Command split into shell words
	glob  string   // Path with ~ expanded; "./" kept for the jail root
	alts  []alt    // glob with its braces expanded, for matching
}

// alt is one brace alternative of a path rule, with a literal part that
// every match must hold, so most paths are ruled out without a glob match.
type alt struct {
	glob   string
	prefix string // a match starts with this (absolute patterns)
	needle string // a match contains this ("**/" patterns)
}

// ruleFile is the TOML shape of a policy file.
type ruleFile struct {
	Defaults map[string]Action `toml:"defaults"`
	// ProjectSecrets are more globs of files that hold secrets (name
	// globs, or paths below the project root with a '/'): an agent's
	// file tool reading one asks.
	ProjectSecrets []string `toml:"project_secrets"`
	// NetworkAllow and NetworkDeny are hosts (netproxy rules) runs may
	// reach without asking, and hosts they never reach; a project's
	// file may only deny.
	NetworkAllow []string `toml:"network_allow"`
	NetworkDeny  []string `toml:"network_deny"`
	Rule         []struct {
		Action   *Action  `toml:"action"`
		Command  string   `toml:"command"`
		Path     string   `toml:"path"`
		Access   string   `toml:"access"`
		Reason   string   `toml:"reason"`
		Project  string   `toml:"project"`
		Match    []string `toml:"match"`
		NotMatch []string `toml:"not_match"`
	} `toml:"rule"`
}

// Policy is a compiled policy: the knowledge table, the action for each
// category, and the rules of every layer. It is safe for concurrent use.
type Policy struct {
	tools    *toolTable
	defaults [HostEscape + 1]Action
	// defaultOrigin says which layer set each default.
	defaultOrigin [HostEscape + 1]string
	cmdRules      map[string][]*Rule // by the program the pattern names; "*" for a pattern starting with a glob
	pathRules     []*Rule
	rules         []*Rule // every rule, in load order, for Show
	// projectSecrets are the policy files' project_secrets globs.
	projectSecrets []string
	warnings       []string
	home           string
	net            *netConfig
	parsers        sync.Pool
	posix          *sync.Pool // set when exec requests run in POSIX sh
}

// Options says which policy files to layer over the embedded default.
type Options struct {
	// User is the user's policy file; it may loosen anything. Missing is
	// fine unless UserRequired.
	User         string
	UserRequired bool
	// UserSource, when not nil, is the user's policy as read before (the
	// Judge's last good one): User then names it in messages but is not
	// read. Empty (not nil) is a missing file.
	UserSource []byte
	// Project is a project's policy file (.sluice/policy.toml); it may only
	// add deny and ask rules and make defaults stricter. Missing is fine.
	Project string
	// Home expands ~ in path rules; default $HOME.
	Home string
	// Protect lists sluice's own files and directories where they are
	// not in the default places (the spool, the audit log, the policy
	// file): writes to them are denied like writes to ~/.config/sluice.
	Protect []string
	// ProgramDirs are the directories on PATH: a program written into
	// one runs the next time its name is called, so writes there are
	// denied.
	ProgramDirs []string
	// Shell is the dialect exec requests run in (exec.ShellDialect):
	// "bash" (the default) or "posix", where a line that parses only as
	// bash is at least ask (sh would read it differently, or not at
	// all).
	Shell string
	// NetworkAllow and NetworkDeny are config.toml's network_allow and
	// network_deny (netproxy rules): hosts every networked run may reach
	// without asking, and hosts none reaches (deny wins).
	NetworkAllow, NetworkDeny []string
	// Getenv reads the engine's environment for the Go settings
	// (GOPROXY, GOSUMDB, GONOSUMDB, GOPRIVATE, GONOPROXY, GOENV); default
	// os.Getenv.
	Getenv func(string) string
}

// LoadError is a policy file that cannot be used, with where and a hint.
type LoadError struct {
	File string
	Line int // 0 when unknown
	Msg  string
}

func (e *LoadError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("policy: %s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("policy: %s: %s", e.File, e.Msg)
}

// Default returns the embedded default policy alone.
func Default() *Policy {
	p, err := Load(Options{})
	if err != nil {
		panic("policy: the embedded default policy does not load: " + err.Error())
	}
	return p
}

// Load compiles the embedded default policy with the files opts names.
func Load(opts Options) (*Policy, error) {
	home := opts.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	p := &Policy{tools: embeddedKnowledge(), cmdRules: map[string][]*Rule{}, home: home}
	p.parsers.New = func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }
	if opts.Shell == "posix" || opts.Shell == "sh" {
		p.posix = &sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangPOSIX)) }}
	}
	if err := p.loadNetwork(opts); err != nil {
		return nil, err
	}
	if err := p.layer(defaultTOML, OriginDefault, "default policy"); err != nil {
		return nil, err
	}
	for c := ReadOnly; c <= HostEscape; c++ {
		if p.defaultOrigin[c] == "" {
			return nil, fmt.Errorf("policy: the default policy has no default for %s", c)
		}
	}
	for _, path := range opts.Protect {
		if path == "" || !filepath.IsAbs(path) {
			continue
		}
		for _, g := range []string{path, path + "/**"} {
			r := &Rule{Action: Deny, Path: escapeGlob(g[:len(path)]) + g[len(path):], Access: "write",
				Reason: "writes to sluice's own files (" + path + ")", Origin: OriginDefault}
			if err := p.compile(r); err != nil {
				return nil, err
			}
			p.rules = append(p.rules, r)
			p.pathRules = append(p.pathRules, r)
		}
	}
	seen := map[string]bool{}
	for _, dir := range opts.ProgramDirs {
		dir = filepath.Clean(dir)
		if dir == "" || !filepath.IsAbs(dir) || dir == "/" || seen[dir] {
			continue
		}
		seen[dir] = true
		r := &Rule{Action: Deny, Path: escapeGlob(dir) + "/*", Access: "write",
			Reason: "writes a program into " + dir + ", a directory on PATH", Origin: OriginDefault}
		if err := p.compile(r); err != nil {
			return nil, err
		}
		p.rules = append(p.rules, r)
		p.pathRules = append(p.pathRules, r)
	}
	if opts.UserSource != nil {
		if err := p.layer(string(opts.UserSource), originUser, opts.User); err != nil {
			return nil, err
		}
	} else if err := p.layerFile(opts.User, originUser, opts.UserRequired); err != nil {
		return nil, err
	}
	if err := p.layerFile(opts.Project, originProject, false); err != nil {
		return nil, err
	}
	return p, nil
}

// layerFile adds a policy file as the given layer. A missing file is
// fine unless required.
func (p *Policy) layerFile(file, origin string, required bool) error {
	if file == "" {
		return nil
	}
	src, err := os.ReadFile(file)
	switch {
	case err == nil:
		return p.layer(string(src), origin, file)
	case errors.Is(err, fs.ErrNotExist) && !required:
		return nil
	}
	return &LoadError{File: file, Msg: err.Error()}
}

// Lint checks a policy file as Load would, without keeping it.
func Lint(file string) error {
	_, err := Load(Options{User: file, UserRequired: true})
	return err
}

// layer adds one policy file's defaults and rules.
func (p *Policy) layer(src, origin, file string) error {
	var rf ruleFile
	md, err := toml.Decode(src, &rf)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return &LoadError{File: file, Line: pe.Position.Line, Msg: pe.Message + " (the file must be TOML; see 'sluice policy show' for the shape)"}
		}
		return &LoadError{File: file, Msg: fixTOMLMsg(err.Error())}
	}
	if k := unknownKey(md); k != nil {
		return &LoadError{File: file, Line: lineOf(src, k[len(k)-1]), Msg: fmt.Sprintf("unknown key %q (a file has project_secrets, network_allow, network_deny, [defaults] and [[rule]] tables; a rule has action, command or path, access, reason, project, match, not_match)", k.String())}
	}
	if err := p.layerNetwork(rf.NetworkAllow, rf.NetworkDeny, src, origin, file); err != nil {
		return err
	}
	for name, act := range rf.Defaults {
		c, err := ParseCategory(name)
		if err != nil {
			return &LoadError{File: file, Line: lineOf(src, name), Msg: "[defaults]: " + err.Error()}
		}
		if origin == originProject && act < p.defaults[c] {
			p.warnings = append(p.warnings, fmt.Sprintf("%s: [defaults] %s = %q ignored: a project policy may only make defaults stricter", file, name, act))
			continue
		}
		p.defaults[c] = act
		p.defaultOrigin[c] = origin
		if origin != OriginDefault {
			p.defaultOrigin[c] = file
		}
	}
	for _, g := range rf.ProjectSecrets {
		if g == "" || !doublestar.ValidatePattern(g) {
			return &LoadError{File: file, Line: lineOf(src, "project_secrets"), Msg: fmt.Sprintf("project_secrets: %q is not a valid glob", g)}
		}
		p.projectSecrets = append(p.projectSecrets, g)
	}
	ruleLines := headerLines(src, "[[rule]]")
	for i, r := range rf.Rule {
		line := 0
		if i < len(ruleLines) {
			line = ruleLines[i]
		}
		where := fmt.Sprintf("%s:%d", file, line)
		if origin == OriginDefault {
			where = OriginDefault
		}
		if r.Action == nil {
			return &LoadError{File: file, Line: line, Msg: `rule without an action (action = "allow", "ask" or "deny")`}
		}
		rule := &Rule{Action: *r.Action, Command: r.Command, Path: r.Path, Access: r.Access, Reason: r.Reason, Origin: where,
			Project: r.Project, Match: r.Match, NotMatch: r.NotMatch}
		if err := p.compile(rule); err != nil {
			return &LoadError{File: file, Line: line, Msg: err.Error()}
		}
		if err := p.checkExamples(rule); err != nil {
			return &LoadError{File: file, Line: line, Msg: err.Error()}
		}
		if origin == originProject && rule.Action < Ask {
			p.warnings = append(p.warnings, fmt.Sprintf("%s: %s rule ignored: a project policy may only add deny and ask rules (the agent can write it)", where, rule.Action))
			continue
		}
		p.rules = append(p.rules, rule)
		if rule.Path != "" {
			p.pathRules = append(p.pathRules, rule)
		} else {
			key := rule.words[0]
			if strings.ContainsAny(key, "*?[") {
				key = "*"
			}
			p.cmdRules[key] = append(p.cmdRules[key], rule)
		}
	}
	return nil
}

// ruleKeys are the keys a [[rule]] table may hold, spelt as documented.
var ruleKeys = []string{"action", "command", "path", "access", "reason", "project", "match", "not_match"}

// unknownKey returns the first key of a decoded policy file that is not
// one of its documented keys, or nil. The TOML decoder matches keys to
// struct fields ignoring case, so ACTION or [[Rule]] would otherwise
// load silently; they are refused like a misspelt key.
func unknownKey(md toml.MetaData) toml.Key {
	if und := md.Undecoded(); len(und) > 0 {
		return und[0]
	}
	for _, k := range md.Keys() {
		switch {
		case k[0] != "defaults" && k[0] != "rule" && k[0] != "project_secrets" && k[0] != "network_allow" && k[0] != "network_deny":
			return k
		case k[0] == "rule" && len(k) > 1 && !slices.Contains(ruleKeys, k[1]):
			return k
		}
	}
	return nil
}

// checkExamples holds a rule to its match and not_match examples, judged
// in its project (else the home directory) as Check would match it.
func (p *Policy) checkExamples(r *Rule) error {
	if len(r.Match)+len(r.NotMatch) == 0 {
		return nil
	}
	if r.Command == "" {
		return errors.New("match and not_match examples are for command rules")
	}
	m, err := p.Matcher(r.Command)
	if err != nil {
		return err
	}
	env := Env{Cwd: r.Project, Home: p.home}
	if env.Cwd == "" {
		env.Cwd = p.home
	}
	for _, ex := range r.Match {
		if !m(ex, env) {
			return fmt.Errorf("command %q does not match its example %q (match): fix the pattern or the example", r.Command, ex)
		}
	}
	for _, ex := range r.NotMatch {
		if m(ex, env) {
			return fmt.Errorf("command %q matches %q, which not_match says it must not: narrow the pattern", r.Command, ex)
		}
	}
	return nil
}

// compile checks a rule and prepares it for matching.
func (p *Policy) compile(r *Rule) error {
	switch {
	case r.Command != "" && r.Path != "":
		return errors.New("a rule has a command or a path, not both (make two rules)")
	case r.Command == "" && r.Path == "":
		return errors.New(`a rule needs a command ("go test *") or a path ("~/.ssh/**")`)
	case r.Project != "" && (!filepath.IsAbs(expandTilde(r.Project, p.home)) || strings.HasPrefix(expandTilde(r.Project, p.home), "~")):
		return fmt.Errorf("project %q: must be an absolute directory (or start with ~/)", r.Project)
	case r.Command != "":
		if r.Access != "" {
			return errors.New("access applies to path rules only")
		}
		if r.Project != "" {
			r.Project = filepath.Clean(expandTilde(r.Project, p.home))
		}
		words, err := p.patternWords(r.Command)
		if err != nil {
			return fmt.Errorf("command %q: %v (write it as one simple command, quoted as in a shell)", r.Command, err)
		}
		r.words = words
	default:
		if r.Project != "" {
			return errors.New("project applies to command rules (a path rule names its paths itself)")
		}
		switch r.Access {
		case "":
			r.Access = "any"
		case "read", "write", "any":
		default:
			return fmt.Errorf("access %q: want read, write or any", r.Access)
		}
		g := expandTilde(r.Path, p.home)
		if strings.HasPrefix(g, "~") {
			return fmt.Errorf("path %q: ~user is not supported; write the full path", r.Path)
		}
		if !doublestar.ValidatePattern(g) {
			return fmt.Errorf("path %q is not a valid glob (check its brackets and braces)", r.Path)
		}
		r.glob = g
		for _, e := range expandBraces(g) {
			switch {
			case strings.HasPrefix(e, "./"), strings.HasPrefix(e, "/"), strings.HasPrefix(e, "**"):
			case strings.HasPrefix(e, "~"):
				return fmt.Errorf("path %q: ~user is not supported; write the full path", r.Path)
			case strings.Contains(e, "/"):
				e = "**/" + e // a relative pattern matches at any depth
			}
			a := alt{glob: e}
			lit := e[:strings.IndexAny(e+"*", "*?[{\\")]
			switch {
			case strings.HasPrefix(e, "/"):
				// "/a/b/**" also matches "/a/b" itself.
				a.prefix = strings.TrimSuffix(lit, "/")
			case strings.HasPrefix(e, "**/"):
				rest := e[3:]
				a.needle = strings.TrimSuffix("/"+rest[:strings.IndexAny(rest+"*", "*?[{\\")], "/")
			}
			r.alts = append(r.alts, a)
		}
	}
	return nil
}

// expandBraces expands {a,b} groups (nested too) into every alternative.
func expandBraces(g string) []string {
	open := strings.IndexByte(g, '{')
	if open < 0 {
		return []string{g}
	}
	depth, start := 0, open+1
	var parts []string
	for i := open; i < len(g); i++ {
		switch g[i] {
		case '\\':
			i++
		case '{':
			depth++
		case ',':
			if depth == 1 {
				parts = append(parts, g[start:i])
				start = i + 1
			}
		case '}':
			depth--
			if depth == 0 {
				parts = append(parts, g[start:i])
				var out []string
				for _, p := range parts {
					out = append(out, expandBraces(g[:open]+p+g[i+1:])...)
				}
				return out
			}
		}
	}
	return []string{g} // unbalanced: ValidatePattern already refused it
}

// escapeGlob quotes a literal path for use in a doublestar pattern.
func escapeGlob(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if strings.IndexByte(`*?[]{}\`, p[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// expandTilde replaces ~ with home where it starts a pattern or an
// alternative of a brace group: "~/.ssh/**", "{~/.a,~/.b}".
func expandTilde(g, home string) string {
	var b strings.Builder
	for i := 0; i < len(g); i++ {
		atStart := i == 0 || g[i-1] == '{' || g[i-1] == ','
		if g[i] == '~' && atStart && (i+1 == len(g) || strings.IndexByte("/,}", g[i+1]) >= 0) {
			b.WriteString(home)
			continue
		}
		b.WriteByte(g[i])
	}
	return b.String()
}

// patternWords splits a command pattern into words as the shell would.
func (p *Policy) patternWords(pat string) ([]string, error) {
	f, err := p.parse(pat)
	if err != nil {
		return nil, err
	}
	if len(f.Stmts) != 1 {
		return nil, errors.New("a pattern is one simple command")
	}
	call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 || len(f.Stmts[0].Redirs) > 0 || len(call.Args) == 0 {
		return nil, errors.New("a pattern is one simple command, without assignments or redirections")
	}
	w := &walker{line: pat}
	var words []string
	for _, a := range call.Args {
		wd := w.word(a)
		if wd.dyn {
			return nil, fmt.Errorf("%s is not literal", wd.src)
		}
		words = append(words, wd.val)
	}
	if len(w.out) > 0 {
		return nil, errors.New("a pattern cannot hold substitutions")
	}
	return words, nil
}

// parse parses a shell line with a pooled parser.
func (p *Policy) parse(src string) (*syntax.File, error) {
	pr := p.parsers.Get().(*syntax.Parser)
	defer p.parsers.Put(pr)
	return pr.Parse(strings.NewReader(src), "")
}

// parseLine parses a request's line in the dialect it runs in. Where
// that is POSIX sh and the line parses only as bash, it returns the bash
// reading and bashOnly: judged on what can be read, and at least ask.
func (p *Policy) parseLine(src string) (f *syntax.File, bashOnly bool, err error) {
	if p.posix == nil {
		f, err = p.parse(src)
		return f, false, err
	}
	pr := p.posix.Get().(*syntax.Parser)
	f, err = pr.Parse(strings.NewReader(src), "")
	p.posix.Put(pr)
	if err == nil {
		return f, false, nil
	}
	if bf, berr := p.parse(src); berr == nil {
		return bf, true, nil
	}
	return nil, false, err
}

// matchWords matches a rule's pattern words against argv words. A final
// "*" matches any number of remaining words (none too); another "*"
// matches exactly one word, dynamic ones included; other globs match
// literal words only.
func matchWords(pat []string, argv []word) bool {
	for i, p := range pat {
		if p == "*" && i == len(pat)-1 {
			return true
		}
		if i >= len(argv) {
			return false
		}
		a := argv[i]
		if p == "*" {
			continue
		}
		if a.dyn || !wildMatch(p, a.val) {
			return false
		}
	}
	return len(pat) == len(argv)
}

// lineOf finds the first line that mentions key, for messages.
func lineOf(src, key string) int {
	for i, l := range strings.Split(src, "\n") {
		if strings.Contains(l, key) {
			return i + 1
		}
	}
	return 0
}

// headerLines returns the line numbers (from 1) of the table headers
// marker in src, in order: one pass, however many rules a file has.
func headerLines(src, marker string) []int {
	var lines []int
	for i, l := 1, src; l != ""; i++ {
		line := l
		if j := strings.IndexByte(l, '\n'); j >= 0 {
			line, l = l[:j], l[j+1:]
		} else {
			l = ""
		}
		// A header line starts with '[' (after spaces), which most lines
		// do not: the full check only for those.
		if t := strings.TrimLeft(line, " \t"); t != "" && t[0] == '[' && isTableHeader(line, marker) {
			lines = append(lines, i)
		}
	}
	return lines
}

// isTableHeader reports whether line is the table header marker
// ("[[rule]]"), spaces inside the brackets and a comment after it allowed.
func isTableHeader(line, marker string) bool {
	l := strings.TrimSpace(line)
	if i := strings.IndexByte(l, '#'); i >= 0 {
		l = strings.TrimSpace(l[:i])
	}
	return strings.ReplaceAll(strings.ReplaceAll(l, " ", ""), "\t", "") == marker
}

func fixTOMLMsg(m string) string {
	return strings.TrimPrefix(m, "toml: ")
}

// DefaultFor returns the action for a category and the layer that set it.
func (p *Policy) DefaultFor(c Category) (Action, string) {
	return p.defaults[c], p.defaultOrigin[c]
}

// Rules returns every rule in load order: the embedded defaults, then the
// user's file, then the project's.
func (p *Policy) Rules() []*Rule { return slices.Clone(p.rules) }

// Warnings returns what loading ignored (a project file's allow rules).
func (p *Policy) Warnings() []string { return slices.Clone(p.warnings) }

// Programs returns how many names the knowledge table describes.
func (p *Policy) Programs() int { return p.tools.len() }

// ProjectFile returns the project policy file for a directory: the
// .sluice/policy.toml of its git top level, else of dir itself.
func ProjectFile(dir string) string {
	return filepath.Join(ProjectRoot(dir), ".sluice", "policy.toml")
}

// ProjectRoot returns the git top level holding dir (found by looking for
// .git upward), or dir itself.
//
// One request asks it three times (its project policy, its roots when
// judged, its jail when run), and a burst of requests from one directory
// many more: each answer is kept for rootTTL, so that a .git made or
// removed shows within that time. (The walk was a fifth of the engine's
// work with 10,000 pending requests.)
func ProjectRoot(dir string) string {
	now := time.Now()
	rootMu.Lock()
	if e, ok := rootCache[dir]; ok && now.Sub(e.at) < rootTTL {
		rootMu.Unlock()
		return e.root
	}
	rootMu.Unlock()
	root := findRoot(dir)
	rootMu.Lock()
	if len(rootCache) >= 1024 {
		clear(rootCache)
	}
	rootCache[dir] = rootEntry{root: root, at: now}
	rootMu.Unlock()
	return root
}

// rootTTL is how long ProjectRoot's answer for a directory is kept.
var rootTTL = 100 * time.Millisecond

type rootEntry struct {
	root string
	at   time.Time
}

var (
	rootMu    sync.Mutex
	rootCache = map[string]rootEntry{}
)

// findRoot is ProjectRoot without the cache.
func findRoot(dir string) string {
	for d := filepath.Clean(dir); ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}

// Roots returns the default jail for a directory: the directory, and the
// git top level holding it when there is one.
func Roots(dir string) []string {
	if root := ProjectRoot(dir); root != dir {
		return []string{dir, root}
	}
	return []string{dir}
}

// With returns a copy of p with allow rules added for patterns, each
// named by origin (a trust window: "trust T1 (session s-4f2a)"), as if
// the person's own policy file held them: they loosen what would ask, a
// deny still wins, and path rules and the jail still apply. p is not
// changed.
func (p *Policy) With(patterns, origins []string) (*Policy, error) {
	q := Policy{tools: p.tools, defaults: p.defaults, defaultOrigin: p.defaultOrigin, pathRules: p.pathRules,
		warnings: p.warnings, home: p.home, posix: p.posix, projectSecrets: p.projectSecrets, net: p.net}
	q.parsers.New = p.parsers.New
	q.cmdRules = make(map[string][]*Rule, len(p.cmdRules)+len(patterns))
	for k, rs := range p.cmdRules {
		q.cmdRules[k] = slices.Clone(rs)
	}
	q.rules = slices.Clone(p.rules)
	for i, pat := range patterns {
		r := &Rule{Action: Allow, Command: pat, Origin: origins[i]}
		if err := q.compile(r); err != nil {
			return nil, err
		}
		key := r.words[0]
		if strings.ContainsAny(key, "*?[") {
			key = "*"
		}
		q.cmdRules[key] = append(q.cmdRules[key], r)
		q.rules = append(q.rules, r)
	}
	return &q, nil
}
