package policy

import (
	"regexp"
	"strings"
	"sync"
)

// gitGlobalValueOpts are git's options before the subcommand that take a
// value.
var gitGlobalValueOpts = []string{"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env", "--super-prefix"}

// gitExecKeys are git configuration keys whose value git runs as a
// command (or that redirect hooks and helpers): setting one is a way to run
// anything, whatever the subcommand looks like.
var gitExecKeys = lazyRegexp(`^(core\.(pager|sshcommand|editor|fsmonitor|hookspath|askpass|gitproxy)|diff\.external|diff\..*\.(textconv|command)|merge\..*\.driver|filter\..*|credential\.helper|credential\..*\.helper|sequence\.editor|gpg\.program|gpg\..*\.program|pager\..*|uploadpack\.packobjectshook|remote\..*\.(uploadpack|receivepack|vcs)|web\.browser|browser\..*\.(cmd|path)|man\..*\.(cmd|path)|interactive\.difffilter|include\.path|includeif\..*|alias\..*|protocol\.(.*\.)?allow|core\.sshcommand|ssh\.variant)$`)

// git checks what git's knowledge entry cannot: configuration that runs
// commands (-c KEY=VALUE, git config KEY VALUE) and the subcommands that
// run a command line of their own (rebase --exec, submodule foreach,
// bisect run). It returns a func judging those, to run after git's own
// part is recorded.
func (j *judge) git(args []word, s *simple, pt *part, depth int) func() {
	rest := args[1:]
	sub := -1
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a.dyn {
			break
		}
		if (a.val == "-c" || a.val == "--config-env") && i+1 < len(rest) {
			checkGitKey(pt, rest[i+1], true)
			i++
			continue
		}
		if strings.HasPrefix(a.val, "--config-env=") {
			checkGitKey(pt, word{val: strings.TrimPrefix(a.val, "--config-env="), src: a.src}, true)
			continue
		}
		if strings.HasPrefix(a.val, "-") {
			for _, o := range []string{"--git-dir", "--exec-path", "--config-env", "--super-prefix"} {
				if a.val == o || strings.HasPrefix(a.val, o+"=") {
					if o == "--git-dir" || o == "--exec-path" {
						pt.escalate(HostEscape, "git "+o+" points git at a repository or programs of the caller's choosing (their config can run commands)")
					}
				}
			}
			if takesValue(a.val, gitGlobalValueOpts) {
				i++
			}
			continue
		}
		sub = i
		break
	}
	if sub < 0 {
		return nil
	}
	for _, a := range rest[sub+1:] {
		if !a.dyn && (hasFlag(a.val, "--upload-pack") || hasFlag(a.val, "--receive-pack") || hasFlag(a.val, "--exec")) && rest[sub].val != "rebase" {
			pt.escalate(HostEscape, "git "+a.val+" names a program for git to run")
		}
	}
	subArgs := rest[sub+1:]
	switch rest[sub].val {
	case "config":
		parsed := splitArgs(subArgs, []string{"-f", "--file", "--blob", "--type", "--default", "--comment", "--value"})
		ops := operands(parsed)
		if gitConfigReadOnly(parsed, ops) {
			pt.cat, pt.reasons = ReadOnly, nil
			pt.label = "knowledge: git config (reading)"
		}
		if len(ops) > 0 && !ops[0].dyn && (ops[0].val == "set" || ops[0].val == "--add") {
			ops = ops[1:]
		}
		if len(ops) >= 2 {
			key := ops[0]
			if key.dyn {
				pt.escalate(Unknown, "git config sets a key computed at run time")
			} else {
				checkGitKey(pt, word{val: key.val + "=" + ops[1].val, dyn: ops[1].dyn, src: key.src}, false)
			}
		}
	case "rebase":
		for i, a := range subArgs {
			if a.dyn {
				continue
			}
			var cmd *word
			switch {
			case (a.val == "-x" || a.val == "--exec") && i+1 < len(subArgs):
				cmd = &subArgs[i+1]
			case strings.HasPrefix(a.val, "--exec="):
				cmd = &word{val: strings.TrimPrefix(a.val, "--exec="), src: a.src}
			}
			if cmd != nil {
				c := *cmd
				return func() { j.runString(c, "git rebase --exec", s, depth) }
			}
		}
	case "submodule":
		for i, a := range subArgs {
			if !a.dyn && a.val == "foreach" {
				ws := subArgs[i+1:]
				for len(ws) > 0 && !ws[0].dyn && strings.HasPrefix(ws[0].val, "-") {
					ws = ws[1:]
				}
				if len(ws) > 0 {
					joined := word{val: literalJoin(ws), dyn: literalJoin(ws) == "", src: ws[0].src}
					return func() { j.runString(joined, "git submodule foreach", s, depth) }
				}
			}
		}
	case "bisect":
		if len(subArgs) > 1 && !subArgs[0].dyn && subArgs[0].val == "run" {
			inner := subArgs[1:]
			return func() { j.command(inner, s, part{cat: ReadOnly}, depth+1) }
		}
	case "filter-branch", "filter-repo":
		pt.escalate(Unknown, "git "+rest[sub].val+" runs filter commands")
	}
	return nil
}

// gitConfigReadOnly reports a git config invocation that only reads:
// --get/--list/… (or the get/list subcommands) and no value to set.
func gitConfigReadOnly(parsed []opword, ops []word) bool {
	reading := false
	for _, o := range parsed {
		if o.w.dyn {
			return false
		}
		if o.option {
			switch strings.SplitN(o.w.val, "=", 2)[0] {
			case "--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "--show-origin", "--show-scope", "--name-only", "--null", "-z", "--global", "--system", "--local", "--worktree", "-f", "--file", "--includes", "--no-includes", "--type", "--default", "--bool", "--int", "--path":
				reading = reading || strings.HasPrefix(o.w.val, "--get") || o.w.val == "--list" || o.w.val == "-l"
			default:
				return false
			}
		}
	}
	if len(ops) > 0 && (ops[0].val == "get" || ops[0].val == "list") {
		return len(ops) <= 2
	}
	return reading && len(ops) <= 1
}

// runString judges a shell string that a program will run.
func (j *judge) runString(w word, who string, s *simple, depth int) {
	if w.dyn {
		j.unknownPart([]word{w}, who+" runs a command computed at run time")
		return
	}
	j.shellString(w.val, s, depth+1)
}

// checkGitKey escalates a "key=value" configuration that makes git run a
// command. viaFlag is true for git -c.
func checkGitKey(pt *part, kv word, viaFlag bool) {
	if kv.dyn {
		pt.escalate(Unknown, "git configuration computed at run time ("+kv.src+")")
		return
	}
	key, val, _ := strings.Cut(kv.val, "=")
	key = strings.ToLower(key)
	if key == "clean.requireforce" {
		pt.escalate(Destructive, "git -c clean.requireForce=false lets git clean delete without -f")
		return
	}
	if !gitExecKeys().MatchString(key) {
		return
	}
	if strings.HasPrefix(key, "alias.") && !strings.HasPrefix(strings.TrimSpace(val), "!") {
		return // an alias to another git subcommand runs no shell
	}
	how := "git config"
	if viaFlag {
		how = "git -c"
	}
	pt.escalate(HostEscape, how+" "+key+" makes git run a command of the caller's choosing")
}

// containerGlobalValueOpts are docker/podman options before the
// subcommand that take a value.
var containerGlobalValueOpts = []string{"-H", "--host", "--context", "-c", "--config", "-l", "--log-level", "--tlscacert", "--tlscert", "--tlskey", "--url", "--connection", "--root", "--runroot", "--storage-driver", "--cgroup-manager"}

// containerSub returns the subcommand of a docker/podman argv and the words
// after it ("container run" and "container exec" count as run and exec).
func containerSub(args []word) (string, []word) {
	rest := args[1:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a.dyn {
			return "", nil
		}
		if strings.HasPrefix(a.val, "-") {
			if takesValue(a.val, containerGlobalValueOpts) {
				i++
			}
			continue
		}
		if a.val == "container" && i+1 < len(rest) && !rest[i+1].dyn {
			return rest[i+1].val, rest[i+2:]
		}
		return a.val, rest[i+1:]
	}
	return "", nil
}

var hostFlags = []string{"--privileged", "--pid=host", "--network=host", "--net=host", "--ipc=host", "--uts=host", "--userns=host", "--cap-add*", "--device*", "--security-opt*", "--cgroupns=host"}

// checkContainerRun escalates container runs that reach the host: the
// privileged-class flags, and mounts of / or of the container engine's
// socket.
func checkContainerRun(args []word, pt *part) {
	sub, rest := containerSub(args)
	if sub == "compose" {
		for i, a := range rest {
			if !a.dyn && !strings.HasPrefix(a.val, "-") {
				sub, rest = a.val, rest[i+1:]
				break
			}
		}
	}
	if sub != "run" && sub != "create" && sub != "exec" {
		return
	}
	for i, a := range rest {
		if a.dyn {
			continue
		}
		for _, f := range hostFlags {
			if hasFlag(a.val, f) || (f == "--pid=host" && a.val == "--pid" && i+1 < len(rest) && rest[i+1].val == "host") ||
				((f == "--network=host" || f == "--net=host") && (a.val == "--network" || a.val == "--net") && i+1 < len(rest) && rest[i+1].val == "host") {
				pt.escalate(HostEscape, sub+" "+a.val+" gives the container the host")
			}
		}
		var mount string
		switch {
		case (a.val == "-v" || a.val == "--volume" || a.val == "--mount") && i+1 < len(rest):
			if rest[i+1].dyn {
				// -v "$PWD":/src and -v $(pwd):/app mount the project.
				if !projectMount(rest[i+1].src) {
					pt.escalate(Unknown, "mounts a path computed at run time into the container ("+rest[i+1].src+")")
				}
				continue
			}
			mount = rest[i+1].val
		case strings.HasPrefix(a.val, "--volume=") || strings.HasPrefix(a.val, "--mount="):
			mount = a.val[strings.IndexByte(a.val, '=')+1:]
		case strings.HasPrefix(a.val, "-v") && len(a.val) > 2 && a.val[2] != '-':
			mount = a.val[2:]
		default:
			continue
		}
		if src := mountSource(mount); hostMount(src) {
			pt.escalate(HostEscape, "mounts "+src+" of the host into the container")
		}
	}
}

// projectMount reports a dynamic mount source that is the working
// directory: $PWD, ${PWD}, "$PWD", $(pwd), `pwd`, optionally with a
// relative path after it.
func projectMount(src string) bool {
	src = strings.Trim(src, `"'`)
	for _, p := range []string{"$PWD", "${PWD}", "$(pwd)", "`pwd`"} {
		if strings.HasPrefix(src, p) {
			rest := strings.TrimPrefix(src, p)
			rest = strings.TrimLeft(rest, `"'`)
			return !strings.Contains(rest, "..") && !strings.Contains(rest, "$")
		}
	}
	return false
}

// hostMount reports mount sources that hand the host to the container:
// the root, the engine's socket, system directories, the home directory
// and its credentials.
func hostMount(src string) bool {
	if src == "" {
		return false
	}
	switch src {
	case "/", "~", "/home", "/Users", "/root", "/etc", "/var", "/usr", "/proc", "/sys", "/dev", "/boot", "/run":
		return true
	}
	for _, p := range []string{"/etc/", "/root/", "/var/run/", "/run/", "/proc/", "/sys/", "/dev/", "/boot/", "~/.ssh", "~/.aws", "~/.kube", "~/.config", "~/.docker", "~/.gnupg"} {
		if strings.HasPrefix(src, p) {
			return true
		}
	}
	return strings.HasSuffix(src, ".sock") || (strings.HasPrefix(src, "/home/") && strings.Count(src, "/") == 2) ||
		(strings.HasPrefix(src, "/Users/") && strings.Count(src, "/") == 2)
}

// mountSource returns the host side of "-v SRC:DST" or "--mount
// type=bind,source=SRC,…".
func mountSource(m string) string {
	if strings.Contains(m, "source=") || strings.Contains(m, "src=") {
		for _, kv := range strings.Split(m, ",") {
			k, v, _ := strings.Cut(kv, "=")
			if k == "source" || k == "src" {
				if v != "/" {
					v = strings.TrimSuffix(v, "/")
				}
				return v
			}
		}
		return ""
	}
	src, _, _ := strings.Cut(m, ":")
	if src != "/" {
		src = strings.TrimSuffix(src, "/")
	}
	return src
}

// containerExec judges `docker exec [opts] CONTAINER CMD…` by its inner
// command. Other subcommands go to the knowledge table.
func (j *judge) containerExec(prog string, args []word, s *simple, pt *part, depth int) bool {
	sub, rest := containerSub(args)
	if sub != "exec" {
		return false
	}
	valueOpts := []string{"-e", "--env", "--env-file", "-u", "--user", "-w", "--workdir", "--detach-keys"}
	i := 0
	for i < len(rest) && !rest[i].dyn && strings.HasPrefix(rest[i].val, "-") {
		if takesValue(rest[i].val, valueOpts) {
			i++
		}
		i++
	}
	checkContainerRun(args, pt)
	pt.escalate(Mutating, prog+" exec runs a command inside a container")
	pt.label = prog + " exec"
	j.parts = append(j.parts, *pt)
	if i+1 < len(rest) {
		j.command(rest[i+1:], s, part{cat: ReadOnly}, depth+1)
	}
	return true
}

// kubectlExec judges `kubectl exec POD -- CMD…` by its inner command.
func (j *judge) kubectlExec(prog string, args []word, s *simple, pt *part, depth int) bool {
	rest := args[1:]
	at := -1
	for i, a := range rest {
		if !a.dyn && !strings.HasPrefix(a.val, "-") {
			if a.val == "exec" {
				at = i
			}
			break
		}
	}
	if at < 0 {
		return false
	}
	pt.escalate(Networked, prog+" exec runs a command in a pod")
	pt.label = prog + " exec"
	j.parts = append(j.parts, *pt)
	for i, a := range rest[at+1:] {
		if !a.dyn && a.val == "--" {
			if inner := rest[at+2+i:]; len(inner) > 0 {
				j.command(inner, s, part{cat: ReadOnly}, depth+1)
			}
			return true
		}
	}
	j.unknownPart(rest[at+1:], prog+" exec without -- : sluice cannot tell the command from the pod")
	return true
}

// envRunner judges `devbox run CMD`, `mise exec -- CMD`, `direnv exec DIR
// CMD`, `poetry run CMD`, `bundle exec CMD`, `nix-shell --run STRING`….
func (j *judge) envRunner(prog string, args []word, s *simple, pt *part, depth int) bool {
	if len(args) < 2 || args[1].dyn {
		return false
	}
	sub := args[1].val
	var inner []word
	switch {
	case prog == "nix-shell":
		for i, a := range args[1:] {
			if !a.dyn && (a.val == "--run" || a.val == "--command") && i+2 < len(args) {
				pt.label = "nix-shell " + a.val
				j.parts = append(j.parts, *pt)
				j.runString(args[i+2], "nix-shell "+a.val, s, depth)
				return true
			}
		}
		return false
	case (prog == "mise" || prog == "rtx") && (sub == "exec" || sub == "x"):
		for i, a := range args[2:] {
			if !a.dyn && a.val == "--" {
				inner = args[3+i:]
				break
			}
		}
		if inner == nil {
			j.unknownPart(args, prog+" "+sub+" without -- : sluice cannot tell the command from the tools")
			return true
		}
	case prog == "direnv" && sub == "exec":
		if len(args) > 3 {
			inner = args[3:]
		}
	case prog == "bundle" && sub == "exec", sub == "run" && prog != "bundle":
		inner = args[2:]
		for len(inner) > 0 && !inner[0].dyn && strings.HasPrefix(inner[0].val, "-") {
			inner = inner[1:]
		}
	default:
		return false
	}
	pt.label = prog + " " + sub
	// These load the project's own configuration (scripts in devbox.json or
	// pyproject.toml, .envrc, .mise.toml, the Gemfile) before the command,
	// and "run NAME" may name a project script rather than a program:
	// project code runs whatever the command is.
	pt.escalate(Unknown, prog+" "+sub+" runs the project's scripts or environment")
	j.parts = append(j.parts, *pt)
	if len(inner) > 0 {
		j.command(inner, s, part{cat: ReadOnly}, depth+1)
	}
	return true
}

// findExec judges the commands find runs (-exec, -execdir, -ok, -okdir).
func (j *judge) findExec(args []word, s *simple, depth int) {
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a.dyn || (a.val != "-exec" && a.val != "-execdir" && a.val != "-ok" && a.val != "-okdir") {
			continue
		}
		var inner []word
		i++
		for ; i < len(args); i++ {
			w := args[i]
			if !w.dyn && (w.val == ";" || w.val == "+") {
				break
			}
			if !w.dyn && strings.Contains(w.val, "{}") {
				w = word{dyn: true, src: w.src}
			}
			inner = append(inner, w)
		}
		if len(inner) > 0 {
			j.command(inner, s, part{cat: ReadOnly}, depth+1)
		}
	}
}

var awkRedirect = lazyRegexp(`\b(print|printf)\b[^;}\n]*>`)

// awkIndirect finds gawk's indirect function calls: @name(...).
var awkIndirect = lazyRegexp(`@[A-Za-z_][A-Za-z_0-9]*\s*\(`)

// awkRead finds the files an awk program reads with getline < "FILE".
var awkRead = lazyRegexp(`getline[^<;}]*<\s*"([^"]+)"`)

// sedRead finds the files a sed script reads with r FILE or R FILE.
var sedRead = lazyRegexp(`(?m)(?:^|[;{}\s\d$/])[rR]\s*([^\s;}]+)`)

// checkAwk escalates awk programs that run commands or write files.
func checkAwk(args []word, s *simple, pt *part) {
	ops := splitArgs(args[1:], []string{"-F", "-v", "--assign", "--field-separator", "-e", "--source", "-i", "--include", "-l", "--load"})
	for _, o := range ops {
		if o.option && (o.w.val == "-f" || strings.HasPrefix(o.w.val, "--file")) {
			pt.escalate(Unknown, "awk -f runs a program file sluice cannot see")
			return
		}
		if o.option && (o.w.val == "-i" || o.w.val == "-l" || hasFlag(o.w.val, "--include") || hasFlag(o.w.val, "--load")) {
			pt.escalate(Unknown, "awk "+o.w.val+" loads a program file or an extension sluice cannot see")
			return
		}
	}
	// The program: every -e/--source text, else the first operand.
	var progs []word
	for _, o := range ops {
		if !o.option {
			continue
		}
		if v, ok := optionValue(o, "--source"); ok {
			progs = append(progs, v)
		} else if o.value != nil && o.w.val != "-F" && o.w.val != "-v" && o.w.val != "--assign" && o.w.val != "--field-separator" {
			progs = append(progs, *o.value)
		}
	}
	if len(progs) == 0 {
		if opnds := operands(ops); len(opnds) > 0 {
			progs = opnds[:1]
		}
	}
	for _, p := range progs {
		if p.dyn {
			pt.escalate(Unknown, "the awk program is computed at run time")
			return
		}
		awkProgram(p.val, s, pt)
	}
}

// awkProgram escalates one awk program text.
func awkProgram(src string, s *simple, pt *part) {
	// A backslash-newline joins lines: "print \\\n> FILE" is one
	// statement.
	src = strings.ReplaceAll(src, "\\\n", " ")
	for _, m := range awkRead().FindAllStringSubmatch(src, -1) {
		pt.reads = append(pt.reads, pathRef{w: word{val: m[1], src: m[1]}, cwd: s.cwd, how: "awk getline"})
	}
	switch {
	case strings.Contains(src, "@include") || strings.Contains(src, "@load"):
		pt.escalate(Unknown, "the awk program loads another program or an extension (@include, @load)")
	case awkIndirect().MatchString(src):
		pt.escalate(Unknown, "the awk program calls a function by name at run time (@name(...)), which may be system")
	case strings.Contains(src, "system"):
		pt.escalate(Unknown, "the awk program calls system()")
	case strings.Contains(strings.ReplaceAll(src, "||", ""), "|"):
		pt.escalate(Unknown, "the awk program pipes to or from a command")
	case awkRedirect().MatchString(src):
		pt.escalate(Unknown, "the awk program may write to a file")
	}
}

// checkSed escalates sed scripts that run commands (e, s///e) or write
// files (w, W, s///w).
func checkSed(args []word, s *simple, pt *part) {
	ops := splitArgs(args[1:], []string{"-e", "--expression", "-f", "--file", "-l", "--line-length"})
	var scripts []word
	fromE := false
	for _, o := range ops {
		if !o.option {
			continue
		}
		if o.w.val == "-f" || strings.HasPrefix(o.w.val, "--file") {
			pt.escalate(Unknown, "sed -f runs a script file sluice cannot see")
			return
		}
		if v, ok := optionValue(o, "--expression"); ok {
			scripts, fromE = append(scripts, v), true
		} else if v, ok := optionValue(o, "-e"); ok {
			scripts, fromE = append(scripts, v), true
		} else if o.value != nil && len(o.w.val) > 2 && o.w.val[1] != '-' && strings.HasSuffix(o.w.val, "e") {
			scripts, fromE = append(scripts, *o.value), true // -ne SCRIPT
		}
	}
	if !fromE {
		if opnds := operands(ops); len(opnds) > 0 {
			scripts = append(scripts, opnds[0])
		}
	}
	for _, sc := range scripts {
		if sc.dyn {
			pt.escalate(Unknown, "the sed script is computed at run time")
			return
		}
		if why := sedDanger(sc.val); why != "" {
			pt.escalate(Unknown, "the sed script "+why)
			return
		}
		for _, m := range sedRead().FindAllStringSubmatch(sc.val, -1) {
			pt.reads = append(pt.reads, pathRef{w: word{val: m[1], src: m[1]}, cwd: s.cwd, how: "sed r"})
		}
	}
	// sed -i writes every file it is given.
	inPlace := false
	for _, o := range ops {
		if o.option && (hasFlag(o.w.val, "-i*") || strings.HasPrefix(o.w.val, "--in-place")) {
			inPlace = true
		}
	}
	if inPlace {
		files := operands(ops)
		if !fromE && len(files) > 0 {
			files = files[1:] // the first operand was the script
		}
		for _, f := range files {
			pt.writes = append(pt.writes, pathRef{w: f, cwd: s.cwd, how: "sed -i"})
		}
	}
}

// sedDanger finds the e and w commands and the e and w flags of s in a sed
// script. It reads the script the way sed does, command by command; where
// it cannot follow the script it says so rather than pass it.
func sedDanger(sc string) string {
	i := 0
	for i < len(sc) {
		// Skip separators, addresses and negation before a command.
		for i < len(sc) && strings.IndexByte(" \t\n;{}!", sc[i]) >= 0 {
			i++
		}
		for i < len(sc) && (sc[i] == '/' || sc[i] == '\\' || sc[i] == '$' || sc[i] == ',' || sc[i] == '~' || sc[i] == '+' || (sc[i] >= '0' && sc[i] <= '9')) {
			if sc[i] == '/' || sc[i] == '\\' {
				d := sc[i]
				if d == '\\' {
					if i+1 >= len(sc) {
						return ""
					}
					i++
					d = sc[i]
				}
				i++
				for i < len(sc) && sc[i] != d {
					if sc[i] == '\\' {
						i++
					}
					i++
				}
			}
			i++
			for i < len(sc) && (sc[i] == ' ' || sc[i] == 'I' || sc[i] == 'M') {
				i++
			}
		}
		for i < len(sc) && (sc[i] == ' ' || sc[i] == '!') {
			i++
		}
		if i >= len(sc) {
			return ""
		}
		c := sc[i]
		i++
		switch c {
		case 'e':
			return "runs a command (e)"
		case 'w', 'W':
			return "writes to a file (" + string(c) + ")"
		case 's', 'y':
			if i >= len(sc) {
				return "cannot be read"
			}
			d := sc[i]
			i++
			for n := 0; n < 2; n++ {
				for i < len(sc) && sc[i] != d {
					switch {
					case sc[i] == '\\':
						i++
					case sc[i] == '[' && n == 0:
						// A bracket expression may hold the delimiter: skip it whole.
						k := i + 1
						if k < len(sc) && sc[k] == '^' {
							k++
						}
						if k < len(sc) && sc[k] == ']' {
							k++
						}
						for k < len(sc) && sc[k] != ']' {
							// [:alpha:], [=a=], [.-.] inside the bracket
							// end at their own ":]", "=]", ".]".
							if sc[k] == '[' && k+1 < len(sc) && strings.IndexByte(":=.", sc[k+1]) >= 0 {
								if end := strings.Index(sc[k+2:], string(sc[k+1])+"]"); end >= 0 {
									k += 2 + end + 2
									continue
								}
							}
							k++
						}
						i = k
					}
					i++
				}
				i++
			}
			for i < len(sc) && strings.IndexByte("gipmIM0123456789ew", sc[i]) >= 0 {
				if c == 's' && sc[i] == 'e' {
					return "runs the result as a command (s///e)"
				}
				if c == 's' && sc[i] == 'w' {
					return "writes to a file (s///w)"
				}
				i++
			}
		case 'a', 'i', 'c', 'r', 'R', 'b', 't', 'T', ':', 'l', 'L', 'q', 'Q', 'v', 'z', 'F':
			// These take the rest of the line (text, a label or a file to
			// read): skip to the end of the command.
			for i < len(sc) && sc[i] != '\n' && (c == 'a' || c == 'i' || c == 'c' || sc[i] != ';') {
				i++
			}
		}
	}
	return ""
}

// shellOptions are options whose value is a command line the program runs
// (rsync -e, tar -I, git --upload-pack): the value is judged as shell.
var shellOptions = sync.OnceValue(func() map[string][]string {
	return map[string][]string{
		"rsync": {"-e", "--rsh", "--rsync-path"},
		"tar":   {"-I", "--use-compress-program", "--to-command", "--checkpoint-action", "--info-script", "-F", "--new-volume-script"},
		"split": {"--filter"},
		"go":    {"-exec", "-toolexec"},
		"ssh":   {"-o"},
		"scp":   {"-S", "-o"},
		"sftp":  {"-S", "-o"},
		"zip":   {"-TT", "--unzip-command"},
		"make":  {"SHELL"},
	}
})

// optionCommands judges the commands given as option values. It returns
// a func that adds their parts after the program's own.
func (j *judge) optionCommands(prog string, opts []string, args []word, s *simple, pt *part, depth int) func() {
	var cmds []word
	for i, a := range args[1:] {
		if a.dyn {
			continue
		}
		for _, o := range opts {
			var v word
			switch {
			case a.val == o && i+2 < len(args):
				v = args[i+2]
			case strings.HasPrefix(a.val, o+"="):
				v = word{val: a.val[len(o)+1:], src: a.src}
			case len(o) == 2 && o[1] != '-' && strings.HasPrefix(a.val, o) && len(a.val) > 2 && a.val[1] != '-':
				v = word{val: a.val[2:], src: a.src}
			default:
				continue
			}
			if prog == "ssh" || prog == "scp" || prog == "sftp" {
				// -o KEY=VALUE: only the keys that run commands.
				key, val, _ := strings.Cut(v.val, "=")
				switch strings.ToLower(key) {
				case "proxycommand", "localcommand", "knownhostscommand", "remotecommand":
					v = word{val: val, dyn: v.dyn, src: v.src}
				default:
					if o == "-o" {
						continue
					}
				}
			}
			v.val = strings.TrimPrefix(v.val, "exec=") // tar --checkpoint-action=exec=CMD
			pt.escalate(Unknown, prog+" "+o+" runs a command given on the command line")
			cmds = append(cmds, v)
		}
	}
	if len(cmds) == 0 {
		return nil
	}
	return func() {
		for _, c := range cmds {
			j.runString(c, prog, s, depth)
		}
	}
}

// lazyRegexp compiles a pattern on first use: sluice run and the hooks
// load this package and should not pay for patterns they never match.
func lazyRegexp(pat string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pat) })
}
