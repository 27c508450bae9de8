package exec

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Shell is the shell an exec request's command line runs in: bash when
// the machine has it, as the agents run their commands, else /bin/sh.
// The policy parses the line in the same dialect (policy.Options.Shell),
// so that what is judged is what runs.
var Shell = sync.OnceValue(func() string {
	for _, p := range []string{"/bin/bash", "/usr/bin/bash"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return "/bin/sh"
})

// ShellDialect is Shell's dialect for the policy's parser: "bash" or
// "posix".
func ShellDialect() string {
	if Shell() == "/bin/sh" {
		return "posix"
	}
	return "bash"
}

// lazyRegexp compiles pat on first use rather than when every sluice
// process starts (an agent's hook included).
func lazyRegexp(pat string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pat) })
}

// bashBuiltin reports whether bash runs w itself (a builtin) or reads
// it as its grammar (a reserved word) in the first place of a command: a
// line that starts with one always goes through the shell. (A switch,
// not a map: nothing to build when a process starts.)
func bashBuiltin(w string) bool {
	switch w {
	case ".", ":", "[", "alias", "bg", "bind", "break", "builtin", "caller", "case", "cd",
		"command", "compgen", "complete", "compopt", "continue", "coproc", "declare", "dirs",
		"disown", "do", "done", "echo", "elif", "else", "enable", "esac", "eval", "exec", "exit",
		"export", "false", "fc", "fg", "fi", "for", "function", "getopts", "hash", "help",
		"history", "if", "in", "jobs", "kill", "let", "local", "logout", "mapfile", "popd",
		"printf", "pushd", "pwd", "read", "readarray", "readonly", "return", "select", "set",
		"shift", "shopt", "source", "suspend", "test", "then", "time", "times", "trap", "true",
		"type", "typeset", "ulimit", "umask", "unalias", "unset", "until", "wait", "while":
		return true
	}
	return false
}

// simpleWord reports whether b may appear in a word that bash takes
// literally: no quoting, expansion, globbing, tilde, brace, comment,
// operator or history character can be made of these.
func simpleWord(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' ||
		b == '_' || b == '.' || b == '/' || b == ':' || b == '=' || b == ',' || b == '+' ||
		b == '@' || b == '-'
}

// DirectArgv is the argument list of a command line that bash would run
// as one simple command of literal words with no shell work around it
// (`git status`, `go test ./...`, `make -j4 build`): bash itself execs
// such a command in place of its own process. ok is false for anything
// else: quotes, $, globs, ~, braces, redirections, pipes, lists,
// assignments, a first word that is a builtin or reserved word (true
// included: bash runs its own, and the first true on PATH may be
// anybody's). The runner starts such a command without the shell in
// between, as bash would have exec'd it, and saves the shell's start
// (~0.5 ms and a process's worth of CPU a run).
func DirectArgv(command string) (argv []string, ok bool) {
	if len(command) == 0 || len(command) > 4096 {
		return nil, false
	}
	start := -1
	for i := 0; i <= len(command); i++ {
		if i == len(command) || command[i] == ' ' || command[i] == '\t' {
			if start >= 0 {
				argv = append(argv, command[start:i])
				start = -1
			}
			continue
		}
		if !simpleWord(command[i]) {
			return nil, false
		}
		if start < 0 {
			start = i
		}
	}
	if len(argv) == 0 {
		return nil, false
	}
	if name := argv[0]; bashBuiltin(name) || strings.ContainsAny(name, "=%") {
		// A builtin (bash runs its own, whatever PATH holds), or an
		// assignment (A=1 cmd) or job spec (%1).
		return nil, false
	}
	return argv, true
}

// lookProgram finds name as bash would run it from dir with env's PATH:
// a name with a slash is that file (relative to dir, and returned as
// given); any other is the first executable regular file in PATH's
// directories. ok is false when
// bash would do something else or say something (no such file, a PATH
// entry that is relative or empty, a file that is neither an ELF program
// nor a #! script, which bash would read as a shell script itself), so
// that the line goes through the shell and fails or runs as it would.
func lookProgram(name, dir string, env []string) (path string, ok bool) {
	if strings.Contains(name, "/") {
		// As given, relative to dir (the child starts there): a #! script
		// sees the same $0 as under bash.
		file := name
		if !filepath.IsAbs(name) {
			file = filepath.Join(dir, name)
		}
		return name, runnable(file)
	}
	pathVar := ""
	for i := len(env) - 1; i >= 0; i-- {
		if v, found := strings.CutPrefix(env[i], "PATH="); found {
			pathVar = v
			break
		}
	}
	if pathVar == "" {
		return "", false
	}
	for _, d := range strings.Split(pathVar, ":") {
		if !filepath.IsAbs(d) {
			return "", false // "" and relative entries mean the run's directory: leave it to bash
		}
		// Joined as bash joins them, never cleaned: "link/../bin" is
		// resolved by the kernel after the link, and $_ shows it as is.
		p := d + "/" + name
		if strings.HasSuffix(d, "/") {
			p = d + name
		}
		var st unix.Stat_t
		if unix.Stat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || unix.Access(p, unix.X_OK) != nil {
			continue
		}
		return p, runnable(p)
	}
	return "", false
}

// runnable reports whether path is an executable regular file that
// execve runs as it is: an ELF program or a #! script. Nothing but a
// regular file is ever opened for reading (openRegular): the name comes
// from an agent, and opening a device can act.
func runnable(path string) bool {
	if unix.Access(path, unix.X_OK) != nil {
		return false
	}
	fd, err := openRegular(path)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var head [4]byte
	n, _ := unix.Read(fd, head[:])
	return n >= 2 && head[0] == '#' && head[1] == '!' || n == 4 && string(head[:]) == "\x7fELF"
}

// directEnv is env as bash hands it to a command it execs in dir: $_
// the program's path, SHLVL as bash leaves it when it execs its last
// command (as inherited; 0 when unset), PWD dir unless it names dir
// already. ok is false for an SHLVL bash would rewrite or warn about
// (not a plain number below 999): the shell then runs the line.
func directEnv(env []string, dir, path string) (out []string, ok bool) {
	out = make([]string, 0, len(env)+3)
	shlvl, pwd := false, false
	for _, kv := range env {
		switch {
		case strings.HasPrefix(kv, "_="):
			continue
		case strings.HasPrefix(kv, "SHLVL="):
			v := kv[len("SHLVL="):]
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n >= 999 || strconv.Itoa(n) != v {
				return nil, false
			}
			shlvl = true
		case strings.HasPrefix(kv, "PWD="):
			if v := kv[len("PWD="):]; !filepath.IsAbs(v) || !sameDir(v, dir) {
				continue
			}
			pwd = true
		}
		out = append(out, kv)
	}
	if !shlvl {
		out = append(out, "SHLVL=0")
	}
	if !pwd {
		out = append(out, "PWD="+dir)
	}
	return append(out, "_="+path), true
}

// sameDir reports whether a and b name the same directory.
func sameDir(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// shellFree reports whether env leaves a simple command to run as it
// reads: nothing bash takes from the environment can change it (an
// exported function BASH_FUNC_name%% standing in for the program, a
// BASH_ENV or ENV file run first, SHELLOPTS or BASHOPTS turning on
// xtrace, noexec and the like, POSIXLY_CORRECT; anything else named
// BASH* is let go to bash too, to be safe).
func shellFree(env []string) bool {
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "BASH"), name == "ENV", name == "SHELLOPTS", name == "POSIXLY_CORRECT":
			return false
		}
	}
	return true
}
