package policy

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// maxSubcommands is how many words after the program a proposed pattern
// keeps: "npm run build *", never "npm run build prod *".
const maxSubcommands = 2

// Propose generalises a command line a person approves into a command
// pattern for an allow rule: the program, up to two subcommand words
// (letters, digits, '-', '_' and ':', not starting with '-'), then "*".
// "go test ./pkg -run X" gives "go test *", "pytest -x tests/" gives
// "pytest *".
//
// It refuses (ok is false) a line that is not one simple command (pipes,
// lists, redirections, substitutions, prefix assignments, subshells), a
// line holding control or invisible characters, a command name computed
// at run time, and any program for which a blanket rule would hand over
// more than the approval did:
//
//   - wrappers, shells, interpreters and the builtins the engine judges in
//     code (sudo, env, xargs, sh -c, eval, python, node, …), and every
//     line the engine splits into more than one part (go test -exec CMD):
//     the rule would cover the outer program only;
//   - programs whose danger is in arguments the knowledge table cannot
//     describe (awk and sed scripts that run commands, git config keys
//     that run commands), and a fixed list that must never be blanket
//     allowed (rm, dd, mkfs*, chmod, chown, curl, wget, ssh, docker,
//     kubectl, su);
//   - any pattern whose commands the knowledge table can put in a
//     category above mutating (networked, destructive, host_escape_risk).
//     An allow rule replaces the category's default entirely, so what
//     counts is everything the pattern matches: the subcommand's own
//     category, every condition that escalates it ("git clean *" covers
//     git clean -f, which is destructive), and, when the pattern stops at
//     a program with subcommands, every subcommand below it ("git stash *"
//     covers git stash drop). Programs the table does not know are
//     unknown, which is allowed: a person approving ./gradlew build knows
//     more about it than sluice does.
//
// One exception: the host_escape_risk conditions of go build, go run,
// go test, go generate and npm run are ignored. Each only chooses the
// program that runs the project's code (go test -exec, npm run
// --script-shell); a rule for a build or a test already lets that code,
// which the agent can write, do anything.
//
// The pattern uses the name the engine matches rules against: the base
// name of a program in a system directory (/usr/bin/make lint gives
// "make lint *"), other paths as written ("./script.sh *").
func Propose(line string) (pattern string, ok bool) {
	ps, def := Proposals(line)
	if len(ps) == 0 {
		return "", false
	}
	return ps[def], true
}

// Proposals are the rule patterns a person may choose from for a command
// line they approve, narrowest first, and which of them to offer first.
// The narrowest is the command exactly as approved (its words, no *).
// When the program has subcommands the knowledge table lists ("go test",
// "git log", "npm run build"), the proposal stops there: "go test *".
// Otherwise it is the command exactly: "make test unit", never "make test
// *" (make's words are targets), "tar -czf out.tgz src", never "tar *"
// (tar's first word decides what it does). The widest offered is the
// program with up to two subcommand-like words and "*", where that is
// safe. Each candidate passes the checks Propose documents; none when
// the line is refused.
func Proposals(line string) (patterns []string, def int) {
	if hiddenRunes(line) != "" || nestingTooDeep(line) {
		return nil, 0
	}
	pr := syntax.NewParser(syntax.Variant(syntax.LangBash))
	parse := func(src string) (*syntax.File, error) { return pr.Parse(strings.NewReader(src), "") }
	f, err := parse(line)
	if err != nil || len(f.Stmts) != 1 {
		return nil, 0
	}
	st := f.Stmts[0]
	call, isCall := st.Cmd.(*syntax.CallExpr)
	if !isCall || st.Negated || st.Background || st.Coprocess || len(st.Redirs) > 0 || len(call.Assigns) > 0 || len(call.Args) == 0 {
		return nil, 0
	}
	// The words as written, before the walk splits brace expressions in
	// place; the character sets below refuse braces.
	ww := &walker{line: line}
	prog := ww.word(call.Args[0])
	if prog.dyn || !plainProgram(prog.val) {
		return nil, 0
	}
	args := make([]word, 0, len(call.Args)-1)
	for _, a := range call.Args[1:] {
		args = append(args, ww.word(a))
	}
	w := &walker{line: line}
	w.stmts(f.Stmts, false)
	// A substitution anywhere is a command of its own.
	if len(w.out) != 1 || len(w.errs) > 0 {
		return nil, 0
	}
	tools := embeddedKnowledge()
	j := &judge{k: tools, parse: parse}
	j.simple(&w.out[0])
	if len(j.parts) != 1 || len(j.notes) > 0 {
		return nil, 0
	}
	pt := j.parts[0]
	if pt.cat > Mutating || !judgedByTable(pt.label) {
		return nil, 0
	}
	name := pt.name
	if name == "" {
		name = prog.val // a program at a path the engine matches as written
	}
	if neverProposed(name) || neverProposed(path.Base(name)) {
		return nil, 0
	}
	tool := tools.get(pt.name)
	safe := func(words []string) bool {
		return pt.name == "" || tool == nil || coveredCategory(tool, pt.name, words[1:]) <= Mutating
	}
	add := func(p string) {
		if !slices.Contains(patterns, p) {
			patterns = append(patterns, p)
		}
	}

	// 1. Exactly the approved command, when every word can be a pattern
	// word as it is (no glob characters, nothing computed).
	exact := []string{shellWord(name)}
	for _, a := range pt.words[1:] { // as the engine sees them: braces expanded
		if a.dyn || strings.ContainsAny(a.val, "*?[]\x00") {
			exact = nil
			break
		}
		exact = append(exact, shellWord(a.val))
	}
	if exact != nil {
		add(strings.Join(exact, " "))
	}

	// 2. The program and the subcommands the table knows, then *; a
	// package script's name counts as part of its subcommand.
	words := []string{name}
	t := tool
	named := true // a runner's package or script is named
	for i, a := range args {
		if scriptRunners()[strings.Join(words, " ")] {
			// The next word names what runs: it stays in the pattern,
			// whatever its shape (./cmd/x, prettier, build).
			named = !a.dyn && !strings.ContainsAny(a.val, "*?[]") && !strings.HasPrefix(a.val, "-")
			if named {
				words = append(words, shellWord(a.val))
			}
			break
		}
		if a.dyn || !subcommandWord(a.val) {
			break
		}
		if t != nil && t.Sub[a.val] != nil {
			words, t = append(words, a.val), t.Sub[a.val]
			if i == len(args)-1 && scriptRunners()[strings.Join(words, " ")] {
				named = false // "npm exec" and nothing after it
			}
			continue
		}
		break
	}
	if len(words) > 1 && named && !scriptRunners()[strings.Join(words, " ")] && safe(words) {
		add(strings.Join(append(words, "*"), " "))
		def = len(patterns) - 1
	}

	// 3. The widest: up to two subcommand-like words, then *; never
	// stopping at a runner whose next word names what runs.
	wide := []string{name}
	for _, a := range args {
		if len(wide) == 1+maxSubcommands || a.dyn || !subcommandWord(a.val) {
			break
		}
		wide = append(wide, a.val)
	}
	// Never the bare program ("tar *", "make *"): at least one word of
	// what was approved stays in the pattern.
	if len(wide) > 1 && !scriptRunners()[strings.Join(wide, " ")] && safe(wide) {
		add(strings.Join(append(wide, "*"), " "))
	}
	if len(patterns) == 0 {
		return nil, 0
	}
	return patterns, def
}

// scriptRunners run a package script named by the next word: the name is
// part of what was approved (npm run build, not every script).
// The same for runners of a package or program named by the next word:
// "npm exec prettier *", never "npm exec *" (any package of the
// registry); "go run ./cmd/x *", never "go run *" (go run mod@latest).
var scriptRunners = sync.OnceValue(func() map[string]bool {
	return map[string]bool{"npm run": true, "yarn run": true, "pnpm run": true, "bun run": true, "npm run-script": true,
		"npm exec": true, "npm x": true, "pnpm exec": true, "pnpm dlx": true, "yarn dlx": true, "yarn exec": true, "bun x": true,
		"go run": true, "cargo run": true}
})

// shellWord quotes s for a pattern when it needs it.
func shellWord(s string) string {
	if q, err := syntax.Quote(s, syntax.LangBash); err == nil && q != s {
		return q
	}
	return s
}

// judgedByTable reports a part whose category came from the knowledge
// table, or from its absence, rather than from code that knows the
// program runs others (wrappers, shells, builtins, eval, tee, env
// runners).
func judgedByTable(label string) bool {
	return strings.HasPrefix(label, "knowledge: ") || label == "unknown program" || label == "path-qualified program"
}

// coveredCategory is the most severe category the knowledge table gives
// a command that "prog subs… *" matches.
func coveredCategory(t *Tool, name string, subs []string) Category {
	for _, s := range subs {
		next := t.Sub[s]
		if next == nil {
			// An operand, or a subcommand the table does not list: the
			// engine judges it by this entry, without descending.
			return worstOf(t, name, false)
		}
		t, name = next, name+" "+s
	}
	return worstOf(t, name, true)
}

// worstOf is the most severe category of an entry and its conditions,
// and with deep of every subcommand below it.
func worstOf(t *Tool, name string, deep bool) Category {
	c := max(t.Category, codeEscalations[name])
	for _, w := range t.When {
		if w.Category == HostEscape && codeRunners()[name] {
			continue
		}
		c = max(c, w.Category)
	}
	if deep {
		for s, sub := range t.Sub {
			c = max(c, worstOf(sub, name+" "+s, true))
		}
	}
	return c
}

// codeRunners are the table entries that run the project's own code,
// whose host_escape_risk conditions only pick the program running it
// (see Propose).
var codeRunners = sync.OnceValue(func() map[string]bool {
	return map[string]bool{"go build": true, "go run": true, "go test": true, "go generate": true, "npm run": true}
})

// codeEscalations are the categories the engine's code (not the table)
// can give a subcommand from its arguments: git config KEY VALUE runs
// commands for keys such as core.pager.
var codeEscalations = map[string]Category{"git config": HostEscape}

// neverProposedNames are programs Propose refuses whatever the table
// says: they destroy, reach the network or other machines, change
// ownership, or run code given in their arguments (awk, sed).
var neverProposedNames = map[string]bool{
	"rm": true, "dd": true, "shred": true, "chmod": true, "chown": true, "chgrp": true, "su": true,
	"curl": true, "wget": true, "ssh": true, "scp": true, "sftp": true, "rsync": true,
	"docker": true, "podman": true, "nerdctl": true, "finch": true, "kubectl": true, "oc": true,
	"awk": true, "gawk": true, "mawk": true, "nawk": true, "sed": true, "gsed": true, "osascript": true,
}

// neverProposedPrefixes catch versioned names: python3.12, mkfs.ext4.
var neverProposedPrefixes = []string{"python", "pypy", "node", "mkfs"}

// neverProposed reports a program Propose refuses by name.
func neverProposed(name string) bool {
	if neverProposedNames[name] || isSpecial(name) {
		return true
	}
	for _, p := range neverProposedPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// plainProgram reports a program word a pattern can hold as it is:
// letters, digits and ._+-/:@, not starting with '-'.
func plainProgram(s string) bool { return wordOf(s, "._+-/:@") }

// subcommandWord reports a word that reads as a subcommand (test, run,
// build:prod), not an option, a path, an assignment or a pattern.
func subcommandWord(s string) bool { return wordOf(s, "-_:") }

// wordOf reports a word of letters, digits and the bytes in extra, not
// empty and not starting with '-'.
func wordOf(s, extra string) bool {
	if s == "" || s[0] == '-' {
		return false
	}
	for _, c := range []byte(s) {
		if !isAlnum(c) && strings.IndexByte(extra, c) < 0 {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// Matches reports whether a command rule with pattern would match any
// simple command of line, as Check matches rules. It is false for a
// pattern that does not compile. To test many lines, use Matcher.
func (p *Policy) Matches(pattern, line string, env Env) bool {
	m, err := p.Matcher(pattern)
	if err != nil {
		return false
	}
	return m(line, env)
}

// Matcher compiles pattern as Load compiles a rule's command and returns
// a func reporting whether the rule would match any simple command of a
// line, as Check matches rules: every part the engine judges, those it
// finds inside wrappers (sudo, timeout, sh -c, find -exec), substitutions
// and lists included, with a system directory's program matched by its
// base name. A line that does not parse is matched by the pieces Check
// salvages from it (those between ;, &, | and the like that parse on
// their own: a deny or ask rule there is what the line gets); one that
// nests too deep matches nothing. The func is safe for concurrent use.
// Returns an error if pattern is not a valid command pattern.
func (p *Policy) Matcher(pattern string) (func(line string, env Env) bool, error) {
	r := &Rule{Action: Allow, Command: pattern}
	if err := p.compile(r); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	key := r.words[0]
	if strings.ContainsAny(key, "*?[") {
		key = "*"
	}
	// A policy holding this rule alone, so that matching is commandRule's.
	one := &Policy{cmdRules: map[string][]*Rule{key: {r}}}
	var fields []string
	if key != "*" {
		fields = strings.Fields(stripQuoting(key))
	}
	var match func(line string, env Env) bool
	match = func(line string, env Env) bool {
		if !mayName(line, fields) {
			return false
		}
		if nestingTooDeep(line) {
			return false
		}
		f, err := p.parse(line)
		if err != nil {
			return slices.ContainsFunc(p.salvagePieces(line), func(piece string) bool { return match(piece, env) })
		}
		w := &walker{line: line, cwd: word{val: env.Cwd, src: env.Cwd}}
		w.stmts(f.Stmts, false)
		j := &judge{k: p.tools, parse: p.parse}
		for i := range w.out {
			j.simple(&w.out[i])
		}
		for i := range j.parts {
			if _, rule := one.commandRule(&j.parts[i], env); rule != nil {
				return true
			}
		}
		return false
	}
	return match, nil
}

// mayName is a quick test that rules out most lines without parsing them:
// false means no command of line can be named by a word whose fields
// (after stripQuoting) are fields. A word the engine resolves without
// expansions is the line's text with quotes, backslashes and escaped
// newlines removed (wrappers and eval join such words with spaces), so
// each of its fields is then a substring of the stripped line. Lines with
// '$' ($'\x67o', $HOME) or '{' (brace expansion) can build names from
// other text, and are always parsed.
func mayName(line string, fields []string) bool {
	if len(fields) == 0 || strings.ContainsAny(line, "${") {
		return true
	}
	s := stripQuoting(line)
	for _, f := range fields {
		if !strings.Contains(s, f) {
			return false
		}
	}
	return true
}

// stripQuoting removes quotes, backslashes and newlines.
func stripQuoting(s string) string {
	if !strings.ContainsAny(s, "'\"\\\n") {
		return s
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '\'', '"', '\\', '\n':
			return -1
		}
		return r
	}, s)
}

// RulesMatching returns the command rules that match any simple command
// of line, as Check matches them (each part judged on its own); the line
// is parsed once, whatever the number of rules.
func (p *Policy) RulesMatching(line string, env Env) []*Rule {
	if nestingTooDeep(line) {
		return nil
	}
	f, err := p.parse(line)
	if err != nil {
		return nil
	}
	w := &walker{line: line, cwd: word{val: env.Cwd, src: env.Cwd}}
	w.stmts(f.Stmts, false)
	j := &judge{k: p.tools, parse: p.parse}
	for i := range w.out {
		j.simple(&w.out[i])
	}
	var out []*Rule
	for i := range j.parts {
		pt := &j.parts[i]
		if len(pt.words) == 0 {
			continue
		}
		argv := pt.words
		if pt.name != "" && pt.name != argv[0].val {
			argv = append([]word{{val: pt.name, src: argv[0].src}}, argv[1:]...)
		}
		var cands []*Rule
		if !argv[0].dyn {
			cands = p.cmdRules[argv[0].val]
		}
		cands = append(slices.Clone(cands), p.cmdRules["*"]...)
		for _, r := range cands {
			if matchWords(r.words, argv) && (r.Project == "" || under(env.Cwd, r.Project)) && !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}
