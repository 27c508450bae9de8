package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// wrapper describes a program that runs another command given on its
// command line.
type wrapper struct {
	own       Category
	reason    string
	valueOpts []string
	skip      int    // operands before the command (timeout DURATION)
	assigns   bool   // NAME=VALUE words may precede the command (env, sudo)
	shellOpt  string // an option whose value is a shell string (flock -c, env -S)
	shellLong string // its long spelling (--split-string)
	joined    bool   // the remaining words are joined and run by sh -c (watch)
	stdinArgs bool   // appends operands read from stdin (xargs)
	// writeOpts are options whose value is a file the wrapper writes
	// (time -o FILE, strace -o FILE): judged as a redirection is.
	writeOpts []string
	// lockFile: the operand before the command is a file the wrapper
	// opens for writing, creating it (flock FILE cmd).
	lockFile bool
}

var wrappers = sync.OnceValue(func() map[string]wrapper {
	return map[string]wrapper{
		"sudo": {own: HostEscape, reason: "sudo runs the command as another user (root by default)", assigns: true,
			valueOpts: []string{"-u", "--user", "-g", "--group", "-C", "--close-from", "-D", "--chdir", "-h", "--host",
				"-p", "--prompt", "-r", "--role", "-t", "--type", "-U", "--other-user", "-T", "--command-timeout"}},
		"doas":       {own: HostEscape, reason: "doas runs the command as another user (root by default)", valueOpts: []string{"-u", "-C"}},
		"env":        {assigns: true, shellOpt: "-S", shellLong: "--split-string", valueOpts: []string{"-u", "--unset", "-C", "--chdir", "-S", "--split-string", "-P"}},
		"nice":       {valueOpts: []string{"-n", "--adjustment"}},
		"nohup":      {},
		"timeout":    {skip: 1, valueOpts: []string{"-s", "--signal", "-k", "--kill-after"}},
		"gtimeout":   {skip: 1, valueOpts: []string{"-s", "--signal", "-k", "--kill-after"}},
		"time":       {valueOpts: []string{"-f", "--format", "-o", "--output"}, writeOpts: []string{"-o", "--output"}},
		"stdbuf":     {valueOpts: []string{"-i", "-o", "-e", "--input", "--output", "--error"}},
		"ionice":     {valueOpts: []string{"-c", "--class", "-n", "--classdata", "-p", "--pid", "-P", "--pgid", "-u", "--uid"}},
		"setsid":     {},
		"watch":      {joined: true, valueOpts: []string{"-n", "--interval", "-q", "--equexit", "--no-rerun"}},
		"flock":      {skip: 1, lockFile: true, shellOpt: "-c", shellLong: "--command", valueOpts: []string{"-w", "--timeout", "-E", "--conflict-exit-code", "-c", "--command"}},
		"builtin":    {},
		"exec":       {valueOpts: []string{"-a"}},
		"caffeinate": {valueOpts: []string{"-t", "-w"}},
		"unbuffer":   {},
		"taskset":    {skip: 1, valueOpts: []string{"-p", "--pid"}},
		"chrt":       {skip: 1, valueOpts: []string{"-p", "--pid", "-T", "-P", "-D"}},
		"prlimit":    {valueOpts: []string{"-p", "--pid", "-o", "--output"}},
		"chronic":    {},
		"xargs": {stdinArgs: true, valueOpts: []string{"-n", "--max-args", "-I", "-L", "--max-lines", "-P", "--max-procs",
			"-d", "--delimiter", "-a", "--arg-file", "-E", "-s", "--max-chars", "--process-slot-var"}},
		"strace": {own: Mutating, reason: "strace traces (and can tamper with) the command",
			valueOpts: []string{"-o", "-e", "-p", "-s", "-u", "-E", "-P", "-I", "-b", "-a", "-X", "--output"}, writeOpts: []string{"-o", "--output"}},
		"ltrace": {own: Mutating, reason: "ltrace traces the command", valueOpts: []string{"-o", "-e", "-p", "-s", "-u", "-n", "-a", "--output"},
			writeOpts: []string{"-o", "--output"}},
	}
})

var shells = sync.OnceValue(func() map[string]bool {
	return map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true, "fish": true, "yash": true, "busybox": true}
})

// interpreters maps each interpreter to its inline-code options.
var interpreters = sync.OnceValue(func() map[string][]string {
	return map[string][]string{
		"python": {"-c"}, "python2": {"-c"}, "python3": {"-c"}, "pypy": {"-c"}, "pypy3": {"-c"},
		"node": {"-e", "-p", "--eval", "--print"}, "nodejs": {"-e", "-p", "--eval", "--print"},
		"deno": {}, "bun": {"-e", "--eval", "-p", "--print"},
		"ruby": {"-e"}, "perl": {"-e", "-E"}, "php": {"-r"}, "lua": {"-e"}, "luajit": {"-e"},
		"Rscript": {"-e"}, "pwsh": {"-c", "-Command", "-EncodedCommand"}, "powershell": {"-c", "-Command"},
		"tclsh": {}, "jshell": {}, "irb": {}, "groovy": {"-e"}, "julia": {"-e", "--eval"}, "scala": {"-e"},
	}
})

// textRunners are the names that run text as code (now, later, in this
// shell, or in other applications): the category each escalates to and
// why. eval's string and alias's expansions are judged as well.
var textRunners = map[string]struct {
	cat    Category
	reason string
}{
	"osascript": {HostEscape, "osascript drives other applications (it can type into this console)"},
	"eval":      {Unknown, "eval runs a string as shell code"},
	"source":    {Unknown, "source runs a script file in the current shell"},
	".":         {Unknown, ". runs a script file in the current shell"},
	"trap":      {Unknown, "trap runs a string as shell code later"},
	"alias":     {Mutating, "alias changes what later command names run"},
}

// isSpecial reports names judged in code rather than by the table.
func isSpecial(prog string) bool {
	if _, ok := wrappers()[prog]; ok {
		return true
	}
	if _, ok := interpreters()[prog]; ok {
		return true
	}
	switch prog {
	case "eval", "source", ".", "command", "tee", "trap", "alias", "hash", "exec", "builtin", "printf", "test", "[", "let", "compgen":
		return true
	}
	return shells()[prog]
}

// special judges programs that run other programs: wrappers, shells,
// interpreters, eval and source, and the shell builtins that need no
// table. It reports whether it handled argv.
func (j *judge) special(prog string, args []word, s *simple, pt *part, depth int) bool {
	if w, ok := wrappers()[prog]; ok {
		j.wrapped(prog, w, args, s, pt, depth)
		return true
	}
	if shells()[prog] {
		j.shell(prog, args, s, pt, depth)
		return true
	}
	if strings.HasPrefix(prog, "python3.") {
		prog = "python3"
	}
	if inline, ok := interpreters()[prog]; ok {
		if t := j.k.get(prog); t != nil && t.Sub != nil && len(args) > 1 && !args[1].dyn && t.Sub[args[1].val] != nil {
			return false // bun install, deno test: the table knows these
		}
		j.interpreter(prog, inline, args, s, pt, depth)
		return true
	}
	if r, ok := textRunners[prog]; ok {
		pt.escalate(r.cat, r.reason)
		pt.label = prog
		j.parts = append(j.parts, *pt)
		switch prog {
		case "eval":
			if lit := literalJoin(args[1:]); lit != "" {
				j.shellString(lit, s, depth+1)
			}
		case "alias":
			// What an alias expands to runs when its name is used: judge it.
			for _, a := range args[1:] {
				if _, val, ok := strings.Cut(a.val, "="); ok {
					j.runString(word{val: val, dyn: a.dyn, src: a.src}, "alias", s, depth)
				}
			}
		}
		return true
	}
	switch prog {
	case "command":
		for _, a := range args[1:] {
			if !a.dyn && (a.val == "-v" || a.val == "-V") {
				pt.label = "command -v (looks a name up)"
				j.parts = append(j.parts, *pt)
				return true
			}
		}
		j.wrapped(prog, wrapper{}, args, s, pt, depth)
		return true
	case "tee":
		for _, o := range operands(splitArgs(args[1:], nil)) {
			if o.dyn || !j.sink(o.val) {
				pt.writes = append(pt.writes, pathRef{w: o, cwd: s.cwd, how: "tee"})
			}
		}
		pt.label = "tee"
		if len(pt.writes) > 0 {
			pt.escalate(Mutating, "tee writes to a file")
		}
		j.parts = append(j.parts, *pt)
		return true
	case "hash":
		for _, a := range args[1:] {
			if a.dyn || strings.HasPrefix(a.val, "-") && strings.Contains(a.val, "p") {
				pt.escalate(Unknown, "hash -p changes which program a name runs")
			}
		}
		pt.label = "shell builtin"
		j.finish(prog, args, s, pt, depth)
		return true
	case "cd", "pushd", "popd", "dirs", "exit", "return", "break", "continue", "shift", "wait", "jobs", "set",
		"unset", "read", "readarray", "mapfile", "getopts", "shopt", "umask", "ulimit", ":", "local", "declare",
		"typeset", "export", "readonly", "[[", "((", "let", "compgen", "printf", "test", "[":
		pt.label = "shell builtin"
		// These evaluate some arguments again (array subscripts of names
		// given to printf -v, read, declare, unset, test -v; let's and
		// compgen -W's words): quoted text holding $(…) there runs.
		for _, a := range args[1:] {
			if !a.dyn && evaluable(a.val) {
				pt.escalate(Unknown, prog+" may evaluate "+a.src+" as code")
			}
		}
		if prog == "printf" || prog == "test" || prog == "[" {
			j.known(prog, args, pt)
		}
		if prog == "compgen" {
			for k, a := range args[1:] {
				if !a.dyn && (a.val == "-C" || a.val == "-F") {
					pt.escalate(Unknown, "compgen "+a.val+" runs a command or function")
					if a.val == "-C" && k+2 < len(args) {
						j.parts = append(j.parts, *pt)
						j.runString(args[k+2], "compgen -C", s, depth)
						return true
					}
				}
			}
		}
		j.finish(prog, args, s, pt, depth)
		return true
	case "docker", "podman", "nerdctl":
		return j.containerExec(prog, args, s, pt, depth)
	case "kubectl", "oc":
		return j.kubectlExec(prog, args, s, pt, depth)
	case "devbox", "mise", "rtx", "direnv", "nix-shell", "poetry", "uv", "pipenv", "pdm", "hatch", "bundle":
		return j.envRunner(prog, args, s, pt, depth)
	}
	return false
}

// wrapped records the wrapper's own part and judges the command it runs.
func (j *judge) wrapped(prog string, w wrapper, args []word, s *simple, pt *part, depth int) {
	pt.label = "wrapper " + prog
	if w.own != 0 {
		pt.escalate(w.own, w.reason)
	}
	if pid, changes := onProcess(prog, args); pid {
		// prlimit --pid N, ionice -p N, taskset -p, chrt -p: no command
		// is started; a running process is looked at or changed.
		pt.label = prog + " on a running process"
		if changes {
			pt.escalate(Mutating, prog+" changes the limits, priority or CPU affinity of a running process")
		}
		j.parts = append(j.parts, *pt)
		return
	}
	rest := args[1:]
	i := 0
	replace, replStr := false, ""
	for i < len(rest) {
		a := rest[i]
		if a.dyn {
			break
		}
		if a.val == "--" {
			i++
			break
		}
		if strings.HasPrefix(a.val, "-") && len(a.val) > 1 {
			if v, ok, next := shellOptValue(a.val, w, rest, i); ok {
				if next && (i+1 >= len(rest) || rest[i+1].dyn) {
					pt.escalate(Unknown, prog+" "+w.shellOpt+" runs a string computed at run time")
					j.parts = append(j.parts, *pt)
					return
				}
				if next {
					v = rest[i+1].val
				}
				j.parts = append(j.parts, *pt)
				j.shellString(v, s, depth+1)
				return
			}
			if prog == "xargs" {
				switch {
				case a.val == "-I" && i+1 < len(rest):
					replace, replStr = true, rest[i+1].val
				case strings.HasPrefix(a.val, "-I"):
					replace, replStr = true, a.val[2:]
				case a.val == "-i" || a.val == "--replace":
					replace, replStr = true, "{}"
				case strings.HasPrefix(a.val, "-i"):
					replace, replStr = true, a.val[2:]
				case strings.HasPrefix(a.val, "--replace="):
					replace, replStr = true, strings.TrimPrefix(a.val, "--replace=")
				}
			}
			ow := opword{w: a, option: true}
			if takesValue(a.val, w.valueOpts) && i+1 < len(rest) {
				ow.value = &rest[i+1]
			}
			for _, wo := range w.writeOpts {
				if v, ok := optionValue(ow, wo); ok {
					j.output(pt, v, s.cwd, prog+" "+wo)
				}
			}
			if takesValue(a.val, w.valueOpts) {
				i++
			}
			i++
			continue
		}
		if w.assigns && strings.Contains(a.val, "=") && !strings.HasPrefix(a.val, "=") && validName(a.val[:strings.IndexByte(a.val, '=')]) {
			checkAssign(pt, a)
			i++
			continue
		}
		break
	}
	inner := rest[min(i, len(rest)):] // an option's value may be missing
	if w.lockFile && len(inner) > 0 && (inner[0].dyn || !isFD(inner[0].val)) {
		// flock FILE cmd opens FILE for writing, creating it; flock FD
		// locks a descriptor the shell opened.
		j.output(pt, inner[0], s.cwd, prog+" lock file")
	}
	if w.skip > 0 {
		if len(inner) <= w.skip {
			inner = nil
		} else {
			inner = inner[w.skip:]
		}
	}
	// flock FILE -c STRING: the shell option may follow the operand.
	if w.shellOpt != "" && len(inner) > 0 && !inner[0].dyn && inner[0].val == w.shellOpt {
		j.parts = append(j.parts, *pt)
		if len(inner) > 1 {
			j.runString(inner[1], prog+" "+w.shellOpt, s, depth)
		}
		return
	}
	j.parts = append(j.parts, *pt)
	if len(inner) == 0 {
		return
	}
	if w.joined {
		if lit := literalJoin(inner); lit != "" {
			j.shellString(lit, s, depth+1)
		} else {
			j.unknownPart(inner, prog+" runs a command line computed at run time")
		}
		return
	}
	if w.stdinArgs && !replace {
		inner = append(inner[:len(inner):len(inner)], word{dyn: true, src: "<arguments from stdin>"})
	}
	if replace && replStr != "" {
		// Each word holding the replace string gets text from stdin:
		// xargs -I{} sh -c 'echo {}' runs whatever the input says.
		inner = slices.Clone(inner)
		for k, wd := range inner {
			if !wd.dyn && strings.Contains(wd.val, replStr) {
				inner[k] = word{dyn: true, src: wd.src}
			}
		}
	}
	j.command(inner, s, part{cat: ReadOnly}, depth+1)
}

// shellOptValue recognises a wrapper's shell-string option in any
// spelling: "-S STR", "-SSTR", "-vS STR", "-iSSTR", "--split-string STR",
// "--split-string=STR". next says the string is the following word.
func shellOptValue(v string, w wrapper, rest []word, i int) (string, bool, bool) {
	if w.shellOpt == "" {
		return "", false, false
	}
	if w.shellLong != "" {
		if v == w.shellLong {
			return "", true, true
		}
		if strings.HasPrefix(v, w.shellLong+"=") {
			return v[len(w.shellLong)+1:], true, false
		}
	}
	if len(w.shellOpt) == 2 && len(v) >= 2 && v[0] == '-' && v[1] != '-' {
		if k := strings.IndexByte(v[1:], w.shellOpt[1]); k >= 0 {
			attached := v[k+2:]
			if attached == "" {
				return "", true, true
			}
			return strings.TrimPrefix(attached, "="), true, false
		}
	}
	return "", false, false
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// literalJoin joins words with spaces, or returns "" if any is dynamic.
func literalJoin(ws []word) string {
	vals := make([]string, len(ws))
	for i, w := range ws {
		if w.dyn {
			return ""
		}
		vals[i] = w.val
	}
	return strings.Join(vals, " ")
}

func (j *judge) unknownPart(ws []word, reason string) {
	p := part{words: ws, cat: Unknown, label: "unknown", reasons: []string{reason}}
	j.parts = append(j.parts, p)
}

// shellString parses src as a shell line and judges every command in it.
func (j *judge) shellString(src string, s *simple, depth int) {
	if depth > maxDepth {
		j.unknownPart([]word{{val: src, src: src}}, "shell code nested too deep to follow")
		return
	}
	f, err := j.parse(src)
	if err != nil {
		j.unknownPart([]word{{val: src, src: src}}, "the shell code does not parse: "+err.Error())
		return
	}
	w := &walker{line: src, cwd: s.cwd, funcs: s.funcs, depth: depth}
	w.stmts(f.Stmts, false)
	j.notes = append(j.notes, w.errs...)
	j.readsFiles(w.out)
	for i := range w.out {
		j.simple(&w.out[i])
	}
}

// shell judges sh/bash/zsh…: -c STRING is parsed and judged; a script file
// or a program on stdin is unknown, unless stdin is a literal here-doc,
// which is parsed too.
func (j *judge) shell(prog string, args []word, s *simple, pt *part, depth int) {
	pt.label = "shell " + prog
	rest := args[1:]
	if prog == "busybox" {
		// busybox APPLET ARGS… is APPLET ARGS…
		if len(rest) > 0 && !rest[0].dyn && !strings.HasPrefix(rest[0].val, "-") {
			pt.label = "busybox"
			j.parts = append(j.parts, *pt)
			j.command(rest, s, part{cat: ReadOnly}, depth+1)
			return
		}
		j.known(prog, args, pt)
		j.finish(prog, args, s, pt, depth)
		return
	}
	cmode := false
	var script *word
	startup := func(why string) {
		pt.escalate(Unknown, prog+" "+why+": a start-up file runs, code sluice cannot see")
	}
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a.dyn {
			script = &rest[i]
			break
		}
		switch {
		case hasFlag(a.val, "--rcfile") || hasFlag(a.val, "--init-file") || hasFlag(a.val, "--login") ||
			a.val == "-login" || hasFlag(a.val, "--interactive"):
			startup(a.val)
		case prog == "fish" && (a.val == "-C" || hasFlag(a.val, "--init-command")):
			// fish -C CODE runs CODE before the rest: judge it as code.
			pt.escalate(Unknown, "fish "+a.val+" runs code before the command")
		case len(a.val) > 1 && a.val[0] == '-' && a.val[1] != '-' && strings.ContainsAny(a.val[1:], "il"):
			// -i (interactive: ~/.bashrc, $ENV) and -l (login:
			// ~/.profile) read start-up files, with -c too.
			startup(a.val)
		}
		if a.val == "--" || a.val == "-" {
			if i+1 < len(rest) {
				script = &rest[i+1]
			}
			break
		}
		if strings.HasPrefix(a.val, "-") || strings.HasPrefix(a.val, "+") {
			if a.val == "-o" || a.val == "+o" || a.val == "-O" || a.val == "+O" || a.val == "--rcfile" || a.val == "--init-file" {
				i++
				continue
			}
			if !strings.HasPrefix(a.val, "--") && strings.ContainsRune(a.val[1:], 'c') {
				cmode = true
			}
			if a.val == "--command" || a.val == "-command" {
				cmode = true
			}
			continue
		}
		script = &rest[i]
		break
	}
	switch {
	case cmode && script != nil && !script.dyn:
		j.parts = append(j.parts, *pt)
		j.shellString(script.val, s, depth+1)
	case cmode:
		pt.escalate(Unknown, prog+" -c runs shell code computed at run time")
		j.parts = append(j.parts, *pt)
	case script != nil:
		pt.escalate(Unknown, prog+" runs the script "+script.src+", which sluice cannot see")
		j.parts = append(j.parts, *pt)
	default:
		bodies, file := stdinSources(s)
		if file == nil && len(bodies) > 0 && !s.stdin {
			literal := true
			for _, b := range bodies {
				literal = literal && !b.dyn
			}
			if literal {
				j.parts = append(j.parts, *pt)
				// bash reads the last here-doc on fd 0; every one is judged,
				// so the order of redirections cannot hide one.
				for _, b := range bodies {
					j.shellString(b.val, s, depth+1)
				}
				return
			}
		}
		pt.escalate(Unknown, prog+" runs shell code read from stdin")
		j.parts = append(j.parts, *pt)
	}
}

// stdinSources returns the here-doc and here-string bodies of a command
// (on any descriptor), and the last file redirected to its stdin.
func stdinSources(s *simple) (bodies []word, file *word) {
	for i, r := range s.redirs {
		switch {
		case r.hdoc != nil:
			bodies = append(bodies, *r.hdoc)
		case r.op == syntax.RdrIn && (r.fd == "" || r.fd == "0"):
			file = &s.redirs[i].target
		}
	}
	return bodies, file
}

func hereDoc(s *simple) *word {
	bodies, _ := stdinSources(s)
	if len(bodies) == 0 {
		return nil
	}
	return &bodies[len(bodies)-1]
}

// interpreter judges python, node, ruby…: inline code, a script, or a
// program on stdin are all unknown; "-m MODULE" is judged as MODULE where
// the table knows it (python -m pytest); --version alone is read-only.
func (j *judge) interpreter(prog string, inline []string, args []word, s *simple, pt *part, depth int) {
	pt.label = "interpreter " + prog
	rest := args[1:]
	for i, a := range rest {
		if a.dyn {
			break
		}
		for _, f := range inline {
			if a.val == f || (len(f) == 2 && strings.HasPrefix(a.val, f) && !strings.HasPrefix(a.val, "--")) {
				pt.escalate(Unknown, prog+" "+f+" runs inline code")
				j.parts = append(j.parts, *pt)
				return
			}
		}
		if a.val == "-m" && (prog == "python" || prog == "python2" || prog == "python3" || prog == "pypy3") && i+1 < len(rest) && !rest[i+1].dyn {
			mod := rest[i+1].val
			// python -m puts the working directory first on sys.path: a
			// json/ or json.py in the project runs instead of the
			// standard module.
			if top, _, _ := strings.Cut(mod, "."); shadowed(s.cwd, top) {
				pt.escalate(Unknown, prog+" -m "+mod+": the project's own "+top+" comes first on Python's path, and runs instead")
				j.parts = append(j.parts, *pt)
				return
			}
			if j.k.get(mod) != nil {
				pt.label = prog + " -m " + mod
				j.parts = append(j.parts, *pt)
				j.command(rest[i+1:], s, part{cat: ReadOnly}, depth+1)
				return
			}
			pt.escalate(Unknown, prog+" -m "+mod+" runs a module sluice does not know")
			j.parts = append(j.parts, *pt)
			return
		}
		if (prog == "deno" || prog == "bun") && (a.val == "eval" || a.val == "run" || a.val == "x") {
			pt.escalate(Unknown, prog+" "+a.val+" runs code")
			j.parts = append(j.parts, *pt)
			return
		}
		if !strings.HasPrefix(a.val, "-") {
			pt.escalate(Unknown, prog+" runs "+a.src+", whose code sluice cannot see")
			j.parts = append(j.parts, *pt)
			return
		}
	}
	versionOnly := len(rest) > 0
	for _, a := range rest {
		if a.dyn || (a.val != "--version" && a.val != "-V" && a.val != "-v" && a.val != "--help" && a.val != "-h") {
			versionOnly = false
		}
	}
	if versionOnly && !s.stdin && hereDoc(s) == nil {
		pt.label = prog + " --version"
		j.parts = append(j.parts, *pt)
		return
	}
	pt.escalate(Unknown, prog+" runs code read from stdin or an interactive prompt")
	j.parts = append(j.parts, *pt)
}

// shadowed reports whether directory cwd holds a Python module or package
// named top (top.py, top/, or a compiled top.*.so): python -m and
// pydoc import it before the standard library's.
func shadowed(cwd word, top string) bool {
	if cwd.dyn || cwd.val == "" || top == "" || strings.ContainsAny(top, "/\\") {
		return cwd.dyn // where it runs is not known: it may be anywhere
	}
	for _, name := range []string{top + ".py", top, top + ".pyc"} {
		if _, err := os.Lstat(filepath.Join(cwd.val, name)); err == nil {
			return true
		}
	}
	matches, _ := filepath.Glob(filepath.Join(cwd.val, top+".*.so"))
	return len(matches) > 0
}

// onProcess reports the forms of prlimit, ionice, taskset and chrt that
// act on a running process (--pid N) instead of starting a command, and
// whether the form changes it (a limit with a value, a class or level, a
// mask or priority before the pid) rather than shows it.
func onProcess(prog string, args []word) (pid, changes bool) {
	switch prog {
	case "prlimit", "ionice", "taskset", "chrt":
	default:
		return false, false
	}
	operands, dyn := 0, false
	for _, a := range args[1:] {
		if a.dyn {
			dyn = true
			continue
		}
		v := a.val
		if v == "--" {
			break
		}
		name, _, hasVal := strings.Cut(v, "=")
		switch {
		case !strings.HasPrefix(v, "-") || v == "-":
			operands++
		case name == "--pid" || name == "--pgid" || name == "--uid" || isAbbrev(name, "--pid"):
			pid = true
		case prog == "ionice" && (v == "-p" || v == "-P" || v == "-u"),
			prog != "ionice" && !strings.HasPrefix(v, "--") && strings.ContainsRune(v[1:], 'p'):
			pid = true // -p, -pc (taskset), -p1234 (prlimit)
			if prog == "prlimit" && len(v) > 2 {
				operands++ // the pid is attached
			}
		case prog == "prlimit" && name != "--output" && name != "-o" && (hasVal || !strings.HasPrefix(v, "--") && len(v) > 2):
			changes = true // --nofile=12:12, -n12:12
		case prog == "ionice" && (name == "-c" || name == "-n" || name == "--class" || name == "--classdata" ||
			strings.HasPrefix(v, "-c") || strings.HasPrefix(v, "-n")):
			changes = true
		}
	}
	if prog != "ionice" && operands >= 2 {
		// taskset -p MASK PID, chrt -p PRIO PID; for prlimit, a word
		// besides the pid is a limit's value (--nofile 12:12).
		changes = true
	}
	return pid, changes || pid && dyn
}
