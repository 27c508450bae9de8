package policy

import (
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// maxDepth bounds nested re-parsing (sh -c 'sh -c "…"') and nesting of
// substitutions, so a hostile line cannot make the walk unbounded.
const maxDepth = 8

// word is one word of a simple command after quote removal. A dynamic word
// (a parameter, a substitution, arithmetic) has no value the policy can
// know; src is what was written, for display.
type word struct {
	val string
	dyn bool
	src string
}

// redirect is one redirection of a simple command.
type redirect struct {
	op     syntax.RedirOperator
	fd     string // "" for the operator's default
	target word
	hdoc   *word // a here-document or here-string body
}

// simple is one simple command the shell would run.
type simple struct {
	args    []word
	assigns []word // NAME=value prefixes, as "NAME=value"
	redirs  []redirect
	cwd     word // the directory relative paths resolve against (cd is followed)
	stdin   bool // reads a pipe: it is not the first part of a pipeline
	depth   int
	funcs   map[string]bool // functions defined on this line
}

// walker collects the simple commands of a parsed line.
type walker struct {
	line  string // the source the positions refer to
	out   []simple
	cwd   word
	funcs map[string]bool
	depth int
	errs  []string
	// bombs name functions that start copies of themselves in the
	// background or in a pipeline: fork bombs.
	bombs []string
}

func (w *walker) src(n syntax.Node) string {
	s, e := int(n.Pos().Offset()), int(n.End().Offset())
	if s < 0 || e > len(w.line) || s > e {
		return ""
	}
	return w.line[s:e]
}

func (w *walker) stmts(list []*syntax.Stmt, stdin bool) {
	for _, st := range list {
		w.stmt(st, stdin)
	}
}

func (w *walker) stmt(st *syntax.Stmt, stdin bool) {
	if st == nil {
		return
	}
	var redirs []redirect
	for _, r := range st.Redirs {
		rd := redirect{op: r.Op}
		if r.N != nil {
			rd.fd = r.N.Value
		}
		if r.Word != nil {
			rd.target = w.word(r.Word)
		}
		if r.Hdoc != nil {
			h := w.word(r.Hdoc)
			rd.hdoc = &h
		}
		if r.Op == syntax.WordHdoc && r.Word != nil {
			h := rd.target
			rd.hdoc = &h
		}
		redirs = append(redirs, rd)
	}
	w.command(st.Cmd, redirs, stdin)
}

func (w *walker) command(cmd syntax.Command, redirs []redirect, stdin bool) {
	switch c := cmd.(type) {
	case nil:
		if len(redirs) > 0 {
			w.emit(simple{redirs: redirs, stdin: stdin})
		}
	case *syntax.CallExpr:
		s := simple{redirs: redirs, stdin: stdin}
		for _, a := range c.Assigns {
			s.assigns = append(s.assigns, w.assign(a))
		}
		for _, arg := range c.Args {
			s.args = append(s.args, w.braces(arg)...)
		}
		w.emit(s)
		w.followCd(s)
	case *syntax.BinaryCmd:
		w.stmt(c.X, stdin)
		w.stmt(c.Y, stdin || c.Op == syntax.Pipe || c.Op == syntax.PipeAll)
		w.redirsOnly(redirs, stdin)
	case *syntax.Subshell:
		saved := w.cwd
		w.stmts(c.Stmts, stdin)
		w.cwd = saved
		w.redirsOnly(redirs, stdin)
	case *syntax.Block:
		w.stmts(c.Stmts, stdin)
		w.redirsOnly(redirs, stdin)
	case *syntax.IfClause:
		for cl := c; cl != nil; cl = cl.Else {
			w.stmts(cl.Cond, stdin)
			w.stmts(cl.Then, stdin)
		}
		w.redirsOnly(redirs, stdin)
	case *syntax.WhileClause:
		w.stmts(c.Cond, stdin)
		w.stmts(c.Do, stdin)
		w.redirsOnly(redirs, stdin)
	case *syntax.ForClause:
		switch l := c.Loop.(type) {
		case *syntax.WordIter:
			for _, it := range l.Items {
				w.word(it)
			}
			// for NAME in …: each turn assigns NAME.
			if l.Name != nil {
				w.emit(simple{assigns: []word{{val: l.Name.Value + "=", dyn: true, src: "for " + l.Name.Value}}, stdin: stdin})
			}
		case *syntax.CStyleLoop:
			w.arith(l.Init)
			w.arith(l.Cond)
			w.arith(l.Post)
		}
		w.stmts(c.Do, stdin)
		w.redirsOnly(redirs, stdin)
	case *syntax.CaseClause:
		w.word(c.Word)
		for _, item := range c.Items {
			for _, p := range item.Patterns {
				w.word(p)
			}
			w.stmts(item.Stmts, stdin)
		}
		w.redirsOnly(redirs, stdin)
	case *syntax.FuncDecl:
		if c.Name != nil {
			if w.funcs == nil {
				w.funcs = map[string]bool{}
			}
			w.funcs[c.Name.Value] = true
			if forksItself(c.Name.Value, c.Body) {
				w.bombs = append(w.bombs, c.Name.Value)
			}
		}
		w.stmt(c.Body, stdin)
	case *syntax.DeclClause:
		// export/declare/local/readonly: the clause itself runs nothing, but
		// its values may hold substitutions, and it may set LD_PRELOAD.
		s := simple{redirs: redirs, stdin: stdin}
		s.args = []word{{val: c.Variant.Value, src: c.Variant.Value}}
		for _, a := range c.Args {
			if a.Naked && a.Name == nil && a.Value != nil {
				s.args = append(s.args, w.word(a.Value))
				continue
			}
			s.assigns = append(s.assigns, w.assign(a))
		}
		w.emit(s)
	case *syntax.TimeClause:
		w.stmt(c.Stmt, stdin)
		w.redirsOnly(redirs, stdin)
	case *syntax.CoprocClause:
		w.stmt(c.Stmt, stdin)
		w.redirsOnly(redirs, stdin)
	case *syntax.LetClause:
		for _, e := range c.Exprs {
			w.arith(e)
		}
		w.redirsOnly(redirs, stdin)
	case *syntax.ArithmCmd:
		w.arith(c.X)
		w.emit(simple{args: []word{{val: "((", src: "(( … ))"}}, redirs: redirs, stdin: stdin})
	case *syntax.TestClause:
		w.testExpr(c.X)
		w.emit(simple{args: []word{{val: "[[", src: "[[ … ]]"}}, redirs: redirs, stdin: stdin})
	default:
		// A construct this walker does not know (zsh-only syntax, say)
		// must not pass unjudged.
		w.emit(simple{args: []word{{dyn: true, src: w.src(cmd)}}, redirs: redirs, stdin: stdin})
	}
}

// redirsOnly judges the redirections of a compound command ({ …; } > f).
func (w *walker) redirsOnly(redirs []redirect, stdin bool) {
	if len(redirs) > 0 {
		w.emit(simple{redirs: redirs, stdin: stdin})
	}
}

func (w *walker) emit(s simple) {
	s.cwd = w.cwd
	s.depth = w.depth
	s.funcs = w.funcs
	w.out = append(w.out, s)
}

// followCd tracks `cd DIR` / `pushd DIR` so later relative paths resolve
// where the shell would be. A cd the walker cannot follow makes the
// directory dynamic.
func (w *walker) followCd(s simple) {
	if len(s.args) == 0 || s.args[0].dyn {
		return
	}
	switch s.args[0].val {
	case "cd", "pushd":
	default:
		return
	}
	var target *word
	for i := 1; i < len(s.args); i++ {
		a := s.args[i]
		if !a.dyn && (a.val == "--" || (strings.HasPrefix(a.val, "-") && a.val != "-")) {
			continue
		}
		target = &s.args[i]
		break
	}
	switch {
	case target == nil:
		w.cwd = word{val: "~", src: "~"}
	case target.dyn || target.val == "-":
		w.cwd = word{dyn: true, src: target.src}
	case w.cwd.dyn && !filepath.IsAbs(target.val) && !strings.HasPrefix(target.val, "~"):
		// still dynamic
	case filepath.IsAbs(target.val) || strings.HasPrefix(target.val, "~") || w.cwd.val == "":
		w.cwd = word{val: target.val, src: target.src}
	default:
		w.cwd = word{val: filepath.Join(w.cwd.val, target.val), src: target.src}
	}
}

// maxBraceWords bounds what one word's brace expansion may produce;
// {1..1000}{1..1000}{1..1000} must not cost a billion words.
const maxBraceWords = 256

// braces expands a word's brace expressions as the shell would
// ({-r,-f} is two words), or, past maxBraceWords, keeps one dynamic word.
func (w *walker) braces(arg *syntax.Word) []word {
	if !syntax.SplitBraces(arg) {
		return []word{w.word(arg)}
	}
	var out []word
	for exp, err := range expand.BracesSeq(nil, arg) {
		if err != nil || len(out) == maxBraceWords {
			w.errs = append(w.errs, "a brace expansion makes too many words to judge ("+strings.TrimSpace(w.src(arg))+")")
			return []word{{dyn: true, src: w.src(arg)}}
		}
		wd := w.word(exp)
		if !wd.dyn {
			wd.src = wd.val // the expanded word, not the source they share
		}
		out = append(out, wd)
	}
	return out
}

func (w *walker) assign(a *syntax.Assign) word {
	name := ""
	if a.Name != nil {
		name = a.Name.Value
	}
	if a.Index != nil {
		w.arith(a.Index)
	}
	if a.Array != nil {
		for _, el := range a.Array.Elems {
			if el.Index != nil {
				w.arith(el.Index)
			}
			if el.Value != nil {
				w.word(el.Value)
			}
		}
		return word{val: name + "=", dyn: true, src: w.src(a)}
	}
	if a.Value == nil {
		// "export NAME" (naked): the variable's value, whatever an
		// earlier read or printf -v put there, goes into the
		// environment.
		return word{val: name + "=", dyn: a.Naked, src: name + "="}
	}
	v := w.word(a.Value)
	return word{val: name + "=" + v.val, dyn: v.dyn, src: w.src(a)}
}

// word resolves a word through quoting, and walks every substitution in it
// (those run whatever the word's use).
func (w *walker) word(wd *syntax.Word) word {
	if wd == nil {
		return word{}
	}
	var b strings.Builder
	dyn := w.parts(wd.Parts, &b, false)
	return word{val: b.String(), dyn: dyn, src: w.src(wd)}
}

func (w *walker) parts(parts []syntax.WordPart, b *strings.Builder, quoted bool) (dyn bool) {
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(p.Value, quoted))
		case *syntax.SglQuoted:
			if p.Dollar {
				v, err := expandANSIC(p.Value)
				if err != nil {
					dyn = true
				}
				b.WriteString(v)
			} else {
				b.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			if w.parts(p.Parts, b, true) {
				dyn = true
			}
		case *syntax.ParamExp:
			// $HOME at the start of a word is the home directory: keep it
			// as ~ so protected paths under it are still recognised.
			if b.Len() == 0 && isPlainParam(p, "HOME") {
				b.WriteString("~")
				continue
			}
			// ${HOME:-/}, ${HOME=x}, ${HOME:?}: HOME is set, so the
			// word is the home directory (its default is still walked,
			// for the substitutions it may hold).
			if b.Len() == 0 && isHomeWithDefault(p) {
				w.paramExp(p)
				b.WriteString("~")
				continue
			}
			dyn = true
			w.paramExp(p)
		case *syntax.CmdSubst:
			dyn = true
			w.nested(p.Stmts, false)
		case *syntax.ProcSubst:
			dyn = true
			w.nested(p.Stmts, p.Op == syntax.CmdOut)
		case *syntax.ArithmExp:
			dyn = true
			w.arith(p.X)
		case *syntax.ExtGlob:
			b.WriteString(p.Op.String() + p.Pattern.Value + ")")
		default:
			dyn = true
		}
	}
	return dyn
}

// isHomeWithDefault reports ${HOME-x}, ${HOME:-x}, ${HOME=x},
// ${HOME:=x}, ${HOME?x} and ${HOME:?x}: the home directory wherever HOME
// is set.
func isHomeWithDefault(p *syntax.ParamExp) bool {
	if p.Param == nil || p.Param.Value != "HOME" || p.Excl || p.Length || p.Width || p.Index != nil || p.Slice != nil ||
		p.Repl != nil || p.Names != 0 || p.Exp == nil {
		return false
	}
	switch p.Exp.Op {
	case syntax.DefaultUnset, syntax.DefaultUnsetOrNull, syntax.AssignUnset, syntax.AssignUnsetOrNull,
		syntax.ErrorUnset, syntax.ErrorUnsetOrNull:
		return true
	}
	return false
}

// isPlainParam reports $NAME or ${NAME} with no operator.
func isPlainParam(p *syntax.ParamExp, name string) bool {
	return p.Param != nil && p.Param.Value == name && !p.Excl && !p.Length && !p.Width &&
		p.Index == nil && p.Slice == nil && p.Repl == nil && p.Exp == nil && p.Names == 0
}

// nested walks the statements of a substitution one level deeper.
func (w *walker) nested(stmts []*syntax.Stmt, stdin bool) {
	if w.depth >= maxDepth {
		w.errs = append(w.errs, "substitutions nested too deep to follow")
		return
	}
	w.depth++
	saved := w.cwd
	w.stmts(stmts, stdin)
	w.cwd = saved
	w.depth--
}

// paramExp walks what a parameter expansion may run: ${X:-$(cmd)}.
func (w *walker) paramExp(p *syntax.ParamExp) {
	if p.Exp != nil && p.Exp.Word != nil {
		w.word(p.Exp.Word)
	}
	if p.Repl != nil {
		w.word(p.Repl.Orig)
		w.word(p.Repl.With)
	}
	if p.Slice != nil {
		w.arith(p.Slice.Offset)
		w.arith(p.Slice.Length)
	}
	if p.Index != nil {
		w.arith(p.Index)
	}
}

// arith walks the substitutions inside arithmetic: $(( $(cmd) + 1 )).
func (w *walker) arith(x syntax.ArithmExpr) {
	if x != nil {
		w.wordsIn(x)
	}
}

// testExpr walks the substitutions inside [[ … ]].
func (w *walker) testExpr(x syntax.TestExpr) {
	if x != nil {
		w.wordsIn(x)
	}
}

// wordsIn walks every word below n, and with it every substitution. In
// arithmetic and [[ ]] bash evaluates quoted text again ('$(cmd)' in an
// array subscript runs cmd), so a literal holding a substitution there is
// code sluice cannot judge.
func (w *walker) wordsIn(n syntax.Node) {
	syntax.Walk(n, func(n syntax.Node) bool {
		if wd, ok := n.(*syntax.Word); ok {
			if v := w.word(wd); !v.dyn && evaluable(v.val) {
				w.errs = append(w.errs, "text that bash evaluates again holds a command substitution ("+v.src+")")
			}
			return false
		}
		return true
	})
}

// evaluable reports text that runs a command if bash evaluates it again.
func evaluable(s string) bool {
	return strings.Contains(s, "$(") || strings.Contains(s, "`") || strings.Contains(s, "<(") || strings.Contains(s, ">(")
}

// unescape removes the backslashes the shell would: every one outside
// quotes (a backslash-newline disappears), and inside double quotes only
// before $ ` " \ and newline.
func unescape(s string, quoted bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		n := s[i+1]
		switch {
		case n == '\n':
			i++
		case !quoted || strings.IndexByte("$`\"\\", n) >= 0:
			b.WriteByte(n)
			i++
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// expandANSIC resolves a $'…' string's escapes.
func expandANSIC(s string) (string, error) {
	v, _, err := expand.Format(&expand.Config{}, s, nil) // a nil Config shares one buffer across goroutines
	return v, err
}

// forksItself reports whether a function's body calls the function in a
// statement run in the background or in a pipeline (each side of a pipe
// is a process of its own): every call then starts more than one copy,
// which is how a fork bomb (":(){ :|:& };:") exhausts the machine.
func forksItself(name string, body *syntax.Stmt) bool {
	calls := func(n syntax.Node) bool {
		found := false
		syntax.Walk(n, func(n syntax.Node) bool {
			if ce, ok := n.(*syntax.CallExpr); ok && len(ce.Args) > 0 && unquoted(ce.Args[0]) == name {
				found = true
			}
			return !found
		})
		return found
	}
	bomb := false
	syntax.Walk(body, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			if (n.Background || n.Coprocess) && calls(n) {
				bomb = true
			}
		case *syntax.BinaryCmd:
			if (n.Op == syntax.Pipe || n.Op == syntax.PipeAll) && calls(n.X) && calls(n.Y) {
				bomb = true
			}
		}
		return !bomb
	})
	return bomb
}

// unquoted is a word's value when it is made of literal text only, plain
// or quoted ('f', "f", f” are all f); "" otherwise.
func unquoted(w *syntax.Word) string {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return ""
				}
				b.WriteString(l.Value)
			}
		default:
			return ""
		}
	}
	return b.String()
}
