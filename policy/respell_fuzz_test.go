package policy

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// getoptLong are programs that take any unambiguous prefix of a long
// option (GNU getopt_long, git's parse-options, Python's argparse); docker
// (pflag), bash and curl do not, so their options are not abbreviated.
var getoptLong = map[string]bool{"rm": true, "cp": true, "mv": true, "ls": true, "cat": true, "chmod": true, "chown": true,
	"ln": true, "mkdir": true, "touch": true, "tee": true, "sort": true, "head": true, "tail": true, "du": true, "df": true,
	"tar": true, "grep": true, "sed": true, "diff": true, "git": true, "make": true, "wget": true, "gzip": true, "xargs": true,
	"mypy": true, "rpm": true, "install": true, "shred": true, "split": true, "cut": true, "env": true, "timeout": true}

// knownOptions are the long options the knowledge table names: only a
// real option may be abbreviated ("--con0" is none; "--con" would be
// --contains).
var knownOptions = func() map[string]bool {
	m := map[string]bool{}
	tools := generatedKnowledge()
	var add func(t *Tool)
	add = func(t *Tool) {
		for _, o := range append(append([]string{}, t.ValueOptions...), t.WriteOptions...) {
			m[o] = true
		}
		for _, c := range t.When {
			for _, f := range c.Flags {
				m[strings.TrimSuffix(f, "*")] = true
			}
		}
		for _, s := range t.Sub {
			add(s)
		}
	}
	for _, t := range tools {
		add(t)
	}
	return m
}()

func knownOption(v string) bool {
	name, _, _ := strings.Cut(v, "=")
	return strings.HasPrefix(name, "--") && knownOptions[name]
}

// optionOf reports whether the table names option v for the program in
// args (and its subcommand, when the program has them): only a program's
// own option may be abbreviated ("--file" is git config's, not git
// cat-file's).
func optionOf(args []*syntax.Word, v string) bool {
	t, name := toolFor(args, v)
	if t == nil {
		return false
	}
	if slices.Contains(t.ValueOptions, name) || slices.Contains(t.WriteOptions, name) {
		return true
	}
	for _, c := range t.When {
		for _, f := range c.Flags {
			if strings.TrimSuffix(f, "*") == name {
				return true
			}
		}
	}
	return false
}

// valueOptionOf reports whether v is a value option of the program (or
// subcommand) in args.
func valueOptionOf(args []*syntax.Word, v string) bool {
	t, name := toolFor(args, v)
	return t != nil && slices.Contains(t.ValueOptions, name)
}

// toolFor is the table entry for the program (and subcommand) in args,
// and v's option name.
func toolFor(args []*syntax.Word, v string) (*Tool, string) {
	name, _, _ := strings.Cut(v, "=")
	t := embeddedKnowledge().get(args[0].Lit())
	if t == nil {
		return nil, name
	}
	for _, w := range args[1:] {
		if sub := t.Sub[w.Lit()]; sub != nil {
			t = sub
			continue
		}
		if t.Sub != nil && !strings.HasPrefix(w.Lit(), "-") {
			break
		}
	}
	return t, name
}

// respell writes line differently without changing what it runs: every
// plain word single-quoted ('rm' '-rf' 'x'); for programs that take
// abbreviations (getoptLong), every known long option shortened by one
// character (--recursive → --recursiv); and "--opt=value" written as
// "--opt value" where --opt takes a value (getopt_long reads both
// alike). ok is false when the line does not parse or nothing changed.
func respell(line string) (string, bool) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		return "", false
	}
	changed := false
	syntax.Walk(f, func(n syntax.Node) bool {
		ce, ok := n.(*syntax.CallExpr)
		if !ok {
			return true
		}
		prog := ""
		if len(ce.Args) > 0 {
			prog = ce.Args[0].Lit()
		}
		// git's own options (before the subcommand) are exact; its
		// subcommands' take abbreviations.
		sawSub := prog != "git"
		for i, w := range ce.Args {
			if i > 0 && !sawSub && len(w.Parts) == 1 {
				if l, ok := w.Parts[0].(*syntax.Lit); ok && !strings.HasPrefix(l.Value, "-") {
					sawSub = true
				}
			}
			if len(w.Parts) != 1 {
				continue
			}
			lit, ok := w.Parts[0].(*syntax.Lit)
			if !ok || lit.Value == "" || strings.ContainsAny(lit.Value, "*?[]{}~=$`\\\"' \t\n!#&;|<>()") {
				continue
			}
			v := lit.Value
			if i > 0 && sawSub && getoptLong[prog] && knownOption(v) && optionOf(ce.Args, v) && len(v) > minLongPrefix+1 {
				name, val, hasVal := strings.Cut(v, "=")
				v = name[:len(name)-1]
				if hasVal {
					v += "=" + val
				}
			}
			w.Parts[0] = &syntax.SglQuoted{Value: v}
			changed = true
		}
		// --opt=value → --opt value, for getopt_long programs' value
		// options.
		if getoptLong[prog] {
			var args []*syntax.Word
			for i, w := range ce.Args {
				text := ""
				switch p := w.Parts[0].(type) {
				case *syntax.SglQuoted:
					text = p.Value
				case *syntax.Lit:
					text = p.Value
				}
				if i > 0 && len(w.Parts) == 1 && !strings.ContainsAny(text, "*?[]{}~$`\\\"' \t\n!#&;|<>()") {
					if name, val, has := strings.Cut(text, "="); has && strings.HasPrefix(name, "--") && valueOptionOf(ce.Args, name) && val != "" {
						args = append(args, &syntax.Word{Parts: []syntax.WordPart{&syntax.SglQuoted{Value: name}}},
							&syntax.Word{Parts: []syntax.WordPart{&syntax.SglQuoted{Value: val}}})
						changed = true
						continue
					}
				}
				args = append(args, w)
			}
			ce.Args = args
		}
		return true
	})
	if !changed {
		return "", false
	}
	var b bytes.Buffer
	if err := syntax.NewPrinter().Print(&b, f); err != nil {
		return "", false
	}
	return strings.TrimSpace(b.String()), true
}

// FuzzRespelling: the same line, respelled without changing what it runs
// (quoting, long options abbreviated), never gets a looser verdict.
func FuzzRespelling(f *testing.F) {
	for _, name := range []string{"verdicts.txt", "redteam.txt", "classes.txt"} {
		for _, c := range readTable(f, name) {
			f.Add(c.cmd)
		}
	}
	p := Default()
	f.Fuzz(func(t *testing.T, line string) {
		if len(line) > 4096 || hiddenRunes(line) != "" {
			return // hidden characters have a rule of their own
		}
		re, ok := respell(line)
		if !ok {
			return
		}
		v, rv := p.Check(line, tableEnv), p.Check(re, tableEnv)
		if rv.Action < v.Action {
			t.Fatalf("respelled, the line gets a looser verdict:\n  %q: %s %s\n  %q: %s %s (%v)", line, v.Action, v.Category, re, rv.Action, rv.Category, rv.Reasons)
		}
	})
}
