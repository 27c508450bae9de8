package exec

import (
	"bufio"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
)

// RequestIDVar is the environment variable that carries the request's id
// into the child.
const RequestIDVar = "SLUICE_REQUEST_ID"

// DefaultEnvAllow are the names a run inherits from the environment it is
// started from (serve's, or the agent's for 'sluice sandbox'); nothing
// else passes unless config.toml's env_allow names it. An entry ending in
// '*' admits every name it is a prefix of; names are matched exactly, case
// included. Each entry is a place, a name, a preference or a switch that
// real tools need, and none carries a secret or options or a program to
// run: not GOFLAGS, MAKEFLAGS, RUSTFLAGS, CC, LD_*, *_OPTIONS (NODE_,
// JAVA_TOOL_, TAR_), GREP, PAGER, EDITOR, VISUAL, LESS*, GIT_*,
// PYTHONPATH, PYTHONSTARTUP, PERL5LIB, RUBYOPT, BASH_ENV, ENV, PROMPT_COMMAND,
// GOENV, NPM_CONFIG_*, TERMINFO, LOCPATH, GCONV_PATH, SSH_AUTH_SOCK,
// DISPLAY, DBUS_SESSION_BUS_ADDRESS and the like. Left out as well:
// SHLVL, OLDPWD, COLUMNS and LINES, which the shell and the terminal set
// themselves; TMPDIR is inherited, and a confined run gets its own.
var DefaultEnvAllow = []string{
	// Where programs are found, whose home it is, who runs them.
	"PATH", "HOME", "USER", "LOGNAME",
	// The person's login shell, for tools that open one or edit its
	// startup files; kept only when /etc/shells lists it (a program of
	// the agent's own is not a login shell).
	"SHELL",
	// The terminal and the colours it takes (a run without TERM gets
	// xterm-256color).
	"TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE",
	// Language, locale and time zone; a locale value with a '/' is
	// dropped (glibc would load a locale from that path).
	"LANG", "LANGUAGE", "LC_*", "TZ",
	// The directory the run starts in (the runner sets it; the wrapper's
	// comes from the agent's shell, which set it where the run starts).
	"PWD",
	// The temporary directory (a confined run gets a private one instead).
	"TMPDIR",
	// The XDG base directories: where tools keep their configuration,
	// caches, data and state, and the user's runtime directory.
	"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
	// Go: where the toolchain, the module cache and the build cache are,
	// where modules come from and which are private, which toolchain.
	// (GOFLAGS, GOENV, GOINSECURE and the cgo compilers and flags are
	// left out.)
	"GOPATH", "GOROOT", "GOCACHE", "GOMODCACHE", "GOPROXY", "GOSUMDB", "GONOSUMDB",
	"GOPRIVATE", "GONOPROXY", "GOTOOLCHAIN",
	// Rust, Node, Python, Java, Android, .NET, Deno, Bun: where the
	// toolchains and their version managers live, and which toolchain
	// or environment is active.
	"CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN",
	"NVM_DIR", "NVM_BIN", "PNPM_HOME", "VOLTA_HOME", "BUN_INSTALL", "DENO_DIR",
	"PYENV_ROOT", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV",
	"JAVA_HOME", "ANDROID_HOME", "ANDROID_SDK_ROOT", "DOTNET_ROOT",
	// Tools behave as in CI (no prompts, no spinners) when the person
	// set it.
	"CI",
	// The network's proxies and the certificates it is trusted by, without
	// which a networked run behind a company proxy reaches nothing. A
	// proxy URL may hold a user and password: extra_secret_patterns =
	// ["*_PROXY"] keeps the proxies out.
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
	"http_proxy", "https_proxy", "no_proxy", "all_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO",
}

// DefaultSecretPatterns are the environment names kept from a run when no
// patterns are configured, whether inherited or asked for by the request.
// They are path.Match globs, matched without regard to case.
var DefaultSecretPatterns = []string{
	"*_TOKEN", "*_TOKEN_*", "*_SECRET*", "*_PASSWORD*", "*_PASSWD*",
	"*_API_KEY", "*_APIKEY", "*_ACCESS_KEY*", "*_PRIVATE_KEY*", "*_CREDENTIALS*",
	"AWS_*", "GITHUB_TOKEN", "GH_TOKEN", "ANTHROPIC_*", "OPENAI_*",
	"GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS", "GEMINI_*",
	"NPM_TOKEN", "SSH_AUTH_SOCK",
}

// BuildEnv is a run's environment: InheritEnv(env, allow, patterns), plus
// extra (the request's env) minus the names that match patterns, plus
// SLUICE_REQUEST_ID=id when id is not empty.
//
// A name set in extra replaces the inherited one, and extra is appended in
// sorted order, so the result holds each name once (if env did) and is
// deterministic. extra is not held to the allow-list: the policy judges
// what a request asks to set.
func BuildEnv(env, allow, patterns []string, extra map[string]string, id string) []string {
	return withRequest(InheritEnv(env, allow, patterns), patterns, extra, id)
}

// InheritEnv returns the entries of env a run inherits: those whose names
// DefaultEnvAllow or allow admit, minus those that match a secret pattern,
// unless allow names them exactly (a person who writes env_allow =
// ["GITHUB_TOKEN"] means it; a glob such as "MY_*" does not let MY_API_KEY
// through). Entries of env without '=' are dropped, and so is
// SLUICE_REQUEST_ID, which is the run's own.
//
// allow holds names and PREFIX* globs (CheckEnvAllow), matched case
// included; patterns are path.Match globs matched without regard to case,
// a malformed one matching only the identical name. A nil patterns means
// DefaultSecretPatterns; an empty, non-nil slice strips nothing.
func InheritEnv(env, allow, patterns []string) []string {
	return inheritEnv(env, allow, patterns, loginShells)
}

// inheritEnv is InheritEnv with the login shells read by shells, when a
// SHELL is to be judged. A name nothing admits is passed over before the
// secret patterns are tried: an agent's environment holds dozens of names
// and few of them are admitted.
func inheritEnv(env, allow, patterns []string, shells func() map[string]bool) []string {
	secret := secretMatcher(patterns)
	var known map[string]bool
	out := make([]string, 0, 32)
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !validName(name) || name == RequestIDVar {
			continue
		}
		if exactlyAllowed(name, allow) {
			out = append(out, kv)
			continue
		}
		byAllow := allowed(name, allow)
		if !byAllow && !allowed(name, DefaultEnvAllow) || secret(name) {
			continue
		}
		if !byAllow {
			if name == "SHELL" && known == nil {
				known = shells()
			}
			if !defaultValueOK(name, value, known) {
				continue
			}
		}
		out = append(out, kv)
	}
	return out
}

// withRequest is base (inherited already) plus extra minus the names that
// match patterns, plus the id when not empty.
func withRequest(base, patterns []string, extra map[string]string, id string) []string {
	out := make([]string, 0, len(base)+len(extra)+1)
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if _, over := extra[name]; over {
			continue
		}
		out = append(out, kv)
	}
	if len(extra) > 0 {
		secret := secretMatcher(patterns)
		names := make([]string, 0, len(extra))
		for name := range extra {
			if validName(name) && name != RequestIDVar && !secret(name) {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		for _, name := range names {
			out = append(out, name+"="+extra[name])
		}
	}
	if id != "" {
		out = append(out, RequestIDVar+"="+id)
	}
	return out
}

// validName reports whether name can be an environment variable's name
// here: not empty, no '=' or NUL.
func validName(name string) bool {
	return name != "" && !strings.ContainsAny(name, "=\x00")
}

// exactlyAllowed reports whether allow holds name itself, not as a glob.
func exactlyAllowed(name string, allow []string) bool {
	for _, a := range allow {
		if a == name {
			return true
		}
	}
	return false
}

// allowed reports whether an entry of allow admits name: the name itself,
// or a prefix of it followed by '*'.
func allowed(name string, allow []string) bool {
	for _, a := range allow {
		if a == name {
			return true
		}
		if p, glob := strings.CutSuffix(a, "*"); glob && strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// defaultValueOK is the check of a value the default list admits: a
// locale with no '/' (else glibc reads the locale from that path), and a
// SHELL that is one of the login shells.
func defaultValueOK(name, value string, shells map[string]bool) bool {
	switch {
	case name == "SHELL":
		return shells[value]
	case name == "LANG" || name == "LANGUAGE" || strings.HasPrefix(name, "LC_"):
		return !strings.Contains(value, "/")
	}
	return true
}

// loginShells are the absolute paths /etc/shells lists.
func loginShells() map[string]bool {
	shells := map[string]bool{}
	f, err := os.Open("/etc/shells")
	if err != nil {
		return shells
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); strings.HasPrefix(l, "/") {
			shells[l] = true
		}
	}
	return shells
}

// secretMatcher reports whether a name matches one of patterns (nil:
// DefaultSecretPatterns), without regard to case.
func secretMatcher(patterns []string) func(string) bool {
	if patterns == nil {
		patterns = DefaultSecretPatterns
	}
	globs := make([]glob, len(patterns))
	for i, p := range patterns {
		globs[i] = compileGlob(strings.ToUpper(p))
	}
	return func(name string) bool { return secretName(name, globs) }
}

// secretName reports whether name matches one of the upper-cased globs.
func secretName(name string, globs []glob) bool {
	n := strings.ToUpper(name)
	for _, g := range globs {
		if g.match(n) {
			return true
		}
	}
	return false
}

// A glob is a path.Match pattern made ready: one of '*' and literal
// characters only (the secret patterns are all such) is matched as its
// literal parts in order, without path.Match's backtracking; any other is
// left to path.Match. A malformed pattern matches only the identical name.
type glob struct {
	pattern string
	parts   []string // split at '*'; nil: path.Match
}

func compileGlob(p string) glob {
	if strings.ContainsAny(p, `?[\/`) || !strings.Contains(p, "*") {
		return glob{pattern: p}
	}
	return glob{pattern: p, parts: strings.Split(p, "*")}
}

func (g glob) match(name string) bool {
	if g.parts == nil || strings.Contains(name, "/") {
		ok, err := path.Match(g.pattern, name)
		if err != nil {
			return g.pattern == name
		}
		return ok
	}
	first, last := g.parts[0], g.parts[len(g.parts)-1]
	if len(name) < len(first)+len(last) || !strings.HasPrefix(name, first) || !strings.HasSuffix(name, last) {
		return false
	}
	rest := name[len(first) : len(name)-len(last)]
	for _, part := range g.parts[1 : len(g.parts)-1] {
		i := strings.Index(rest, part)
		if i < 0 {
			return false
		}
		rest = rest[i+len(part):]
	}
	return true
}

// CheckPatterns reports the first malformed pattern, for a config loader to
// refuse before it would quietly be treated as a literal name.
func CheckPatterns(patterns []string) error {
	for _, p := range patterns {
		if p == "" {
			return fmt.Errorf("exec: empty secret pattern")
		}
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("exec: secret pattern %q: %w", p, err)
		}
	}
	return nil
}

// CheckEnvAllow reports the first entry of an allow-list that is neither
// a name (letters, digits and '_', not starting with a digit) nor such a
// name's prefix followed by '*'. A lone "*" is refused: it would let
// everything through, secrets' neighbours and options alike.
func CheckEnvAllow(allow []string) error {
	for _, a := range allow {
		name, glob := strings.CutSuffix(a, "*")
		switch {
		case a == "":
			return fmt.Errorf("exec: empty name in the environment allow-list")
		case glob && name == "":
			return fmt.Errorf("exec: %q would pass the whole environment; name the variables (or a prefix such as \"MY_*\")", a)
		case !envName(name):
			return fmt.Errorf("exec: %q is not a variable name or a PREFIX_* glob (letters, digits and _, then an optional final *)", a)
		}
	}
	return nil
}

// envName reports whether s is made of letters, digits and '_' and does
// not start with a digit (a shell's variable name).
func envName(s string) bool {
	for i, c := range s {
		switch {
		case c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return s != ""
}
