package policy

import (
	"path"
	"slices"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// part is the judgement of one simple command before rules and paths.
type part struct {
	words   []word // the argv as the shell would pass it
	name    string // the program, for rule matching; "" when not known
	cat     Category
	label   string // what decided the category
	reasons []string
	writes  []pathRef
	reads   []pathRef
	// scripts are files of code the program runs, named by its options
	// (make -f FILE): outside the project they bring code of their own.
	scripts []pathRef
	// carries says why the command runs code, a program or options
	// the line brings with it (LD_PRELOAD=…, TAR_OPTIONS=…, make
	// --eval=…): the part is at least ask, whatever rule matches it, and
	// never allowed with a checkpoint.
	carries []string
	// cwd is the directory the command runs in (cd on the line followed;
	// dyn when computed at run time).
	cwd word
	// form is the knowledge entry that judged the command ("git
	// fetch"), ops its words after the program and subcommands.
	form string
	ops  []opword
	// hosts are the hosts the knowledge table gives the form (see
	// Tool.Hosts): what its run reaches by itself.
	hosts []string
}

// pathRef is a path a command writes or reads, as written.
type pathRef struct {
	w   word
	cwd word
	how string
	// into are the operands a copy, move or link puts into this
	// destination, each under its own name when it is a directory (cp a
	// b DIR, mv -t DIR a); nil for a path written as itself.
	into []word
	// dir says the destination must be a directory: written DIR/, named
	// by -t, or given several operands.
	dir bool
}

// output records a file an option names for the program's output (time
// -o FILE, sort -o FILE, tar --index-file=FILE): a write judged as a
// redirection target is; "-" (standard output) and the sinks (/dev/null,
// the terminal, the command's own output streams) are none.
func (j *judge) output(pt *part, w word, cwd word, how string) {
	if !w.dyn && (w.val == "-" || w.val == "" || j.sink(w.val)) {
		return
	}
	pt.writes = append(pt.writes, pathRef{w: w, cwd: cwd, how: how})
}

// carry records why the part runs code the line brings with it.
func (p *part) carry(why string) {
	if !slices.Contains(p.carries, why) {
		p.carries = append(p.carries, why)
	}
}

func (p *part) escalate(c Category, reason string) {
	if c > p.cat {
		p.cat = c
	}
	if reason != "" && !slices.Contains(p.reasons, reason) {
		p.reasons = append(p.reasons, reason)
	}
}

// judge turns the simple commands of a line into parts.
type judge struct {
	k     *toolTable
	parse func(src string) (*syntax.File, error)
	parts []part
	notes []string // line-level reasons (nesting too deep, …)
	// keyword: set -k was seen: assignment-like words anywhere in a
	// command go into its environment.
	keyword bool
	// reopens: the line redirects a file into a descriptor to read it
	// (cmd <f, 1<f, exec 3<f). Opening /dev/stdout or /dev/fd/1 for
	// writing opens again whatever file the descriptor holds, for
	// writing: "echo x 1<f >/dev/stdout" overwrites f. In such a line
	// the output streams are no sinks.
	reopens bool
}

// readsFiles notes that a line (or a shell string run by it) redirects a
// file into a descriptor: its output streams are no sinks from then on.
func (j *judge) readsFiles(cmds []simple) {
	for _, s := range cmds {
		for _, r := range s.redirs {
			if r.op == syntax.RdrIn && !netRedirect(r.target) {
				j.reopens = true
				return
			}
		}
	}
}

// systemDirs are where a path-qualified program is still the system tool.
var systemDirs = []string{"/bin", "/usr/bin", "/sbin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin", "/opt/homebrew/bin"}

func (j *judge) simple(s *simple) {
	pt := part{cat: ReadOnly, label: "no command", cwd: s.cwd}
	for _, r := range s.redirs {
		j.redirect(&pt, r, s)
	}
	for _, a := range s.assigns {
		if len(s.args) > 0 && !s.args[0].dyn && inertBuiltins()[s.args[0].val] {
			// GIT_DIR=x echo "$GIT_DIR": a builtin that runs nothing
			// has the assignment for its own short life, and ignores it.
			continue
		}
		checkAssign(&pt, a)
	}
	if len(s.args) == 0 {
		pt.words = append(pt.words, s.assigns...)
		if len(pt.writes) > 0 {
			pt.escalate(Mutating, "")
			pt.label = "redirection"
		}
		j.parts = append(j.parts, pt)
		return
	}
	j.command(s.args, s, pt, s.depth)
}

// redirect records what a redirection writes, reads or feeds.
func (j *judge) redirect(pt *part, r redirect, s *simple) {
	switch r.op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll, syntax.AppAll,
		syntax.RdrAllClob, syntax.AppAllClob, syntax.RdrInOut:
		if !r.target.dyn && j.sink(r.target.val) {
			return
		}
		if netRedirect(r.target) {
			pt.escalate(Networked, "redirects to a network socket ("+r.target.val+")")
			return
		}
		pt.writes = append(pt.writes, pathRef{w: r.target, cwd: s.cwd, how: "redirection " + r.op.String()})
	case syntax.DplOut, syntax.DplIn:
		// >&2, 2>&1, <&0, >&- duplicate descriptors; bash's ">& FILE"
		// (a word that is not a descriptor) writes the file.
		if r.target.dyn || !isFD(r.target.val) && !j.sink(r.target.val) {
			pt.writes = append(pt.writes, pathRef{w: r.target, cwd: s.cwd, how: "redirection >&"})
		}
	case syntax.RdrIn:
		if netRedirect(r.target) {
			pt.escalate(Networked, "reads from a network socket ("+r.target.val+")")
			return
		}
		pt.reads = append(pt.reads, pathRef{w: r.target, cwd: s.cwd, how: "input redirection"})
	}
}

// netRedirect reports bash's /dev/tcp/HOST/PORT and /dev/udp/… paths,
// which open network connections.
func netRedirect(w word) bool {
	return !w.dyn && (strings.HasPrefix(w.val, "/dev/tcp/") || strings.HasPrefix(w.val, "/dev/udp/"))
}

// sink reports a path whose writing writes no file: the null device, the
// terminal, and the command's own output streams (/dev/stdout,
// /dev/fd/2, /proc/self/fd/1, …) unless the line redirects a file into a
// descriptor (j.reopens). Standard input is none: written, it reaches
// whatever the command reads from.
func (j *judge) sink(p string) bool {
	switch p {
	case "/dev/null", "/dev/tty":
		return true
	}
	return !j.reopens && outputStream(p)
}

// outputStream reports the names of a command's standard output and
// error.
func outputStream(p string) bool {
	switch p {
	case "/dev/stdout", "/dev/stderr", "/dev/fd/1", "/dev/fd/2", "/proc/self/fd/1", "/proc/self/fd/2",
		"/proc/thread-self/fd/1", "/proc/thread-self/fd/2":
		return true
	}
	return false
}

// selfPath reports a path that names something of the process that opens
// it (/dev/stdin, /dev/fd/N, /proc/self/…): what it leads to is the
// command's when it runs, never the judge's own.
func selfPath(p string) bool {
	switch p {
	case "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/fd", "/proc/self", "/proc/thread-self":
		return true
	}
	for _, d := range []string{"/dev/fd/", "/proc/self/", "/proc/thread-self/"} {
		if strings.HasPrefix(p, d) {
			return true
		}
	}
	return false
}

func isFD(s string) bool {
	if s == "-" {
		return true
	}
	s = strings.TrimSuffix(s, "-")
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// checkAssign judges an assignment a command runs with (NAME=x cmd, env
// NAME=x cmd, export NAME=x, a request's env map). A variable that carries
// code, a program or options into what runs (envVar) makes the part at
// least ask, whatever rule matches it, and never allowed with a
// checkpoint: part.carries names it. Where the variable makes the
// program run a command or load a library of the caller's choosing the
// part is host_escape_risk.
func checkAssign(pt *part, a word) {
	name, val, _ := strings.Cut(a.val, "=")
	if !a.dyn && evaluable(val) {
		// x='$(cmd)' runs later through ${x@P}, $((x)), PS4 or eval.
		pt.escalate(Unknown, name+"= holds a command substitution as text, which bash can evaluate later")
	}
	if name == "PATH" {
		pt.escalate(Unknown, "PATH= changes which program a name runs")
		return
	}
	cat, why := envVar(name, val, a.dyn)
	if cat == 0 {
		return
	}
	why = name + "= " + why
	pt.escalate(cat, why)
	pt.carry(why)
}

// envVar says what setting variable name to val does to the programs that
// see it: 0 when nothing sluice knows of, else the category and why. A
// value that is empty or known to be harmless (PAGER=cat) is nothing.
func envVar(name, val string, dyn bool) (Category, string) {
	if !dyn && (val == "" || harmlessValue(name, strings.TrimSpace(val))) {
		return 0, ""
	}
	switch {
	case strings.HasPrefix(name, "LD_"), strings.HasPrefix(name, "DYLD_"):
		return HostEscape, "loads code into the program"
	case runsCode()[name] || strings.HasPrefix(name, "GIT_CONFIG") || (name == "GOFLAGS" && strings.Contains(val, "exec")):
		return HostEscape, "makes the program run code of the caller's choosing"
	case pagerVars()[name] || strings.HasSuffix(name, "PAGER") || strings.HasSuffix(name, "EDITOR"):
		return HostEscape, "makes the command run a program of the caller's choosing"
	case optionVars()[name]:
		return Unknown, "gives the program options or a program of the caller's choosing"
	case strings.HasPrefix(name, "CARGO_") && !strings.HasPrefix(name, "CARGO_TERM_") && name != "CARGO_INCREMENTAL":
		return Unknown, "is cargo configuration, which can name programs to run (a wrapper, a linker, a runner)"
	case loadsVars()[name] || strings.HasPrefix(name, "npm_config_") || strings.HasPrefix(name, "NPM_CONFIG_") ||
		strings.HasPrefix(name, "GIT_") || strings.HasPrefix(name, "PYTHON") || strings.HasPrefix(name, "LESS"):
		return Unknown, "changes what code or configuration the program loads"
	}
	return 0, ""
}

// harmlessValue reports the values agents set to keep output flowing
// (PAGER=cat, GIT_PAGER=cat, CARGO_TERM_COLOR=always) or to switch a
// feature off: they run nothing of the caller's choosing.
func harmlessValue(name, val string) bool {
	if pagerVars()[name] || strings.HasSuffix(name, "PAGER") || name == "BROWSER" {
		return harmlessPagers()[val]
	}
	if flags, ok := harmlessFlags()[name]; ok {
		// GOFLAGS=-count=1, MAKEFLAGS=-j4: every word one of the flags
		// that change nothing but how much or how verbosely it runs.
		for _, f := range strings.Fields(val) {
			if !slices.ContainsFunc(flags, func(h string) bool {
				return f == h || strings.HasSuffix(h, "*") && strings.HasPrefix(f, h[:len(h)-1]) && !strings.ContainsAny(f, "/$`")
			}) {
				return false
			}
		}
		return true
	}
	switch name {
	case "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONIOENCODING", "PYTHONUTF8", "PYTHONHASHSEED",
		"PYTHONWARNINGS", "PYTHONFAULTHANDLER", "PYTHONNOUSERSITE", "PYTHONSAFEPATH",
		"GIT_TERMINAL_PROMPT", "GIT_TRACE", "GIT_CURL_VERBOSE", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
		"GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE", "GIT_OPTIONAL_LOCKS", "GIT_FLUSH", "LESSCHARSET":
		// Switches and names: no path, no program, no options.
		return !strings.ContainsAny(val, "/ ") || strings.HasPrefix(name, "GIT_AUTHOR_") || strings.HasPrefix(name, "GIT_COMMITTER_")
	}
	return false
}

// harmlessFlags are, for variables that carry options, the options that
// run nothing and read nothing of the caller's choosing; an entry ending
// in '*' is a prefix, its rest any value without a path in it.
//
// This table and the policy's other lookup tables are built on first use
// (sync.OnceValue), not when a process starts: the commands an agent
// runs for each tool call (run, hook) link the policy and never judge,
// and building them at start cost each such process ~0.06 ms.
var harmlessFlags = sync.OnceValue(func() map[string][]string {
	return map[string][]string{
		"GOFLAGS": {"-count=*", "-v", "-race", "-short", "-failfast", "-json", "-cover", "-trimpath", "-mod=*", "-tags=*",
			"-buildvcs=*", "-p=*", "-timeout=*", "-shuffle=*"},
		"MAKEFLAGS": {"-s", "-k", "-j*", "--jobs=*", "--no-print-directory", "--silent", "--keep-going", "-w", "--print-directory",
			"-O*", "--output-sync*"},
	}
})

// inertBuiltins are shell builtins that run no program and load no code:
// an assignment before one of them affects nothing.
var inertBuiltins = sync.OnceValue(func() map[string]bool {
	return map[string]bool{"echo": true, "printf": true, "true": true, "false": true, ":": true, "test": true, "[": true}
})

// pagerVars name a program the command runs (a pager, an editor, a
// browser).
var pagerVars = sync.OnceValue(func() map[string]bool {
	return map[string]bool{"PAGER": true, "GIT_PAGER": true, "MANPAGER": true, "EDITOR": true, "VISUAL": true,
		"GIT_EDITOR": true, "GIT_SEQUENCE_EDITOR": true, "SYSTEMD_PAGER": true, "BAT_PAGER": true, "DELTA_PAGER": true,
		"BROWSER": true, "SYSTEMD_EDITOR": true, "SUDO_EDITOR": true}
})

// harmlessPagers are the values agents set to keep output flowing.
var harmlessPagers = sync.OnceValue(func() map[string]bool {
	return map[string]bool{"": true, "cat": true, "less": true, "more": true, "less -R": true, "less -FRX": true,
		"less -FR": true, "true": true, ":": true, "/bin/cat": true, "/usr/bin/cat": true}
})

// runsCode are variables whose value is a command, a script or a file of
// code that the program (or the shell it starts) runs.
var runsCode = sync.OnceValue(func() map[string]bool {
	return map[string]bool{"BASH_ENV": true, "ENV": true, "PROMPT_COMMAND": true,
		"GIT_SSH_COMMAND": true, "GIT_SSH": true, "GIT_EXTERNAL_DIFF": true, "GIT_ASKPASS": true, "SSH_ASKPASS": true,
		"GIT_PROXY_COMMAND": true, "GIT_DIR": true, "GIT_EXEC_PATH": true, "GIT_TEMPLATE_DIR": true,
		"PYTHONSTARTUP": true, "NODE_OPTIONS": true, "PERL5OPT": true, "RUBYOPT": true,
		"MANOPT": true, "MANROFFOPT": true, "LESSOPEN": true, "LESSCLOSE": true, "LESSKEYIN": true,
		"RUSTC_WRAPPER": true, "RUSTC_WORKSPACE_WRAPPER": true, "RUSTC": true, "CARGO_BUILD_RUSTC_WRAPPER": true,
		"RSYNC_RSH": true, "RSYNC_CONNECT_PROG": true, "CVS_RSH": true, "JAVA_TOOL_OPTIONS": true, "_JAVA_OPTIONS": true,
		"JDK_JAVA_OPTIONS": true}
})

// optionVars carry options or a program into what runs: a compiler, a
// make flag, a tar option (TAR_OPTIONS=--to-command=sh), a grep to use
// instead of grep (zgrep's GREP), flags that name plugins or wrappers.
var optionVars = sync.OnceValue(func() map[string]bool {
	return map[string]bool{"TAR_OPTIONS": true, "GREP": true, "GREP_OPTIONS": true, "MAKEFLAGS": true,
		"GNUMAKEFLAGS": true, "MFLAGS": true, "MAKEFILES": true, "CC": true, "CXX": true, "LD": true,
		"AR": true, "AS": true, "CPP": true, "FC": true, "NM": true, "RANLIB": true, "STRIP": true, "OBJCOPY": true,
		"CFLAGS": true, "CXXFLAGS": true, "CPPFLAGS": true, "LDFLAGS": true, "LDLIBS": true, "HOSTCC": true,
		"GOFLAGS": true, "CGO_CFLAGS": true, "CGO_CPPFLAGS": true, "CGO_CXXFLAGS": true, "CGO_LDFLAGS": true,
		"GOTOOLCHAIN": true, "GOENV": true, "RUSTFLAGS": true, "RUSTDOCFLAGS": true, "RUSTDOC": true,
		"PERL5LIB": true, "PERLLIB": true, "RUBYLIB": true, "PYTHONPATH": true, "PYTHONHOME": true, "PYTHONUSERBASE": true,
		"NODE_PATH": true, "MAVEN_OPTS": true, "GRADLE_OPTS": true, "JAVA_OPTS": true, "SBT_OPTS": true,
		"GZIP": true, "BZIP2": true, "XZ_OPT": true, "XZ_DEFAULTS": true, "ZIPOPT": true, "UNZIP": true,
		"CURL_HOME": true, "WGETRC": true, "SHELL": true, "CONFIG_SHELL": true, "SHELLOPTS": true, "BASHOPTS": true}
})

// loadsVars change what code or configuration a program loads.
var loadsVars = sync.OnceValue(func() map[string]bool {
	return map[string]bool{"GIT_WORK_TREE": true, "HOME": true, "XDG_CONFIG_HOME": true, "CARGO_HOME": true,
		"DOCKER_HOST": true, "KUBECONFIG": true, "IFS": true, "BUNDLE_GEMFILE": true, "OPENSSL_CONF": true, "ZDOTDIR": true,
		"INPUTRC": true, "SSH_AUTH_SOCK": true, "RUSTUP_HOME": true, "RUSTUP_TOOLCHAIN": true, "NPM_CONFIG_USERCONFIG": true,
		"PIP_CONFIG_FILE": true, "PIP_INDEX_URL": true, "GEM_HOME": true, "GEM_PATH": true}
})

// program returns the name a command word calls, for the knowledge table:
// the word itself, or the base name of a path in a standard system
// directory. Any other path ("./sed", "/tmp/x/ls") is not the system tool.
func program(name string) (string, bool) {
	if !strings.Contains(name, "/") {
		return name, true
	}
	dir, base := path.Split(path.Clean(name))
	dir = strings.TrimSuffix(dir, "/")
	if base != "" && slices.Contains(systemDirs, dir) {
		return base, true
	}
	return "", false
}

// command judges one argv (a simple command's, or a wrapper's inner one).
func (j *judge) command(args []word, s *simple, pt part, depth int) {
	pt.words = args
	pt.cwd = s.cwd
	name := args[0]
	if name.dyn {
		pt.escalate(Unknown, "the command name is computed when it runs ("+name.src+")")
		pt.label = "dynamic command name"
		j.parts = append(j.parts, pt)
		return
	}
	prog, ok := program(name.val)
	if !ok {
		pt.escalate(Unknown, name.val+" is a program at a path, not the system tool of that name")
		pt.label = "path-qualified program"
		j.parts = append(j.parts, pt)
		return
	}
	pt.name = prog
	// A function defined on the line is judged by its body. A function
	// may not lower a program's verdict by shadowing its name (rm() { :; }
	// may be defined in a branch never taken, or be bypassed by command
	// or env), so only names sluice does not know count as calls.
	if s.funcs[prog] && prog == name.val && j.k.get(prog) == nil && !isSpecial(prog) {
		pt.label = "function defined on this line (its body is judged)"
		j.parts = append(j.parts, pt)
		return
	}
	if depth > maxDepth {
		pt.escalate(Unknown, "wrappers nested too deep to follow")
		pt.label = "too deep"
		j.parts = append(j.parts, pt)
		return
	}
	for _, name := range setsVariables(prog, args) {
		// read PATH, printf -v LD_PRELOAD …, getopts o PAGER: an
		// assignment whose value is known only when the line runs.
		if name == "?" {
			pt.escalate(Unknown, prog+" sets a variable whose name is computed when the line runs")
			continue
		}
		checkAssign(&pt, word{val: name + "=", dyn: true, src: prog + " " + name})
	}
	if prog == "set" && keywordMode(args) {
		j.keyword = true
	}
	if j.keyword {
		// After set -k (set -o keyword), NAME=VALUE anywhere among a
		// command's words is an assignment in its environment.
		for _, a := range args[1:] {
			if i := strings.IndexByte(a.val, '='); i > 0 && validName(a.val[:i]) {
				checkAssign(&pt, a)
			}
		}
	}
	if handled := j.special(prog, args, s, &pt, depth); handled {
		return
	}
	j.known(prog, args, &pt)
	j.finish(prog, args, s, &pt, depth)
}

// finish adds what every known program gets: reads of credential files
// named anywhere in its arguments, program-specific checks, and the part.
func (j *judge) finish(prog string, args []word, s *simple, pt *part, depth int) {
	text := j.k.get(prog) != nil && j.k.get(prog).Text
	for _, a := range args[1:] {
		if text {
			break // echo rm -rf /: words, not files
		}
		if a.dyn {
			// Judged by its literal parts (pathVerdict's skeleton):
			// /proc/$PPID/environ.
			if !strings.HasPrefix(a.src, "-") {
				pt.reads = append(pt.reads, pathRef{w: a, cwd: s.cwd, how: "argument"})
			}
			continue
		}
		v := a.val
		if i := strings.IndexByte(v, '='); i > 0 && strings.HasPrefix(v, "-") {
			v = v[i+1:]
		}
		v = strings.TrimPrefix(v, "@") // curl -d @file, gh --input @file
		if v != "" && !strings.HasPrefix(v, "-") {
			pt.reads = append(pt.reads, pathRef{w: word{val: v, src: a.src}, cwd: s.cwd, how: "argument"})
			// git show REV:PATH, scp HOST:PATH name a file after the colon.
			if i := strings.LastIndexByte(v, ':'); i > 0 && i < len(v)-1 && !strings.Contains(v, "://") {
				pt.reads = append(pt.reads, pathRef{w: word{val: v[i+1:], src: a.src}, cwd: s.cwd, how: "argument"})
			}
		}
	}
	var inner func()
	if opts := shellOptions()[prog]; len(opts) > 0 {
		inner = j.optionCommands(prog, opts, args, s, pt, depth)
	}
	switch prog {
	case "git":
		if g := j.git(args, s, pt, depth); g != nil {
			prev := inner
			inner = func() {
				if prev != nil {
					prev()
				}
				g()
			}
		}
	case "docker", "podman", "nerdctl":
		checkContainerRun(args, pt)
	case "awk", "gawk", "mawk", "nawk":
		checkAwk(args, s, pt)
	case "sed", "gsed":
		checkSed(args, s, pt)
	case "find":
		inner = func() { j.findExec(args, s, depth) }
	}
	j.parts = append(j.parts, *pt)
	if inner != nil {
		inner()
	}
}

// known applies the knowledge table to argv.
func (j *judge) known(prog string, args []word, pt *part) {
	t := j.k.get(prog)
	if t == nil {
		pt.escalate(Unknown, prog+" is not in sluice's knowledge table")
		pt.label = "unknown program"
		return
	}
	label := prog
	rest := args[1:]
	hosts := t.Hosts
	for t.Sub != nil {
		ops := splitArgs(rest, t.ValueOptions)
		sub := -1
		for i, o := range ops {
			if !o.option {
				sub = i
				break
			}
		}
		if sub < 0 {
			break
		}
		if ops[sub].w.dyn {
			// A word known only when the line runs stands where the
			// subcommand goes ("sluice $x", "git $cmd"): it may be any of
			// them, so it is at least unknown and as severe as the most
			// severe one.
			worst, why := Unknown, label+": the subcommand is "+ops[sub].w.src+", known only when the line runs"
			names := make([]string, 0, len(t.Sub))
			for name := range t.Sub {
				names = append(names, name)
			}
			slices.Sort(names) // the same reason every time
			for _, name := range names {
				if st := t.Sub[name]; st.Category > worst {
					worst, why = st.Category, label+": the subcommand "+ops[sub].w.src+" may be "+name+": "+st.Reason
				}
			}
			pt.escalate(worst, why)
			break
		}
		next := t.Sub[ops[sub].w.val]
		if next == nil {
			if t.Category == Unknown {
				pt.escalate(Unknown, label+": "+ops[sub].w.val+" is not a subcommand sluice knows")
			}
			break
		}
		t, label = next, label+" "+ops[sub].w.val
		rest = rest[ops[sub].index+1:]
		if len(t.Hosts) > 0 {
			hosts = t.Hosts
		}
	}
	ops := splitArgs(rest, t.ValueOptions)
	pt.form, pt.ops = label, ops
	defer func() {
		// Known after the conditions: a form reaches its hosts when it
		// is networked (or worse), or when the table says it fetches.
		if pt.cat >= Networked || t.Fetches {
			pt.hosts = hosts
		}
	}()
	if len(t.Lists) > 0 && listing(t.Lists, prog, ops) {
		pt.escalate(ReadOnly, "")
		pt.label = "knowledge: " + label + " (only shows state)"
	} else {
		pt.escalate(t.Category, t.Reason)
		pt.label = "knowledge: " + label
	}
	condWrites := ""
	writeOpts := t.WriteOptions
	for _, c := range t.When {
		if len(c.Names) > 0 && !slices.Contains(c.Names, prog) {
			continue
		}
		cops := ops
		if c.First {
			cops = nil
			for _, o := range ops {
				if !o.option {
					cops = []opword{o}
					break
				}
			}
		}
		if hit, ok := matches(c, cops); ok {
			pt.escalate(c.Category, c.Reason)
			pt.label = "knowledge: " + label + " " + hit
			if c.Writes != "" {
				condWrites = c.Writes
			}
			writeOpts = append(writeOpts[:len(writeOpts):len(writeOpts)], c.WriteOptions...)
		}
	}
	if pt.cat == ReadOnly {
		j.hiddenWrites(t, ops, label, pt)
	}
	codeFromStdin(ops, label, pt)
	opnds := operands(ops)
	writes := t.Writes
	if condWrites != "" {
		writes = condWrites
	}
	into := writes == "into" || writes == "args_into"
	// cp -T, mv --no-target-directory: the destination is the path
	// itself, never a directory the others land in.
	whole := into && slices.ContainsFunc(ops, func(o opword) bool {
		return o.option && !o.w.dyn && (hasFlag(o.w.val, "-T") || hasFlag(o.w.val, "--no-target-directory"))
	})
	var outputs []pathRef // what the write options name, in order
	targeted := false     // a write option names the directory (cp -t DIR)
	for _, wo := range writeOpts {
		for _, o := range ops {
			if strings.HasSuffix(wo, "=") {
				if !o.option && !o.w.dyn && strings.HasPrefix(o.w.val, wo) {
					outputs = append(outputs, pathRef{w: word{val: o.w.val[len(wo):], src: o.w.src}, how: label + " " + wo})
				}
				continue
			}
			if !o.option {
				continue
			}
			if v, ok := optionValue(o, wo); ok {
				out := pathRef{w: v, how: label + " " + wo}
				if into && !whole {
					targeted = true
					out.into, out.dir = opnds, true
				}
				outputs = append(outputs, out)
			}
		}
	}
	switch {
	case writes == "args", writes == "args_into" && (targeted || len(opnds) < 2):
		for _, o := range opnds {
			pt.writes = append(pt.writes, pathRef{w: o, cwd: pt.cwd, how: label + " operand"})
		}
	case writes == "args_into":
		for _, o := range opnds[:len(opnds)-1] {
			pt.writes = append(pt.writes, pathRef{w: o, cwd: pt.cwd, how: label + " operand"})
		}
		fallthrough
	case writes == "last" || writes == "into" && !targeted:
		if len(opnds) < 2 {
			break
		}
		dest := pathRef{w: opnds[len(opnds)-1], cwd: pt.cwd, how: label + " destination"}
		if into && !whole {
			dest.into = opnds[:len(opnds)-1]
			dest.dir = len(opnds) > 2 || !dest.w.dyn && strings.HasSuffix(dest.w.val, "/")
		}
		pt.writes = append(pt.writes, dest)
	}
	for _, o := range outputs {
		if o.into != nil {
			pt.writes = append(pt.writes, pathRef{w: o.w, cwd: pt.cwd, how: o.how + " destination", into: o.into, dir: true})
			continue
		}
		j.output(pt, o.w, pt.cwd, o.how)
	}
	for _, o := range ops {
		if !o.option {
			continue
		}
		for _, co := range t.CodeOptions {
			if _, ok := optionValue(o, co); ok || o.w.dyn {
				why := label + " " + co + " runs code given on the command line"
				pt.escalate(Unknown, why)
				pt.carry(why)
			}
		}
		for _, so := range t.ScriptOptions {
			if v, ok := optionValue(o, so); ok {
				pt.scripts = append(pt.scripts, pathRef{w: v, cwd: pt.cwd, how: label + " " + so})
			}
		}
	}
	if prog == "make" || slices.Contains(t.Aliases, "gmake") {
		// make NAME=VALUE overrides the Makefile's variable: one that
		// carries a program or options (CC=, MAKEFLAGS=) is judged as
		// the same variable in the environment would be.
		for _, o := range operands(ops) {
			if name, val, ok := strings.Cut(o.val, "="); ok && validName(name) {
				checkAssign(pt, word{val: name + "=" + val, dyn: o.dyn, src: o.src})
			}
		}
	}
	if pt.cat > ReadOnly && len(pt.reasons) == 0 {
		pt.reasons = append(pt.reasons, label+" is "+t.Category.String())
	}
}

// matches reports whether any of a condition's flags or args appear, and
// the word that matched.
func matches(c Condition, ops []opword) (string, bool) {
	for _, o := range ops {
		if o.option && !o.w.dyn {
			for _, f := range c.Flags {
				if hasFlag(o.w.val, f) {
					return o.w.val, true
				}
			}
			continue
		}
		// A dynamic operand is matched on its literal parts: a pattern
		// that escalates cannot be dodged by adding $(…) to the word.
		for _, a := range c.Args {
			if a == "*" || (wildMatch(a, o.w.val) && (!o.w.dyn || strings.Contains(a, "*"))) {
				return o.w.src, true
			}
		}
	}
	return "", false
}

// wildMatch matches s against a pattern where '*' is any run of
// characters (including '/') and '?' any one character.
func wildMatch(pat, s string) bool {
	px, sx := 0, 0
	nextP, nextS := -1, -1
	for px < len(pat) || sx < len(s) {
		if px < len(pat) {
			switch c := pat[px]; c {
			case '*':
				nextP, nextS = px, sx+1
				px++
				continue
			case '?':
				if sx < len(s) {
					px++
					sx++
					continue
				}
			default:
				if sx < len(s) && s[sx] == c {
					px++
					sx++
					continue
				}
			}
		}
		if nextS > 0 && nextS <= len(s) {
			px, sx = nextP, nextS
			continue
		}
		return false
	}
	return true
}

// setsVariables names the variables a builtin sets without "NAME=" on the
// command line: read's and mapfile's operands, printf -v, getopts'
// second operand. Their values are known only when the line runs.
func setsVariables(prog string, args []word) []string {
	var names []string
	add := func(w word) {
		if !w.dyn && validName(w.val) {
			names = append(names, w.val)
		} else if w.dyn {
			names = append(names, "?") // a computed name: may be any
		}
	}
	rest := args[1:]
	switch prog {
	case "read":
		ops := splitArgs(rest, []string{"-a", "-d", "-i", "-n", "-N", "-p", "-t", "-u"})
		for i, o := range ops {
			switch {
			case o.option && o.w.val == "-a" && i+1 < len(ops):
				add(ops[i+1].w)
			case o.option && strings.HasPrefix(o.w.val, "-a") && len(o.w.val) > 2 && !strings.ContainsAny(o.w.val[1:2], "-"):
				add(word{val: o.w.val[2:], src: o.w.src})
			case !o.option && (i == 0 || !ops[i-1].option || !slices.Contains([]string{"-a", "-d", "-i", "-n", "-N", "-p", "-t", "-u"}, ops[i-1].w.val)):
				add(o.w)
			}
		}
		if len(names) == 0 {
			names = append(names, "REPLY")
		}
	case "mapfile", "readarray":
		ops := splitArgs(rest, []string{"-d", "-n", "-O", "-s", "-u", "-C", "-c"})
		opnds := operands(ops)
		if len(opnds) > 0 {
			add(opnds[len(opnds)-1])
		} else {
			names = append(names, "MAPFILE")
		}
	case "printf":
		for i := 0; i+1 < len(rest); i++ {
			if rest[i].val == "--" {
				break
			}
			if rest[i].val == "-v" {
				add(rest[i+1])
				break
			}
			if v, ok := strings.CutPrefix(rest[i].val, "-v"); ok && v != "" {
				add(word{val: v, src: rest[i].src, dyn: rest[i].dyn})
				break
			}
		}
	case "getopts":
		if opnds := rest; len(opnds) >= 2 {
			add(opnds[1])
		}
	}
	return names
}

// keywordMode reports set -k, or set -o keyword.
func keywordMode(args []word) bool {
	for i, a := range args[1:] {
		if a.dyn {
			return true // set "$opts": may be -k
		}
		if strings.HasPrefix(a.val, "-") && !strings.HasPrefix(a.val, "--") && strings.ContainsRune(a.val, 'k') {
			return true
		}
		if a.val == "-o" && i+2 < len(args) && (args[i+2].val == "keyword" || args[i+2].dyn) {
			return true
		}
	}
	return false
}

// hiddenWrites: an option of a read-only program that names an output
// file (--output*, --save*, --*-file) and that the table does not know
// writes the file: judged by its path, as a redirection is (git diff
// --output=F).
func (j *judge) hiddenWrites(t *Tool, ops []opword, label string, pt *part) {
	known := func(name string) bool {
		if slices.Contains(t.ValueOptions, name) || slices.Contains(t.WriteOptions, name) {
			return true
		}
		for _, c := range t.When {
			for _, f := range c.Flags {
				if hasFlag(name, f) {
					return true
				}
			}
		}
		return false
	}
	for i, o := range ops {
		if !o.option || o.w.dyn || !strings.HasPrefix(o.w.val, "--") {
			continue
		}
		name, val, hasVal := strings.Cut(o.w.val, "=")
		if !strings.HasPrefix(name, "--output") && !strings.HasPrefix(name, "--save") && !strings.HasSuffix(name, "-file") || known(name) {
			continue
		}
		switch {
		case hasVal:
			j.output(pt, word{val: val, src: o.w.src}, pt.cwd, label+" "+name)
		case o.value != nil:
			j.output(pt, *o.value, pt.cwd, label+" "+name)
		case i+1 < len(ops) && !ops[i+1].option:
			j.output(pt, ops[i+1].w, pt.cwd, label+" "+name)
		}
	}
}

// codeFromStdin: a configuration or script option whose value is stdin
// ("-", /dev/stdin, a here-doc) makes what the program runs invisible:
// "man -C /dev/stdin <<EOF", "less --lesskey-src=-".
func codeFromStdin(ops []opword, label string, pt *part) {
	for _, o := range ops {
		if !o.option || o.w.dyn {
			continue
		}
		name, val, hasVal := strings.Cut(o.w.val, "=")
		if !hasVal {
			if o.value == nil || o.value.dyn {
				continue
			}
			val = o.value.val
		}
		lower := strings.ToLower(name)
		if !strings.Contains(lower, "config") && !strings.Contains(lower, "rc") && !strings.Contains(lower, "init") &&
			!strings.Contains(lower, "script") && !strings.Contains(lower, "lesskey") && name != "-C" && name != "-k" && name != "-f" {
			continue
		}
		switch val {
		case "-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0":
			pt.escalate(Unknown, label+" "+name+" reads its configuration or script from stdin: code sluice does not see")
		}
	}
}
