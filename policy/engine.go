package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/sluice-dev/sluice/queue"
)

// Env is where a line would run.
type Env struct {
	Cwd   string   // absolute; relative paths resolve here
	Home  string   // expands ~; default the policy's home
	Roots []string // the jail: writes outside these escalate; default [Cwd]
}

// PartVerdict is the verdict on one simple command of a line.
type PartVerdict struct {
	Argv     []string `json:"argv"`
	Category Category `json:"category"`
	Action   Action   `json:"action"`
	Rule     string   `json:"rule"`
	Reasons  []string `json:"reasons,omitempty"`
	grants   []string
	hosts    []hostGrant // what the part reaches by itself (partHosts)
}

// Verdict is the policy's judgement of a command line (protocol section 4).
type Verdict struct {
	Action   Action        `json:"action"`
	Category Category      `json:"category"`
	Risk     Risk          `json:"risk"`
	Reasons  []string      `json:"reasons"`
	Commands []PartVerdict `json:"commands"`
	// Grants are the paths outside the project the line writes that a
	// person may allow (cp f /tmp/x/ names /tmp/x): a run a person
	// approved may write them, that run only (exec.Options.Grants).
	// Symlinks are resolved; a device, /proc, /sys, a path computed at
	// run time or a pattern is never one.
	Grants []string `json:"grants,omitempty"`
	// Hosts are the hosts (netproxy rules: a name, *.domain, host:port,
	// an address or a CIDR range) a networked run of the line may reach
	// without asking: those its parts reach by themselves (the knowledge
	// table's, the person's own tool settings, the URLs and git remotes
	// it names) and the person's network_allow, less what network_deny
	// refuses whole. Set when a part reaches hosts or the run is
	// networked; never for a line that is denied. HostsBy says why each
	// is allowed ("knowledge: npm", "config: network_allow").
	Hosts   []string          `json:"hosts,omitempty"`
	HostsBy map[string]string `json:"hosts_by,omitempty"`
	// HostsDenied are the person's network_deny rules, which a run's
	// proxy refuses even where Hosts or a person's answer admits them
	// (deny wins); HostsDeniedBy says where each comes from.
	HostsDenied   []string          `json:"hosts_denied,omitempty"`
	HostsDeniedBy map[string]string `json:"-"`
}

// Queue returns the verdict in the form results carry.
func (v *Verdict) Queue() queue.Verdict {
	qv := queue.Verdict{Action: queue.Action(v.Action.String()), Category: v.Category.String(), Risk: v.Risk.String(),
		Reasons: v.Reasons, Profile: v.Profile(), Grants: v.Grants,
		Hosts: v.Hosts, HostsBy: v.HostsBy, HostsDenied: v.HostsDenied, HostsDeniedBy: v.HostsDeniedBy}
	if len(v.Commands) > 0 {
		qv.Parts = make([]queue.Part, len(v.Commands))
		for i, c := range v.Commands {
			qv.Parts[i] = queue.Part{Command: strings.Join(c.Argv, " "), Category: c.Category.String(),
				Action: queue.Action(c.Action.String()), Rule: c.Rule}
		}
	}
	return qv
}

// Profile is the confinement a run of the line gets (exec/sandbox):
// networked if any part is networked, else mutating if any part may write
// or is not known (unknown, destructive and host_escape_risk parts run,
// once a person approved them, with writes held to the project and no
// network), else read_only.
func (v *Verdict) Profile() string {
	p := profileOf(v.Category)
	for _, c := range v.Commands {
		p = max(p, profileOf(c.Category))
	}
	return [...]string{"read_only", "mutating", "networked"}[p]
}

// profileOf ranks a category's profile: 0 read_only, 1 mutating, 2
// networked.
func profileOf(c Category) int {
	switch c {
	case ReadOnly:
		return 0
	case Networked:
		return 2
	}
	return 1
}

// maxNesting bounds bracket nesting before parsing, so a hostile line
// cannot make the parser's recursion run away.
const maxNesting = 200

// Check judges a shell command line run in env.
func (p *Policy) Check(line string, env Env) *Verdict {
	if env.Home == "" {
		env.Home = p.home
	}
	if len(env.Roots) == 0 && env.Cwd != "" {
		env.Roots = []string{env.Cwd}
	}
	var ungranted string
	env.Roots, ungranted = grantable(env.Roots, env.Home)
	v := &Verdict{Action: Allow, Category: ReadOnly, Risk: Low}
	defer func() {
		if ungranted != "" && v.Profile() != "read_only" {
			v.floor(Ask, Medium, ungranted)
		}
		p.network(v)
	}()
	if bad := hiddenRunes(line); bad != "" {
		v.floor(Ask, High, "the line holds control or invisible characters ("+bad+"): what you see may not be what runs")
	}
	if nestingTooDeep(line) {
		v.Category = Unknown
		v.floor(Ask, Medium, fmt.Sprintf("the line nests brackets more than %d deep; sluice will not judge it", maxNesting))
		return v
	}
	f, bashOnly, err := p.parseLine(line)
	if err != nil {
		v.Category = Unknown
		v.floor(Ask, Medium, "the line does not parse as shell: "+err.Error())
		p.salvage(v, line, env)
		return v
	}
	if bashOnly {
		v.Category = max(v.Category, Unknown)
		v.floor(Ask, Medium, "the line uses bash syntax, and commands run with /bin/sh here: what sh runs may differ")
	}
	w := &walker{line: line, cwd: word{val: env.Cwd, src: env.Cwd}}
	w.stmts(f.Stmts, false)
	j := &judge{k: p.tools, parse: p.parse}
	j.readsFiles(w.out)
	for i := range w.out {
		j.simple(&w.out[i])
	}
	for _, b := range w.bombs {
		v.Category = max(v.Category, HostEscape)
		v.floor(Deny, Critical, "the function "+b+" starts copies of itself in the background or a pipeline: a fork bomb")
	}
	for _, n := range append(w.errs, j.notes...) {
		v.Category = max(v.Category, Unknown)
		v.floor(Ask, Medium, n)
	}
	if len(j.parts) == 0 {
		v.floor(Ask, Low, "there is no command in the line")
		return v
	}
	for i := range j.parts {
		pv, r := p.decide(&j.parts[i], env)
		for _, g := range pv.grants {
			if !slices.Contains(v.Grants, g) {
				v.Grants = append(v.Grants, g)
			}
		}
		v.Commands = append(v.Commands, pv)
		v.Category = max(v.Category, pv.Category)
		v.floor(pv.Action, r, pv.Reasons...)
	}
	if v.Action == AllowWithCheckpoint && !inProject(env.Cwd, env.Home) {
		v.floor(Ask, Medium, "allow_with_checkpoint applies inside a project (a git repository other than your home): here its changes could reach anything")
	}
	if v.Action == Deny {
		v.Grants = nil // nothing runs
	}
	return v
}

// grantable returns the roots that may be a jail: never the home
// directory or /, where "the project" would be everything. why says
// which root was left out, for a verdict on a request that writes.
func grantable(roots []string, home string) (kept []string, why string) {
	kept = projectRoots(roots, home)
	if len(kept) == len(roots) {
		return roots, ""
	}
	for _, r := range roots {
		switch c := filepath.Clean(r); {
		case c == "/":
			return kept, "the project root would be / (the whole file system), which is never granted as a jail root"
		case home != "" && c == filepath.Clean(home):
			return kept, "the project root would be " + c + " (the home directory), which is never granted as a jail root"
		}
	}
	return kept, ""
}

// UngrantedRoot names the root among roots that is never granted as a
// jail root (the home directory or /), "" when there is none: a runner
// must not make such a directory a mutating run's jail.
func UngrantedRoot(roots []string, home string) string {
	for _, r := range roots {
		if c := filepath.Clean(r); c == "/" || home != "" && c == filepath.Clean(home) {
			return c
		}
	}
	return ""
}

// partDir is the absolute directory a part runs in, "" when it is
// computed at run time (then no project-limited rule applies).
func partDir(cwd word, env Env) string {
	switch {
	case cwd.dyn:
		return ""
	case cwd.val == "":
		return env.Cwd
	case cwd.val == "~" || strings.HasPrefix(cwd.val, "~/"):
		return filepath.Join(env.Home, strings.TrimPrefix(cwd.val, "~"))
	case filepath.IsAbs(cwd.val):
		return filepath.Clean(cwd.val)
	case env.Cwd == "":
		return ""
	}
	return filepath.Join(env.Cwd, cwd.val)
}

func orWhere(dir string) string {
	if dir == "" {
		return "a directory computed at run time"
	}
	return dir
}

// under reports whether dir is root or lies below it.
func under(dir, root string) bool {
	if dir == "" {
		return false
	}
	dir = filepath.Clean(dir)
	return dir == root || strings.HasPrefix(dir, strings.TrimSuffix(root, "/")+"/")
}

// inProject reports whether cwd lies in a project a run may be let loose
// in with a checkpoint: a git repository whose top is not the home
// directory or the file system's root.
func inProject(cwd, home string) bool {
	if cwd == "" {
		return false
	}
	root := ProjectRoot(cwd)
	if _, err := os.Lstat(filepath.Join(root, ".git")); err != nil {
		return false
	}
	return root != "/" && filepath.Clean(root) != filepath.Clean(home)
}

// salvage judges what can be read of a line the parser refused, which
// the shell may still run up to the error: each piece between ;, &, |,
// newlines and the like that parses on its own. The verdict never ends
// below the most severe piece found ("sudo rm -rf / ; ((" stays deny).
// Splitting ignores quoting, so it may find pieces that are not
// commands; they can only raise the verdict, never lower it.
func (p *Policy) salvage(v *Verdict, line string, env Env) {
	for _, piece := range p.salvagePieces(line) {
		pv := p.Check(piece, env)
		if pv.Action > Ask || pv.Category > v.Category {
			v.Category = max(v.Category, pv.Category)
			v.Commands = append(v.Commands, pv.Commands...)
			v.floor(pv.Action, pv.Risk, pv.Reasons...)
		}
	}
}

// salvagePieces are the pieces of a line that does not parse that parse
// on their own.
func (p *Policy) salvagePieces(line string) []string {
	pieces := strings.FieldsFunc(line, func(r rune) bool {
		return r == ';' || r == '&' || r == '|' || r == '\n' || r == '(' || r == ')' || r == '{' || r == '}' || r == '`'
	})
	if len(pieces) > maxSalvage {
		pieces = pieces[:maxSalvage]
	}
	var out []string
	for _, piece := range pieces {
		piece = strings.TrimSpace(piece)
		if piece == "" || piece == line {
			continue
		}
		if _, err := p.parse(piece); err == nil {
			out = append(out, piece)
		}
	}
	return out
}

// maxSalvage bounds the pieces salvage judges in a line that does not
// parse.
const maxSalvage = 64

// floor raises the verdict to at least act and risk, adding reasons.
func (v *Verdict) floor(act Action, r Risk, reasons ...string) {
	v.Action = max(v.Action, act)
	v.Risk = max(v.Risk, r)
	for _, s := range reasons {
		if !slices.Contains(v.Reasons, s) {
			v.Reasons = append(v.Reasons, s)
		}
	}
}

// baseRisk is the risk of a category before paths are considered.
func baseRisk(c Category) Risk {
	switch c {
	case ReadOnly:
		return Low
	case Destructive:
		return High
	case HostEscape:
		return Critical
	}
	return Medium
}

// decide applies rules, defaults and path checks to one part.
func (p *Policy) decide(pt *part, env Env) (PartVerdict, Risk) {
	pv := PartVerdict{Argv: make([]string, len(pt.words)), Category: pt.cat, Reasons: slices.Clone(pt.reasons)}
	for i, w := range pt.words {
		pv.Argv[i] = w.src
		if !w.dyn && w.src == "" {
			pv.Argv[i] = w.val
		}
	}
	if len(pt.writes) > 0 {
		pv.Category = max(pv.Category, Mutating)
	}
	// Rules limited to a project, and checkpoint rules, look at where
	// this part runs: "cd ../other && npm test" is not in the project.
	penv := env
	penv.Cwd = partDir(pt.cwd, env)
	act, rule := p.commandRule(pt, penv)
	if rule == nil {
		act = p.defaults[pv.Category]
		pv.Rule = fmt.Sprintf("default: %s → %s (%s)", pv.Category, act, pt.label)
	} else {
		pv.Rule = fmt.Sprintf("rule %s %q (%s)", rule.Action, rule.Command, rule.Origin)
		if rule.Reason != "" {
			pv.Reasons = append(pv.Reasons, rule.Reason)
		}
		trust := strings.HasPrefix(rule.Origin, "trust ")
		switch {
		case trust && pv.Category != ReadOnly && pv.Category != Mutating && pv.Category != Unknown:
			// A trust window (a pattern granted with one key) never
			// covers what reaches past the project:
			// npm run build --script-shell=X stays what it was.
			act = max(act, p.defaults[pv.Category])
			pv.Rule = fmt.Sprintf("default: %s → %s (a trust does not cover it)", pv.Category, act)
		case act != AllowWithCheckpoint:
		case act == AllowWithCheckpoint && p.defaults[pv.Category] != Allow && !inProject(penv.Cwd, env.Home):
			act = max(p.defaults[pv.Category], Ask)
			pv.Rule = "allow_with_checkpoint applies inside a project: this part runs elsewhere"
			pv.Reasons = append(pv.Reasons, "allow_with_checkpoint applies inside a project (a git repository other than your home): "+orWhere(penv.Cwd)+" is not one")
		case p.defaults[pv.Category] == Allow:
			// A checkpoint rule loosens what would ask; it never makes
			// what passes on its own wait for a checkpoint.
			act = Allow
		case pv.Category != Mutating && pv.Category != Unknown:
			// Nor does it cover what reaches past the project: the
			// network, destruction, the host (go build -toolexec=X,
			// npm test --script-shell=X): the category's default holds.
			act = p.defaults[pv.Category]
			pv.Rule = fmt.Sprintf("default: %s → %s (a checkpoint does not cover it)", pv.Category, act)
		}
	}
	carries := pt.carries
	for _, sc := range pt.scripts {
		// make -f FILE: a file of code outside the project is code the
		// line brings, not the project's own.
		abs, ok := resolve(sc.w.val, sc.cwd, env, true)
		if sc.w.dyn || !ok || !inRoots(abs, env.Roots) {
			where := sc.w.src
			if ok && !sc.w.dyn {
				where = abs
			}
			why := sc.how + " runs code from " + where + ", outside the project"
			carries = append(carries, why)
			pv.Reasons = append(pv.Reasons, why)
		}
	}
	if len(carries) > 0 && act < Ask {
		// Code, a program or options the line brings with it
		// (TAR_OPTIONS=--to-command=sh, make --eval=…) pass no rule and
		// no default: "allow go test *" means the tests, not
		// LD_PRELOAD=x go test, and a checkpoint cannot undo what such
		// code did outside the project.
		if act == AllowWithCheckpoint {
			pv.Reasons = append(pv.Reasons, "allow_with_checkpoint does not cover code the line brings with it ("+carries[0]+")")
		}
		act = max(act, p.defaults[pv.Category], Ask)
		pv.Rule = "the line brings code of its own: " + strings.Join(carries, "; ")
	}
	risk := baseRisk(pv.Category)
	check := func(ref pathRef, access string) Action {
		a, r, why := p.pathVerdict(ref, access, env)
		if a > act {
			pv.Rule = why
		}
		act, risk = max(act, a), max(risk, r)
		if why != "" {
			pv.Reasons = append(pv.Reasons, why)
		}
		return a
	}
	for _, wr := range pt.writes {
		a := check(wr, "write")
		if g := grantFor(wr, a, env); g != "" && !slices.Contains(pv.grants, g) {
			pv.grants = append(pv.grants, g)
		}
		if wr.w.dyn {
			continue
		}
		if wr.into != nil && pv.Category != Destructive {
			// cp f DIR/: what lands in DIR is judged, not DIR as a
			// whole: copying a file into /tmp does not destroy /tmp,
			// though /tmp holds the home directory.
			if la, lr, why := p.landing(wr, a, env); why != "" && (la > act || la == Deny) {
				if la > act {
					pv.Rule = why
				}
				act, risk = max(act, la), max(risk, lr)
				pv.Reasons = append(pv.Reasons, why)
			}
			continue
		}
		if pv.Category == Destructive || strings.Contains(wr.how, "operand") || strings.Contains(wr.how, "destination") {
			if abs, ok := resolve(wr.w.val, wr.cwd, env, false); ok && holdsProtected(abs, env.Home) {
				act, risk = Deny, Critical
				why := destroys(abs)
				pv.Rule = why
				pv.Reasons = append(pv.Reasons, why)
			}
		}
	}
	for _, rd := range pt.reads {
		check(rd, "read")
	}
	if recursive(pt.words) {
		for _, rd := range pt.reads {
			if abs, ok := resolve(rd.w.val, rd.cwd, env, false); ok && !rd.w.dyn && holdsProtected(abs, env.Home) {
				why := "reads " + abs + " recursively, credentials included"
				if act < Ask {
					pv.Rule = why
				}
				act, risk = max(act, Ask), max(risk, High)
				pv.Reasons = append(pv.Reasons, why)
				break
			}
		}
	}
	pv.Action = act
	var notes []string
	pv.hosts, notes = p.partHosts(pt, penv.Cwd)
	pv.Reasons = append(pv.Reasons, notes...)
	return pv, risk
}

func destroys(abs string) string {
	return "destroys " + abs + ", which holds the home directory or the system"
}

// landing judges what a copy, move or link puts into destination wr (cp
// a b DIR/, mv -t DIR a): when the destination is a directory, each
// operand lands in it under its own name, and that path is judged (cp
// .bashrc ~/ writes ~/.bashrc; cp -r src/. ~ fills the home directory
// itself). Otherwise the destination is the path itself, and one that
// holds the home directory or the system is destroyed. dest is the
// destination's own path verdict: a landing's verdict counts only where
// it is stricter.
func (p *Policy) landing(wr pathRef, dest Action, env Env) (Action, Risk, string) {
	abs, ok := resolve(wr.w.val, wr.cwd, env, false)
	if !ok {
		return Allow, Low, ""
	}
	if !wr.dir {
		fi, err := os.Stat(abs)
		wr.dir = err == nil && fi.IsDir()
	}
	if !wr.dir {
		if holdsProtected(abs, env.Home) {
			return Deny, Critical, destroys(abs)
		}
		return Allow, Low, ""
	}
	act, risk, why := Allow, Low, ""
	for _, src := range wr.into {
		if src.dyn {
			if holdsProtected(abs, env.Home) {
				return Deny, Critical, "puts " + src.src + " into " + abs + ", which holds the home directory or the system, under a name known only when the line runs"
			}
			continue
		}
		name := src.val
		if name == "~" || strings.HasPrefix(name, "~/") {
			name = env.Home + name[1:]
		}
		l := filepath.Join(abs, filepath.Base(name))
		if holdsProtected(l, env.Home) {
			return Deny, Critical, destroys(l)
		}
		if a, r, w := p.pathVerdict(pathRef{w: word{val: l, src: l}, how: wr.how}, "write", env); a > max(act, dest) {
			act, risk, why = a, r, w
		}
	}
	return act, risk, why
}

// grantFor is the path an approved run of the part may write outside the
// project (Verdict.Grants) for its write wr, whose path verdict is a:
// a literal path outside the roots that a person may allow (a is at most
// ask), never a device, /proc or /sys, nor /. "" when there is none.
func grantFor(wr pathRef, a Action, env Env) string {
	if a > Ask || wr.w.dyn || strings.ContainsAny(wr.w.val, "*?[") {
		return ""
	}
	if named, ok := resolve(wr.w.val, wr.cwd, env, false); !ok || a == Allow && inRoots(named, env.Roots) {
		return "" // the project's own (most writes): no symlinks to resolve again
	}
	abs, ok := resolve(wr.w.val, wr.cwd, env, true)
	if !ok || inRoots(abs, env.Roots) || abs == "/" || selfPath(abs) {
		return ""
	}
	for _, d := range []string{"/dev", "/proc", "/sys"} {
		if under(abs, d) {
			return ""
		}
	}
	if h := filepath.Clean(env.Home); env.Home != "" && h != "/" && under(abs, h) {
		// The home's dot directories hold what other programs trust
		// later, unconfined: caches (~/.cache/go-build), toolchains,
		// settings, startup files. A write there is planting; no
		// approval of a line opens it (the person can still run it
		// unconfined, U, seeing that).
		if rel, err := filepath.Rel(h, abs); err == nil && rel != "." && strings.HasPrefix(rel, ".") {
			return ""
		}
	}
	return abs
}

// commandRule finds the strictest user or default rule matching the part.
func (p *Policy) commandRule(pt *part, env Env) (Action, *Rule) {
	if len(pt.words) == 0 {
		return 0, nil
	}
	argv := pt.words
	if pt.name != "" && pt.name != argv[0].val {
		argv = append([]word{{val: pt.name, src: argv[0].src}}, argv[1:]...)
	}
	var best *Rule
	try := func(rs []*Rule) {
		for _, r := range rs {
			if !matchWords(r.words, argv) || r.Project != "" && !under(env.Cwd, r.Project) {
				continue
			}
			// The strictest matching rule wins, except that the embedded
			// default's allow_with_checkpoint rules give way to a rule of
			// the person's own: their "allow go test *" means allow.
			switch {
			case best == nil:
				best = r
			case best.Action == AllowWithCheckpoint && best.Origin == OriginDefault && r.Origin != OriginDefault:
				best = r
			case r.Action == AllowWithCheckpoint && r.Origin == OriginDefault && best.Origin != OriginDefault:
			case r.Action > best.Action:
				best = r
			}
		}
	}
	if !argv[0].dyn {
		try(p.cmdRules[argv[0].val])
	}
	try(p.cmdRules["*"])
	if best == nil {
		return 0, nil
	}
	return best.Action, best
}

// pathVerdict judges one path a part writes or reads: path rules first
// (strictest wins), then, for writes, the jail.
func (p *Policy) pathVerdict(ref pathRef, access string, env Env) (Action, Risk, string) {
	if ref.w.dyn {
		act, risk, why := Allow, Low, ""
		if access == "write" {
			act, risk, why = Ask, Medium, "writes to a path computed at run time ("+ref.w.src+")"
		}
		// The literal parts still tell where it is: /proc/$PPID/environ
		// is some process's environment whatever the pid. Each computed
		// part stands for one path element; a rule that matches then is
		// at least what the path gets.
		if sk, ok := skeleton(ref.w.src); ok {
			if abs, ok := resolve(sk, ref.cwd, env, false); ok {
				if a, r, w, matched := p.pathRule(abs, access, env); matched && a > act {
					act, risk, why = a, r, w+" (a path computed at run time: "+ref.w.src+")"
				}
			}
		}
		return act, risk, why
	}
	if strings.ContainsAny(ref.w.val, "*?[") {
		return p.globVerdict(ref, access, env)
	}
	abs, ok := resolve(ref.w.val, ref.cwd, env, access == "write")
	if !ok {
		if access == "write" {
			return Ask, Medium, "writes to " + ref.w.val + " relative to a directory computed at run time"
		}
		return Allow, Low, ""
	}
	if a, r, why, matched := p.pathRule(abs, access, env); matched {
		return a, r, why
	}
	if access == "write" && selfPath(abs) {
		// Written, /dev/stdin or /dev/fd/3 opens again whatever file
		// the descriptor holds (cmd <f >/dev/stdin overwrites f).
		return Ask, High, fmt.Sprintf("writes %s, which opens again whatever file that descriptor of the command holds", abs)
	}
	if access == "write" && !inRoots(abs, env.Roots) {
		if len(env.Roots) == 0 {
			return Ask, High, fmt.Sprintf("writes %s, and there is no project to hold it (the home directory and / are none)", abs)
		}
		return Ask, High, fmt.Sprintf("writes %s, outside the project (%s)", abs, strings.Join(env.Roots, ", "))
	}
	return Allow, Low, ""
}

// dynPart finds the parts of a word's source computed when the line
// runs: ${…}, $(…), `…`, $NAME, $1, $?….
var dynPart = lazyRegexp("\\$\\{[^}]*\\}|\\$\\([^)]*\\)|`[^`]*`|\\$[A-Za-z_][A-Za-z_0-9]*|\\$[0-9@*#?$!-]")

// skeleton is a computed path's source with each computed part replaced
// by one path element and quotes removed; false when nothing is left to
// go by.
func skeleton(src string) (string, bool) {
	sk := dynPart().ReplaceAllString(src, "X")
	sk = strings.NewReplacer(`"`, "", "'", "").Replace(sk)
	if strings.ContainsAny(sk, "$`\\*?[") || sk == "X" || !strings.Contains(sk, "/") {
		return "", false
	}
	return sk, true
}

// globVerdict judges a path pattern the shell will expand: every file it
// matches now is judged, and a write to a pattern asks, since what it will
// match when the line runs is not known.
func (p *Policy) globVerdict(ref pathRef, access string, env Env) (Action, Risk, string) {
	abs, ok := resolve(ref.w.val, ref.cwd, env, false)
	act, risk, why := Allow, Low, ""
	if access == "write" {
		act, risk, why = Ask, Medium, "writes to a pattern the shell expands ("+ref.w.val+")"
	}
	if !ok {
		return act, risk, why
	}
	// The pattern itself, read as a name, already falls under rules such
	// as ~/.ssh/** (cat ~/.ssh/*.pub); then every file it matches now.
	if a, r, w := p.pathRuleVerdict(abs, access, env); a > act {
		act, risk, why = a, r, w
	}
	// A pattern over hidden files, inside a hidden directory or directly
	// in the home directory (~/.bash*c, ~/.ss?/…, .git/hook?/…) may reach
	// protected files that do not exist yet: treat it as protected.
	if sensitiveGlob(abs, env.Home) && (access == "write" || strings.Contains(ref.w.val, "/")) {
		if access == "write" && act < Deny {
			act, risk, why = Deny, Critical, "writes through a pattern over hidden or home files ("+ref.w.val+")"
		} else if access == "read" && act < Ask {
			act, risk, why = Ask, High, "reads through a pattern over hidden or home files ("+ref.w.val+")"
		}
	}
	matches, complete := boundedGlob(abs)
	if dir, base := filepath.Split(abs); complete && len(matches) == 0 && !strings.ContainsAny(base, "*?[") {
		// The file may not exist yet (it is being written): expand the
		// directories it would land in.
		var dirs []string
		dirs, complete = boundedGlob(filepath.Clean(dir))
		for _, d := range dirs {
			matches = append(matches, filepath.Join(d, base))
		}
	}
	if !complete && act < Ask {
		// One line must not hold the judge (and every request behind it)
		// on a walk of the whole file system.
		act, risk, why = Ask, Medium, fmt.Sprintf("the pattern %s names more files than the judge looks at (%d directory entries, %s)", ref.w.val, globEntries, globTime)
	}
	for i, m := range matches {
		if i == 64 {
			break
		}
		a, r, w := p.pathVerdict(pathRef{w: word{val: m, src: m}, how: ref.how}, access, env)
		if a > act {
			why = w
		}
		act, risk = max(act, a), max(risk, r)
	}
	return act, risk, why
}

// pathRule applies the strictest path rule matching abs, if any.
func (p *Policy) pathRule(abs, access string, env Env) (Action, Risk, string, bool) {
	var best *Rule
	for _, r := range p.pathRules {
		if r.Access != "any" && r.Access != access {
			continue
		}
		if (best == nil || r.Action > best.Action) && p.pathMatch(r, abs, env) {
			best = r
		}
	}
	if best == nil {
		return Allow, Low, "", false
	}
	switch best.Action {
	case Deny:
		return Deny, Critical, fmt.Sprintf("%s %s: %s (path rule %s)", verb(access), abs, reasonOr(best, "denied"), best.Origin), true
	case Ask:
		return Ask, High, fmt.Sprintf("%s %s: %s (path rule %s)", verb(access), abs, reasonOr(best, "a person should see it"), best.Origin), true
	}
	return Allow, Low, "", true
}

// pathRuleVerdict is pathRule without the "matched" flag.
func (p *Policy) pathRuleVerdict(abs, access string, env Env) (Action, Risk, string) {
	a, r, why, _ := p.pathRule(abs, access, env)
	return a, r, why
}

// sensitiveGlob reports a pattern with a wildcard component that is
// hidden (starts with '.'), or whose parent is hidden or the home
// directory.
func sensitiveGlob(abs, home string) bool {
	parent := ""
	for _, c := range strings.Split(abs, "/") {
		if strings.ContainsAny(c, "*?[") {
			if strings.HasPrefix(c, ".") || strings.HasPrefix(filepath.Base(parent), ".") || (home != "" && parent == home) {
				return true
			}
		}
		if parent == "/" {
			parent = "/" + c
		} else if parent == "" && c == "" {
			parent = "/"
		} else {
			parent = parent + "/" + c
		}
	}
	return false
}

func verb(access string) string {
	if access == "write" {
		return "writes"
	}
	return "reads"
}

func reasonOr(r *Rule, def string) string {
	if r.Reason != "" {
		return r.Reason
	}
	return def
}

// pathMatch matches a path rule against an absolute path.
func (p *Policy) pathMatch(r *Rule, abs string, env Env) bool {
	for _, a := range r.alts {
		if matchAlt(a, abs, env) {
			return true
		}
	}
	return false
}

func matchAlt(a alt, abs string, env Env) bool {
	g := a.glob
	switch {
	case strings.HasPrefix(g, "./"):
		for _, root := range env.Roots {
			if ok, _ := doublestar.Match(filepath.Join(root, g[2:]), abs); ok {
				return true
			}
		}
		return false
	case !strings.Contains(g, "/"):
		ok, _ := doublestar.Match(g, filepath.Base(abs))
		return ok
	case a.prefix != "" && !strings.HasPrefix(abs, a.prefix):
		return false
	case a.needle != "" && !strings.Contains(abs, a.needle):
		return false
	case strings.HasPrefix(g, "**/"):
		if ok, _ := doublestar.Match(g[3:], strings.TrimPrefix(abs, "/")); ok {
			return true
		}
	}
	ok, _ := doublestar.Match(g, abs)
	return ok
}

// resolve makes a path absolute the way the shell would see it: ~ expanded,
// relative paths against the command's directory, cleaned. For a write,
// symlinks in the part that exists are resolved too (a link in the project
// pointing at ~/.ssh makes a write there a write to ~/.ssh); reads are
// judged by name, which costs no system calls. A link the line itself
// creates before writing through it is beyond any check made before the
// line runs; the runner's jail is the guard there.
func resolve(p string, cwd word, env Env, follow bool) (string, bool) {
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		p = env.Home + p[1:]
	case strings.HasPrefix(p, "~"):
		// ~user/…: judged as if it were this user's home, so that the
		// protections of ~/… cannot be sidestepped by naming oneself.
		if i := strings.IndexByte(p, '/'); i > 0 {
			p = env.Home + p[i:]
		} else {
			p = env.Home
		}
	case filepath.IsAbs(p):
	default:
		if cwd.dyn {
			return "", false
		}
		dir := cwd.val
		if dir == "" {
			dir = env.Cwd
		}
		if dir == "~" || strings.HasPrefix(dir, "~/") {
			dir = env.Home + dir[1:]
		}
		p = filepath.Join(dir, p)
	}
	p = filepath.Clean(p)
	if follow && !selfPath(p) {
		// /dev/stdout, /proc/self/…: what they lead to is the running
		// command's, not the judge's.
		p = realPath(p)
	}
	return p, true
}

// realPath resolves symlinks in the longest existing prefix of p.
func realPath(p string) string {
	rest := ""
	for cur := p; ; {
		if _, err := os.Lstat(cur); err == nil {
			if r, err := filepath.EvalSymlinks(cur); err == nil {
				return filepath.Join(r, rest)
			}
			return p
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// recursive reports a command line asking its program to descend into
// directories (grep -r, rg with a directory, cp -R, tar, zip -r, find).
func recursive(ws []word) bool {
	if len(ws) == 0 {
		return false
	}
	switch ws[0].val {
	case "rg", "ag", "find", "tar", "du", "tree", "fd":
		return true
	}
	for _, w := range ws[1:] {
		if !w.dyn && (hasFlag(w.val, "-r") || hasFlag(w.val, "-R") || w.val == "--recursive" || w.val == "-a" || w.val == "--archive") {
			return true
		}
	}
	return false
}

// holdsProtected reports a path whose destruction or move takes the home
// directory, the system or a protected directory with it: /, the home
// directory and its parents, the system's top-level directories, and the
// parents of ~/.ssh, ~/.config/sluice, ~/.local/state/sluice and the like.
func holdsProtected(abs, home string) bool {
	switch abs {
	case "/", "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib64", "/boot", "/var", "/opt", "/home", "/Users", "/System", "/Library", "/root":
		return true
	}
	if home == "" {
		return false
	}
	for _, p := range []string{home, home + "/.ssh", home + "/.config/sluice", home + "/.local/state/sluice", home + "/.gnupg", home + "/.aws"} {
		if abs == p || strings.HasPrefix(p, abs+"/") {
			return true
		}
	}
	return false
}

func inRoots(abs string, roots []string) bool {
	for _, r := range roots {
		r = filepath.Clean(r)
		if abs == r || strings.HasPrefix(abs, r+string(filepath.Separator)) || r == "/" {
			return true
		}
	}
	return false
}

// hiddenRunes names the characters in line that a terminal would act on
// or not show: controls other than newline and tab, format characters
// (bidi, zero-width), line and paragraph separators, invalid UTF-8. They
// are named by code point (U+202E), so the reason itself holds none.
func hiddenRunes(line string) string {
	var found []string
	for i := 0; i < len(line); {
		r, n := rune(line[i]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRuneInString(line[i:])
		}
		name := ""
		switch {
		case r < utf8.RuneSelf:
			// ASCII: the controls are its only hidden characters (Cf,
			// Zl and Zp have none in it).
			if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f {
				name = fmt.Sprintf("U+%04X", r)
			}
		case r == utf8.RuneError && n <= 1:
			name = fmt.Sprintf("byte 0x%02X", line[i])
		case r == '\n' || r == '\t':
		case unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r):
			name = fmt.Sprintf("U+%04X", r)
		}
		i += n
		if name != "" && !slices.Contains(found, name) {
			found = append(found, name)
			if len(found) == 5 {
				found = append(found, "…")
				break
			}
		}
	}
	return strings.Join(found, " ")
}

// nestingTooDeep reports brackets nested deeper than maxNesting.
func nestingTooDeep(line string) bool {
	depth := 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '(', '{', '[':
			depth++
			if depth > maxNesting {
				return true
			}
		case ')', '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return false
}

// Bounds on the file-system look-ups a pattern makes while judging
// (variables so that a test can lower them).
var (
	globEntries = 20000
	globTime    = 50 * time.Millisecond
)

// boundedGlob is filepath.Glob within globEntries directory entries and
// globTime; complete is false when it stopped short (the matches found
// are returned). A pattern with no meta characters is looked up as it
// is.
func boundedGlob(pattern string) (matches []string, complete bool) {
	if !strings.ContainsAny(pattern, "*?[\\") {
		if _, err := os.Lstat(pattern); err == nil {
			return []string{pattern}, true
		}
		return nil, true
	}
	deadline := time.Now().Add(globTime)
	budget := globEntries
	parts := strings.Split(filepath.Clean(pattern), string(filepath.Separator))
	cur := []string{string(filepath.Separator)}
	if !filepath.IsAbs(pattern) {
		cur = []string{"."}
	}
	for i, part := range parts {
		if part == "" {
			continue
		}
		var next []string
		if !strings.ContainsAny(part, "*?[\\") {
			for _, d := range cur {
				p := filepath.Join(d, part)
				if _, err := os.Lstat(p); err == nil {
					next = append(next, p)
				}
			}
		} else {
			for _, d := range cur {
				if time.Now().After(deadline) {
					return append(matches, next...), false
				}
				f, err := os.Open(d)
				if err != nil {
					continue
				}
				names, _ := f.Readdirnames(budget + 1)
				f.Close()
				budget -= len(names)
				if budget < 0 {
					return append(matches, next...), false
				}
				sort.Strings(names)
				for _, n := range names {
					if ok, _ := filepath.Match(part, n); ok && (n[0] != '.' || strings.HasPrefix(part, ".")) {
						next = append(next, filepath.Join(d, n))
					}
				}
			}
		}
		cur = next
		if len(cur) == 0 {
			return nil, true
		}
		if i == len(parts)-1 {
			break
		}
	}
	return cur, true
}
