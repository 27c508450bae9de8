//go:build unix

package exec

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/exec/sandbox"
	"github.com/sluice-dev/sluice/queue"
	"golang.org/x/sys/unix"
)

// Sandbox modes: what happens where confinement is unavailable.
const (
	// SandboxPrefer confines where the kernel can and runs unconfined,
	// marked as such, where it cannot.
	SandboxPrefer = "prefer"
	// SandboxRequire confines where it can; where it cannot, nothing runs
	// without a person (the engine's judge turns allow into ask).
	SandboxRequire = "require"
	// SandboxOff never confines.
	SandboxOff = "off"
)

// Sandbox values of a result that ran without confinement.
const (
	// Unconfined is what a result says when a person chose to run it
	// without confinement.
	Unconfined = queue.Unconfined
	// nonePrefix starts the value when confinement was not applied.
	nonePrefix = "none: "
)

// DefaultMaxProcs bounds the processes of one run (pids.max, and
// RLIMIT_NPROC per user): a fork bomb stops there.
const DefaultMaxProcs = 1024

// Confine is how a Runner confines what it runs.
type Confine struct {
	// Mode is SandboxPrefer (the zero value), SandboxRequire or SandboxOff.
	Mode string
	// Hidden are never readable by a confined run (DefaultHidden and
	// sluice's own files).
	Hidden []string
	// Spool is hidden too, except the run's own out/<id>.log.
	Spool string
	// Writable are written under every profile (DefaultWritable).
	Writable []string
	// Closed are the directories no confined run reads but where
	// something opens them (DefaultClosed: the homes).
	Closed []string
	// Readable are the paths inside Closed every confined run reads
	// (DefaultReadable).
	Readable []string
	// SecretFiles are globs (path.Match, on a name) of a project's
	// files that hold secrets, added to DefaultSecretFiles.
	SecretFiles []string
	// Named are the places the person made writable (config.toml's
	// sandbox_writable, extra_sandbox_writable): writable for every
	// confined run, with the project's own caches too.
	Named []string
	// Box is the helper that starts runs that write in namespaces of
	// their own (sandbox.BoxPath); "" confines them with Landlock and
	// seccomp alone.
	Box string
	// Fetch are the shared caches that hold what was downloaded (the Go
	// module cache, cargo's registry): written by networked runs only,
	// and only when the run has caches of its own (Options.Caches) for
	// the rest (DefaultFetchCaches).
	Fetch []string
	// MaxProcs bounds a run's processes; 0 means DefaultMaxProcs.
	MaxProcs int

	// NetAllow are host rules (netproxy.ParseRule: host, *.domain,
	// host:port, IP, CIDR) every confined networked run reaches without
	// asking (network_allow); NetDeny are refused whatever allows them
	// (network_deny). A rule that does not read fails the run.
	NetAllow, NetDeny []string
	// NetUpstream is the HTTP proxy the runs' proxies go through
	// (network_upstream_proxy); "" for none.
	NetUpstream string
	// NetAskTimeout bounds the wait for a person's answer about a host
	// (network_ask_timeout); 0 means netproxy.DefaultAskTimeout.
	NetAskTimeout time.Duration

	// resolve replaces DNS in the runs' proxies: tests only
	// (netproxy.Config.Resolve).
	resolve func(ctx context.Context, host string, port int) ([]netip.AddrPort, error)
}

// DefaultHidden are the secret paths under home no confined run reads.
func DefaultHidden(home string) []string {
	if home == "" {
		return []string{"/etc/shadow", "/etc/gshadow"}
	}
	rel := []string{".ssh", ".aws", ".gnupg", ".config/gh", ".netrc", ".docker/config.json",
		".git-credentials", ".config/gcloud", ".azure", ".kube", ".password-store", ".pgpass",
		".vault-token", ".npmrc", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml",
		".claude/.credentials.json", ".codex/auth.json", ".gemini/oauth_creds.json",
		".local/share/keyrings", "Library/Keychains"}
	out := []string{"/etc/shadow", "/etc/gshadow"}
	for _, r := range rel {
		out = append(out, filepath.Join(home, r))
	}
	return out
}

// envValue is the value env gives name (the last, as the kernel's getenv
// would), or "".
func envValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// DefaultClosed are the directories confined runs do not read, but for
// what opens them (the readable paths, the roots, the caches): every home
// directory, root's, and the users' runtime directories (where agents,
// keyrings and desktop sessions keep their sockets and tokens).
func DefaultClosed(home string) []string {
	out := []string{"/home", "/root", "/run/user", "/Users", "/var/root"}
	if home != "" && !slices.Contains(out, home) {
		out = append(out, home)
	}
	return out
}

// defaultReadable are the entries under a home directory that real tools
// read, each with why; secrets beside them stay hidden (DefaultHidden).
var defaultReadable = []string{
	".gitconfig",             // git's user config (name, aliases, core.*)
	".config/git/config",     // git's XDG config
	".config/git/ignore",     // git's XDG excludes file
	".config/git/attributes", // git's XDG attributes
	".gitignore_global",      // the usual core.excludesFile
	"go",                     // GOPATH: the module cache (read), installed tools
	".config/go/env",         // what 'go env -w' set
	".cargo/bin",             // rustup's proxies (cargo, rustc) and cargo-installed tools
	".cargo/config.toml",     // cargo's settings
	".cargo/config",          // the same, its old name
	".cargo/registry",        // downloaded crates (read; written by fetching runs)
	".cargo/git",             // git dependencies (likewise)
	".rustup",                // toolchains
	".npm",                   // npm's cache (read; its own in confined runs)
	".nvm",                   // node versions
	".volta",                 // node versions
	".bun/bin",               // bun
	".deno/bin",              // deno
	".cache/pip",             // pip's cache
	".config/pip",            // pip's settings
	".pyenv",                 // python versions and their shims
	".local/bin",             // user-installed programs (pip --user, pipx)
	".local/lib",             // python's user site-packages
	".local/share/pipx",      // pipx's environments the above link into
	".rbenv",                 // ruby versions
	".gem",                   // user-installed gems
	".m2/repository",         // maven's downloaded artifacts (not settings.xml)
	".gradle/caches",         // gradle's downloads (not gradle.properties)
	".gradle/wrapper",        // gradle's wrapper distributions
	".sdkman/candidates",     // JDKs and build tools
	".asdf",                  // asdf's tools and shims
	".local/share/mise",      // mise's tools
	".editorconfig",          // editors' and formatters' settings
}

// DefaultReadable are the paths inside the home directories every
// confined run reads: the toolchains and the configs real tools read
// (found by running go, cargo, npm, pip, pytest, make and git confined
// from a fresh home), under home (defaultReadable), where env's variables
// put them (GOPATH, CARGO_HOME's programs, config and downloads,
// RUSTUP_HOME, NVM_DIR, PYENV_ROOT, VIRTUAL_ENV, ...), and each absolute
// directory on PATH: the programs the person chose to run. The rest of
// home stays closed. (A path that is a home directory, or holds one,
// opens nothing: see sandbox.Spec.Closed.)
func DefaultReadable(env []string, home string) []string {
	get := func(name string) string { return envValue(env, name) }
	var out []string
	add := func(p string) {
		if p != "" && filepath.IsAbs(p) && !slices.Contains(out, filepath.Clean(p)) {
			out = append(out, filepath.Clean(p))
		}
	}
	if home != "" {
		for _, r := range defaultReadable {
			add(filepath.Join(home, r))
		}
	}
	for _, p := range filepath.SplitList(get("GOPATH")) {
		add(p)
	}
	if c := get("CARGO_HOME"); c != "" {
		for _, r := range []string{"bin", "config.toml", "config", "registry", "git"} {
			add(filepath.Join(c, r))
		}
	}
	for _, v := range []string{"GOROOT", "RUSTUP_HOME", "NVM_DIR", "PYENV_ROOT", "VOLTA_HOME", "VIRTUAL_ENV",
		"CONDA_PREFIX", "JAVA_HOME", "SDKMAN_DIR", "ASDF_DATA_DIR", "BUN_INSTALL", "DENO_INSTALL"} {
		add(get(v))
	}
	for _, p := range filepath.SplitList(get("PATH")) {
		add(p)
	}
	return out
}

// DefaultWritable are the caches every confined run may write, because
// the tools that keep them write there even to read: the Go build and
// module caches (go vet, go list, go build), npm's cache and logs, and
// cargo's registry and lock files. They come from env (GOCACHE, GOMODCACHE, GOPATH,
// XDG_CACHE_HOME, npm_config_cache, CARGO_HOME) or the tools' defaults
// under home; what does not exist is left out.
func DefaultWritable(env []string, home string) []string {
	get := func(name string) string { return envValue(env, name) }
	var out []string
	add := func(p string) {
		if p != "" && filepath.IsAbs(p) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	cache := get("XDG_CACHE_HOME")
	if cache == "" && home != "" {
		cache = filepath.Join(home, ".cache")
	}
	if v := get("GOCACHE"); v != "" && v != "off" {
		add(v)
	} else if cache != "" {
		add(filepath.Join(cache, "go-build"))
	}
	switch gopath := get("GOPATH"); {
	case get("GOMODCACHE") != "":
		add(get("GOMODCACHE"))
	case gopath != "":
		add(filepath.Join(strings.Split(gopath, string(os.PathListSeparator))[0], "pkg", "mod"))
	case home != "":
		add(filepath.Join(home, "go", "pkg", "mod"))
	}
	if v := get("npm_config_cache"); v != "" {
		add(v)
	} else if home != "" {
		add(filepath.Join(home, ".npm"))
	}
	cargo := get("CARGO_HOME")
	if cargo == "" && home != "" {
		cargo = filepath.Join(home, ".cargo")
	}
	if cargo != "" {
		add(filepath.Join(cargo, "registry"))
		add(filepath.Join(cargo, "git"))
		// cargo's locks sit at the top of CARGO_HOME; only existing
		// files are granted, so it must have made them once.
		add(filepath.Join(cargo, ".package-cache"))
		add(filepath.Join(cargo, ".global-cache"))
	}
	return out
}

// DefaultFetchCaches are the shared caches a download writes: the Go
// module cache and cargo's registry and git checkouts. Tools verify what
// they download there against checksums, but not what is already
// unpacked, so a run that can write them can plant code the person's next
// build runs: only networked (fetching) runs may.
func DefaultFetchCaches(env []string, home string) []string {
	get := func(name string) string { return envValue(env, name) }
	var out []string
	switch gopath := get("GOPATH"); {
	case get("GOMODCACHE") != "":
		out = append(out, get("GOMODCACHE"))
	case gopath != "":
		out = append(out, filepath.Join(strings.Split(gopath, string(os.PathListSeparator))[0], "pkg", "mod"))
	case home != "":
		out = append(out, filepath.Join(home, "go", "pkg", "mod"))
	}
	cargo := get("CARGO_HOME")
	if cargo == "" && home != "" {
		cargo = filepath.Join(home, ".cargo")
	}
	if cargo != "" {
		out = append(out, filepath.Join(cargo, "registry"), filepath.Join(cargo, "git"))
	}
	return slices.DeleteFunc(out, func(p string) bool { return !filepath.IsAbs(p) })
}

// ProjectCache is the directory, under parent, of the caches the confined
// runs in the project whose roots are given keep (Options.Caches).
func ProjectCache(parent string, roots []string) string {
	sum := sha256.Sum256([]byte(strings.Join(roots, "\x00")))
	return filepath.Join(parent, hex.EncodeToString(sum[:8]))
}

// MakeCaches creates each of dirs that does not exist yet, mode 0700, so
// that it can be granted as itself: a cache missing from the writable set
// would otherwise stay missing (no confined run may create it), and
// granting its parent instead would grant far more.
func MakeCaches(dirs []string) error {
	for _, d := range dirs {
		if _, err := os.Lstat(d); err == nil {
			continue
		}
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	return nil
}

// DefaultSecretFiles are the names of a project's files that usually
// hold secrets (path.Match globs on a file's name): what a read_only run
// nobody approved does not read.
var DefaultSecretFiles = []string{".env", ".env.*", "*.pem", "*.key", "*.p12", "*.pfx", "id_rsa", "id_dsa",
	"id_ecdsa", "id_ed25519", ".npmrc", ".pypirc", ".netrc", "credentials*.json", "*.keystore", ".htpasswd"}

// secretDirs are the directories at a root's top level where
// ProjectSecrets also looks (secrets sit at the top, or in one of these):
// never a whole tree, nor every directory, on every run.
var secretDirs = map[string]bool{"config": true, "configs": true, "conf": true, "secrets": true, ".secrets": true,
	"certs": true, "certificates": true, "keys": true, "ssl": true, "tls": true, "deploy": true, "docker": true,
	".docker": true, "env": true, "envs": true, "environments": true, "credentials": true, ".aws": true, ".ssh": true}

// ProjectSecrets lists the files at the top of each root, and in the
// directories there named like secretDirs (config/, secrets/, certs/,
// ...), whose names match DefaultSecretFiles or extra: the project's
// secrets as they exist when a run starts.
//
// What it found under a root is kept while none of the directories it
// read changed (one stat each): a run of an agent's usually finds the
// project as the last one left it.
func ProjectSecrets(roots []string, extra []string) []string {
	var out []string
	for _, r := range roots {
		out = append(out, secretsCache.get(r, extra)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// secretsCache holds ProjectSecrets's findings per root.
var secretsCache = &secretCache{m: map[string]*secretScan{}}

type secretCache struct {
	mu sync.Mutex
	m  map[string]*secretScan // by root and extra patterns
}

// secretScan is one root's scan: the directories read, as they were, and
// the secret files found.
type secretScan struct {
	dirs  []dirStamp
	found []string
}

type dirStamp struct {
	path  string
	ino   uint64
	ctime unix.Timespec
}

func (c *secretCache) get(root string, extra []string) []string {
	key := root + "\x00" + strings.Join(extra, "\x00")
	c.mu.Lock()
	s := c.m[key]
	c.mu.Unlock()
	if s != nil && s.fresh() {
		return s.found
	}
	s = scanSecrets(root, slices.Concat(DefaultSecretFiles, extra))
	c.mu.Lock()
	if len(c.m) >= 64 {
		clear(c.m)
	}
	c.m[key] = s
	c.mu.Unlock()
	return s.found
}

func (s *secretScan) fresh() bool {
	for _, d := range s.dirs {
		var st unix.Stat_t
		if unix.Stat(d.path, &st) != nil || st.Ino != d.ino || st.Ctim != d.ctime {
			return false
		}
	}
	return true
}

// scanSecrets reads root down to projectSecretDepth levels. A directory
// that changes while it is read is stamped as never fresh.
func scanSecrets(root string, pats []string) *secretScan {
	s := &secretScan{}
	var start unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_REALTIME, &start)
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		var st unix.Stat_t
		if unix.Stat(dir, &st) != nil {
			return
		}
		stamp := dirStamp{path: dir, ino: st.Ino, ctime: st.Ctim}
		if st.Ctim.Nano() >= start.Nano() {
			stamp.ctime = unix.Timespec{}
		}
		s.dirs = append(s.dirs, stamp)
		entries, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range entries {
			name := e.Name()
			p := filepath.Join(dir, name)
			if e.IsDir() {
				if depth == 0 && secretDirs[strings.ToLower(name)] {
					walk(p, depth+1)
				}
				continue
			}
			for _, pat := range pats {
				if ok, _ := path.Match(pat, name); ok {
					s.found = append(s.found, p)
					break
				}
			}
		}
	}
	walk(root, 0)
	return s
}

// ProfileFor is the profile a verdict's profile name asks for; an empty or
// unknown name is read_only, the narrowest.
func ProfileFor(name string) sandbox.Profile {
	if p, err := sandbox.ParseProfile(name); err == nil {
		return p
	}
	return sandbox.ReadOnly
}

// confinement is what one run gets: a prepared sandbox (nil when it runs
// unconfined), its private temporary directory, and the words for the
// result.
type confinement struct {
	box     *sandbox.Confinement
	tmp     string
	tmps    *tmpDirs
	label   string // "read_only", "unconfined", "none: why"
	hidden  []string
	roots   []string
	secrets []string // the project's secret files, hidden from this run
	guarded *Guard   // what the run may not change, as it was
}

// confine prepares the confinement of one run in dir, whose terminal is
// tty. It never fails: what cannot be confined runs unconfined, and the
// label says why.
func (r *Runner) confine(dir, tty string, opt Options, c *Confine) *confinement {
	switch {
	case c == nil || c.Mode == SandboxOff:
		return &confinement{label: nonePrefix + "sandbox = off"}
	case opt.Unconfined:
		return &confinement{label: Unconfined}
	}
	if _, err := sandbox.Available(); err != nil {
		return &confinement{label: nonePrefix + err.Error()}
	}
	tmp, err := r.tmps.get()
	if err != nil {
		return &confinement{label: nonePrefix + "no private temporary directory: " + err.Error()}
	}
	hidden := slices.Clone(c.Hidden)
	profile := ProfileFor(opt.Profile)
	roots := opt.Jail
	if len(roots) == 0 {
		roots = []string{dir}
	}
	var secrets, masked, protect []string
	var guarded *Guard
	switch {
	case profile == sandbox.ReadOnly && !opt.Approved:
		secrets = ProjectSecrets(roots, c.SecretFiles)
		hidden = append(hidden, secrets...)
	case profile.Writes():
		// What later runs with the person's rights is taken now, to be
		// put back after the run (and, boxed, is read-only during it);
		// a run nobody approved reads the project's secrets as empty
		// where it is boxed.
		guarded = TakeGuard(roots)
		protect = guarded.Existing()
		if !opt.Approved {
			masked = ProjectSecrets(roots, c.SecretFiles)
		}
	}
	if c.Spool != "" {
		// The whole spool, the run's own log too: what it wrote reaches
		// it through its terminal.
		hidden = append(hidden, c.Spool)
	}
	writable := c.Writable
	if opt.Caches != "" {
		writable = []string{opt.Caches}
		if profile.Network() {
			writable = append(writable, c.Fetch...)
		}
		if err := MakeCaches(writable); err != nil {
			r.tmps.put(tmp)
			return &confinement{label: nonePrefix + "no cache directory: " + err.Error()}
		}
		writable = append(writable, c.Named...)
	}
	if opt.Approved && profile.Writes() {
		writable = append(slices.Clip(writable), grantPaths(opt.Grants)...)
	}
	// A networked run reaches the network only through a proxy of its
	// own (network.go).
	proxy := profile.Network() && sandbox.ProxySupported()
	box, err := sandbox.Prepare(sandbox.Spec{Profile: profile, Roots: roots, Writable: writable,
		Hidden: hidden, Closed: c.Closed, Readable: c.Readable, TmpDir: tmp, TTY: tty,
		Protect: protect, Masked: masked, Box: c.Box, Proxy: proxy})
	if err != nil {
		r.tmps.put(tmp)
		return &confinement{label: nonePrefix + err.Error()}
	}
	return &confinement{box: box, tmp: tmp, tmps: &r.tmps, label: string(profile), hidden: hidden, roots: roots, secrets: secrets, guarded: guarded}
}

// grantPaths are the places an approved run's grants open for writing:
// each grant that exists as itself, else the nearest existing directory
// above it (where the run creates it); never /, nor a relative path, nor
// a path that leads through a symlink now: the verdict named grants with
// their symlinks resolved, so one there now was put there since, and
// would open what the person did not see.
func grantPaths(grants []string) []string {
	var out []string
	for _, g := range grants {
		if !filepath.IsAbs(g) {
			continue
		}
		g = filepath.Clean(g)
		for g != "/" {
			if _, err := os.Lstat(g); err == nil {
				break
			}
			g = filepath.Dir(g)
		}
		if g == "/" || slices.Contains(out, g) {
			continue
		}
		if real, err := filepath.EvalSymlinks(g); err != nil || real != g {
			continue
		}
		out = append(out, g)
	}
	return out
}

// close releases the sandbox and hands the private temporary directory
// back for removal.
func (c *confinement) close() {
	if c.box != nil {
		_ = c.box.Close()
	}
	if c.tmp != "" {
		c.tmps.put(c.tmp)
	}
}

// tmpDirs hands out the runs' private temporary directories: made ahead
// of need, in a directory of the runner's own (so that making one does not
// touch /tmp itself), and removed after the run, off its path: a mkdir or
// an rmdir on a journalled disk costs 0.3 ms, a fifth of a confined run.
type tmpDirs struct {
	once   sync.Once
	parent string
	err    error
	spare  chan string
	wg     sync.WaitGroup
}

// get returns an empty directory, mode 0700, for one run.
func (t *tmpDirs) get() (string, error) {
	t.once.Do(func() {
		sweepRunDirs(os.TempDir())
		t.parent, t.err = os.MkdirTemp("", runDirsPrefix+strconv.Itoa(os.Getpid())+"-")
		t.spare = make(chan string, 2)
	})
	if t.err != nil {
		return "", t.err
	}
	select {
	case d := <-t.spare:
		return d, nil
	default:
	}
	return os.MkdirTemp(t.parent, "run-")
}

// put removes d, with whatever the run left in it, and makes a spare for
// the next run, in the background.
func (t *tmpDirs) put(d string) {
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		_ = os.RemoveAll(d)
		n, err := os.MkdirTemp(t.parent, "run-")
		if err != nil {
			return
		}
		select {
		case t.spare <- n:
		default:
			_ = os.Remove(n)
		}
	}()
}

// runDirsPrefix begins the name of a runner's directory of temporary
// directories, which goes on with the pid of the process that made it.
const runDirsPrefix = "sluice-runs-"

// oldRunDirAge is how long a runner's directory named as older sluices
// named them (without the pid) is left alone: a day past the longest a
// run may last. Each run's directory in it is made and removed as the run
// starts and ends, which touches it.
const oldRunDirAge = queue.MaxTimeout + 24*time.Hour

// sweepRunDirs removes from dir the runners' directories of processes that
// are gone: an engine killed with SIGKILL leaves its own behind (and the
// spare made for its next run), and /tmp would gather them. Only this
// user's own directories are removed, never through a symlink.
func sweepRunDirs(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), runDirsPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		var st unix.Stat_t
		if unix.Lstat(path, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() {
			continue
		}
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		switch {
		case !ok && err == nil && time.Since(time.Unix(st.Mtim.Unix())) > oldRunDirAge:
			// An older sluice's (named without its pid): untouched for
			// longer than any run may last, nothing uses it.
		case !ok || err != nil || pid <= 0:
			continue // a recent older sluice's, or not a runner's: left alone
		default:
			if err := unix.Kill(pid, 0); err == nil || errors.Is(err, unix.EPERM) {
				continue // its engine is alive
			}
		}
		_ = os.RemoveAll(path)
	}
}

// close waits for the removals under way and removes the runner's
// directory.
func (t *tmpDirs) close() {
	t.wg.Wait()
	if t.parent != "" {
		_ = os.RemoveAll(t.parent)
	}
}

// subjectRe finds the path a refusal names: the word just before
// ": Permission denied" ("cannot create out.txt: Permission denied",
// "open /x: permission denied"), quoted or not, or the quoted word just
// after ("Permission denied: '/x'", Python).
var subjectRe = lazyRegexp("(?i)(?:[\"'‘`]([^\"'’`\n]+)[\"'’`]|([^\\s\"'‘’`:]+)):\\s*(?:permission denied|operation not permitted|read-only file system)|(?:permission denied|operation not permitted|read-only file system):\\s*[\"'‘`]([^\"'’`\n]+)[\"'’`]")

// netRe finds what a program says when it could not open a socket or
// resolve a name.
var netRe = lazyRegexp(`(?i)socket: permission denied|could not resolve|temporary failure in name resolution|name or service not known|network is unreachable|getaddrinfo|failed to connect|couldn.t connect`)

// explain is the line a failed confined run ends with: what the sandbox
// refused and how a person can allow it. It names a path only where the
// output says access to it was refused and the sandbox is why: the path is
// hidden, or the user could write it but the profile does not let the run.
// It is empty when the run succeeded or nothing points at the sandbox.
func (c *confinement) explain(dir string, code int, tail []byte, spec *sandbox.Spec) string {
	if c.box == nil {
		return ""
	}
	if note := explainSecret(c.secrets, dir, code, tail); note != "" {
		return note
	}
	return explain(c.label, c.hidden, dir, code, tail, spec)
}

// explainSecret is the line a failed read_only run ends with when what it
// was refused is one of the project's secret files.
func explainSecret(secrets []string, dir string, code int, tail []byte) string {
	if code == 0 || len(secrets) == 0 {
		return ""
	}
	for _, m := range subjectRe().FindAllStringSubmatch(string(tail), -1) {
		p := m[1] + m[2] + m[3]
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if slices.Contains(secrets, filepath.Clean(p)) {
			return fmt.Sprintf("sluice: the sandbox hides %s, a file of the project that usually holds secrets, from runs nobody approved; a person can approve the command to let it read the file\n", filepath.Clean(p))
		}
	}
	return ""
}

// explain is confinement.explain for a run confined to the profile named
// label, with the hidden paths given.
func explain(label string, hidden []string, dir string, code int, tail []byte, spec *sandbox.Spec) string {
	if code == 0 {
		return ""
	}
	text := string(tail)
	if len(text) > 16<<10 {
		text = text[len(text)-16<<10:]
	}
	profile := ProfileFor(label)
	for _, m := range subjectRe().FindAllStringSubmatch(text, -1) {
		p := m[1] + m[2] + m[3]
		switch p {
		case "socket", "connect", "bind", "sendto", "dial":
			continue // Go's "socket: permission denied": a system call, not a file
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		p = filepath.Clean(p)
		if hiddenBy(p, hidden) {
			return fmt.Sprintf("sluice: the sandbox hides %s (a secret path no confined run may read); a person can run the command unconfined (console key U)\n", p)
		}
		if closedBy(p, spec) && unix.Access(p, unix.R_OK) == nil {
			return fmt.Sprintf("sluice: the sandbox keeps %s unreadable (it is outside the readable set: what a confined run reads in a home directory); add it to extra_sandbox_readable in config.toml if every run may read it, or a person can run the command unconfined (console key U)\n", p)
		}
		// 126 is the shell's "found but cannot execute": a file without
		// its execute bit, which the sandbox never causes (it refuses
		// execution only inside hidden paths, named above).
		if code != 126 && !writableUnder(p, spec, hidden) && userCanWrite(p) {
			return fmt.Sprintf("sluice: the sandbox (%s: %s) refused to write %s; a person can run the command unconfined (console key U), or add the directory to sandbox_writable in config.toml\n", profile, profile.Describe(), p)
		}
	}
	if !profile.Network() && netRe().MatchString(text) {
		return fmt.Sprintf("sluice: the sandbox (%s: %s) refused a network connection; a person can run the command unconfined (console key U)\n", profile, profile.Describe())
	}
	return ""
}

// closedBy reports whether p lies in one of s's closed directories and
// in nothing that opens them.
func closedBy(p string, s *sandbox.Spec) bool {
	if s == nil || !slices.ContainsFunc(s.Closed, func(c string) bool { return hiddenBy(p, []string{c}) }) {
		return false
	}
	open := slices.Concat(s.Readable, s.Writable, []string{s.TmpDir})
	for _, r := range s.Roots {
		if !slices.ContainsFunc(s.Closed, func(c string) bool { return hiddenBy(c, []string{r}) }) {
			open = append(open, r)
		}
	}
	return !hiddenBy(p, open)
}

// userCanWrite reports whether this process (the user, unconfined) may
// write p, or create it when it does not exist.
func userCanWrite(p string) bool {
	if err := unix.Access(p, unix.W_OK); err == nil {
		return true
	} else if !errors.Is(err, unix.ENOENT) {
		return false
	}
	return unix.Access(filepath.Dir(p), unix.W_OK|unix.X_OK) == nil
}

// hiddenBy reports whether p is one of hidden or lies inside one.
func hiddenBy(p string, hidden []string) bool {
	for _, h := range hidden {
		if h != "" && (p == h || strings.HasPrefix(p, strings.TrimSuffix(h, "/")+"/")) {
			return true
		}
	}
	return false
}

// writableUnder reports whether the sandbox lets a run write p: an
// existing file inside a writable directory, or a new entry in a writable
// directory that holds no hidden path (Landlock cannot grant creating
// entries in a directory without granting it inside every subdirectory,
// so such a directory's entries can be changed, not created).
func writableUnder(p string, s *sandbox.Spec, hidden []string) bool {
	var w []string
	w = append(w, s.Writable...)
	w = append(w, s.TmpDir, s.TTY, "/dev/null", "/dev/tty")
	if s.Profile.Writes() {
		w = append(w, s.Roots...)
		w = append(w, "/dev/shm")
	}
	in := func(x string) bool {
		for _, d := range w {
			if d != "" && (x == d || strings.HasPrefix(x, strings.TrimSuffix(d, "/")+"/")) {
				return true
			}
		}
		return false
	}
	if hiddenBy(p, hidden) {
		return false
	}
	if _, err := os.Lstat(p); err == nil {
		return in(p)
	}
	dir := filepath.Dir(p)
	if !in(dir) {
		return false
	}
	for _, h := range hidden {
		if h != "" && strings.HasPrefix(h, strings.TrimSuffix(dir, "/")+"/") {
			return false
		}
	}
	return true
}
