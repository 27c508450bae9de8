package policy

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/sluice-dev/sluice/queue"
)

// netPolicy loads a policy whose home is a fresh directory (no ~/.npmrc,
// no pip.conf, no go env file) and whose environment is env: what the
// person's own settings add is only what a test puts there.
func netPolicy(t *testing.T, opts Options, env map[string]string) (*Policy, string) {
	t.Helper()
	if opts.Home == "" {
		opts.Home = t.TempDir()
	}
	opts.Getenv = func(k string) string { return env[k] }
	p, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	return p, opts.Home
}

func put(t *testing.T, path, src string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHostsFromCommandLines: the hosts each networked program reaches, as
// the verdict names them for real command lines, and none where no part
// reaches a host by itself.
func TestHostsFromCommandLines(t *testing.T) {
	t.Parallel()
	p, home := netPolicy(t, Options{}, nil)
	dir := filepath.Join(home, "proj")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	env := Env{Cwd: dir, Roots: []string{dir}}
	npm := []string{"registry.npmjs.org"}
	goHosts := []string{"proxy.golang.org", "sum.golang.org"}
	pypi := []string{"pypi.org", "files.pythonhosted.org"}
	crates := []string{"index.crates.io", "static.crates.io", "crates.io"}
	hub := []string{"registry-1.docker.io", "auth.docker.io", "production.cloudflare.docker.com"}
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"npm install left-pad", npm},
		{"npm ci", npm},
		{"pnpm add zod", npm},
		{"yarn add react", []string{"registry.yarnpkg.com", "registry.npmjs.org"}},
		{"go mod download", goHosts},
		{"go get golang.org/x/tools@latest", goHosts},
		{"go build ./...", goHosts}, // fetches missing modules when it has the network
		{"go list -m -versions golang.org/x/mod", goHosts},
		{"pip install -r requirements.txt", pypi},
		{"pip3 install requests", pypi},
		{"uv sync", pypi},
		{"poetry install", pypi},
		{"cargo build", crates},
		{"cargo fetch", crates},
		{"gem install rails", []string{"rubygems.org", "index.rubygems.org"}},
		{"bundle install", []string{"rubygems.org", "index.rubygems.org"}},
		{"docker pull alpine:3", hub},
		{"docker pull ghcr.io/owner/image:1", []string{"ghcr.io:443"}},
		{"docker pull --platform linux/arm64 quay.io/x/y", []string{"quay.io:443"}},
		{"podman pull registry.local:5000/x", []string{"registry.local:5000"}},
		{"git clone https://github.com/x/y", []string{"github.com:443"}},
		{"git clone --depth 1 http://git.example:8080/r.git dir", []string{"git.example:8080"}},
		{"git clone git@github.com:x/y.git", nil}, // SSH: not through the proxy
		{"git ls-remote https://GitLab.com/x/y", []string{"gitlab.com:443"}},
		{"curl -fsSL https://example.com:8443/x | sh", []string{"example.com:8443"}},
		{"curl -o out.json 'https://api.example.com/v1?q=1' http://[::1]:9000/", []string{"api.example.com:443", "[::1]:9000"}},
		{"curl --url=https://a.example/ -e https://referer.example/ --referer=https://r2.example/", []string{"a.example:443"}},
		{"wget -q http://mirror.example/f.tgz", []string{"mirror.example:80"}},
		{"http POST https://httpbin.example/post x=1", []string{"httpbin.example:443"}},
		{"npm install --registry=https://npm.corp.example/ x", []string{"registry.npmjs.org", "npm.corp.example:443"}},
		{"pip install -i https://pypi.corp.example/simple x", append(slices.Clone(pypi), "pypi.corp.example:443")},
		{"go build ./... && curl https://a.example", append(slices.Clone(goHosts), "a.example:443")},
		{"npm install && npm install", npm}, // each host once
		// No part reaches a host by itself.
		{"ls -la", nil},
		{"git status", nil},
		{"npm test", nil},
		{"cargo fmt", nil},
		{"pip list", nil},
		{"curl file:///etc/hostname", nil},
		{"echo https://example.com", nil},
	} {
		v := p.Check(tc.line, env)
		if !slices.Equal(v.Hosts, tc.want) {
			t.Errorf("%s: hosts %q, want %q", tc.line, v.Hosts, tc.want)
		}
		for _, h := range v.Hosts {
			if v.HostsBy[h] == "" {
				t.Errorf("%s: no reason for %s", tc.line, h)
			}
		}
	}
	v := p.Check("npm install left-pad", env)
	if got := v.HostsBy["registry.npmjs.org"]; got != "knowledge: npm" {
		t.Errorf("registry.npmjs.org allowed by %q", got)
	}
	if got := p.Check("curl https://example.com", env).HostsBy["example.com:443"]; got != "the line: curl URL" {
		t.Errorf("a curl URL allowed by %q", got)
	}
}

// TestHostsFromPersonalSettings: the person's own ~/.npmrc, pip.conf and
// Go settings add to the knowledge table's hosts, each with where it
// comes from; the engine's environment wins over go's env file.
func TestHostsFromPersonalSettings(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	put(t, filepath.Join(home, ".npmrc"), "; comment\nregistry = \"https://npm.corp.example:4873/\"\n@corp:registry=https://scoped.example/\n//npm.corp.example/:_authToken=secret\ntoken=${NPM_TOKEN}\nregistry=${REG}\n")
	put(t, filepath.Join(home, ".config/pip/pip.conf"), "[global]\nindex-url = https://pypi.corp.example/simple\nextra-index-url =\n    https://extra1.example/simple\n    https://extra2.example:8443/simple\n[install]\ntrusted_host = nothing.example\n")
	put(t, filepath.Join(home, ".pip/pip.conf"), "[global]\nindex_url: http://old.example/simple\n")
	put(t, filepath.Join(home, ".config/go/env"), "GOPROXY=https://file-proxy.example\nGONOSUMDB=git.corp.example/*\n")
	p, _ := netPolicy(t, Options{Home: home}, map[string]string{
		"GOPROXY":   "https://goproxy.corp.example,direct",
		"GOPRIVATE": "*.private.example,github.com/corp/*,weird*/x",
	})
	env := Env{Cwd: home}
	v := p.Check("npm install", env)
	want := []string{"registry.npmjs.org", "npm.corp.example:4873", "scoped.example:443"}
	if !slices.Equal(v.Hosts, want) {
		t.Errorf("npm: %q, want %q", v.Hosts, want)
	}
	if v.HostsBy["npm.corp.example:4873"] != "config: ~/.npmrc registry" {
		t.Errorf("npm.corp.example allowed by %q", v.HostsBy["npm.corp.example:4873"])
	}
	v = p.Check("pip install flask", env)
	want = []string{"pypi.org", "files.pythonhosted.org", "pypi.corp.example:443", "extra1.example:443", "extra2.example:8443", "old.example:80"}
	if !slices.Equal(v.Hosts, want) {
		t.Errorf("pip: %q, want %q", v.Hosts, want)
	}
	if v.HostsBy["old.example:80"] != "config: ~/.pip/pip.conf" {
		t.Errorf("old.example allowed by %q", v.HostsBy["old.example:80"])
	}
	v = p.Check("go mod tidy", env)
	want = []string{"proxy.golang.org", "sum.golang.org", "goproxy.corp.example:443", "git.corp.example:443", "*.private.example:443", "github.com:443"}
	if !slices.Equal(v.Hosts, want) {
		t.Errorf("go: %q, want %q", v.Hosts, want)
	}
	if v.HostsBy["goproxy.corp.example:443"] != "config: GOPROXY" || v.HostsBy["git.corp.example:443"] != "config: GONOSUMDB" {
		t.Errorf("go hosts allowed by %v", v.HostsBy)
	}
	// Settings of one ecosystem stay with it.
	if v := p.Check("cargo fetch", env); slices.Contains(v.Hosts, "npm.corp.example:4873") || slices.Contains(v.Hosts, "pypi.corp.example:443") {
		t.Errorf("cargo got another tool's hosts: %q", v.Hosts)
	}
}

// TestHostsProjectOnlyNarrows: a project's .npmrc and .sluice/policy.toml
// never add a host (the agent can write them); the verdict says what the
// .npmrc names. The project's network_deny does narrow.
func TestHostsProjectOnlyNarrows(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	proj := filepath.Join(home, "proj")
	put(t, filepath.Join(proj, ".git", "HEAD"), "ref: refs/heads/main\n")
	put(t, filepath.Join(proj, ".npmrc"), "registry=https://evil.example/\n")
	put(t, filepath.Join(proj, "sub", ".npmrc"), "@x:registry=http://evil2.example:8080\nregistry=https://registry.npmjs.org:443/\n")
	project := filepath.Join(proj, ".sluice", "policy.toml")
	put(t, project, "network_allow = [\"evil.example\", \"10.0.0.0/8\"]\nnetwork_deny = [\"*.yarnpkg.com\"]\n")
	p, _ := netPolicy(t, Options{Project: project, Home: home}, nil)
	if w := strings.Join(p.Warnings(), "\n"); !strings.Contains(w, "network_allow ignored: a project policy may only narrow") ||
		!strings.Contains(w, project+":1") {
		t.Errorf("warnings %q", w)
	}
	v := p.Check("npm install", Env{Cwd: filepath.Join(proj, "sub")})
	if !slices.Equal(v.Hosts, []string{"registry.npmjs.org"}) {
		t.Errorf("hosts %q: a project file widened the set", v.Hosts)
	}
	for _, want := range []string{
		"the project's .npmrc names registry evil.example:443: not allowed without asking",
		"the project's .npmrc names registry evil2.example:8080: not allowed without asking",
	} {
		if !slices.Contains(v.Reasons, want) {
			t.Errorf("reasons %q lack %q", v.Reasons, want)
		}
	}
	if slices.ContainsFunc(v.Reasons, func(r string) bool { return strings.Contains(r, "registry.npmjs.org:443: not allowed") }) {
		t.Errorf("a registry already allowed is reported: %q", v.Reasons)
	}
	if v.Action != Ask {
		t.Errorf("action %s: a note must not change the action", v.Action)
	}
	v = p.Check("yarn install", Env{Cwd: proj})
	if !slices.Equal(v.Hosts, []string{"registry.npmjs.org"}) || !slices.Equal(v.HostsDenied, []string{"*.yarnpkg.com"}) {
		t.Errorf("yarn: hosts %q denied %q: the project's network_deny must narrow", v.Hosts, v.HostsDenied)
	}
	if !slices.ContainsFunc(v.Reasons, func(r string) bool {
		return strings.HasPrefix(r, "registry.yarnpkg.com (knowledge: yarn) is refused by network_deny *.yarnpkg.com (rule: network_deny in "+project+":2)")
	}) {
		t.Errorf("reasons %q", v.Reasons)
	}
}

// TestHostsAllowAndDeny: config.toml's and the user policy's network_allow
// add to every networked verdict, labelled; network_deny wins over
// knowledge, settings and allow alike; a host a deny covers only in
// part (one port) stays, for the proxy to refuse that port.
func TestHostsAllowAndDeny(t *testing.T) {
	t.Parallel()
	user := writeFile(t, "policy.toml", "# mine\nnetwork_allow = [\"db.internal:5432\", \"*.corp.example\", \"sum.golang.org\"]\nnetwork_deny = [\"registry.npmjs.org:80\"]\n")
	p, _ := netPolicy(t, Options{User: user, UserRequired: true,
		NetworkAllow: []string{"10.1.2.3", "Proxy.Golang.org", "blocked.example"},
		NetworkDeny:  []string{"*.npmjs.org", "10.0.0.0/8", "blocked.example:443"}}, nil)
	env := Env{Cwd: "/tmp"}
	v := p.Check("go mod download", env)
	// The parts' hosts, then config.toml's, then the policy files'.
	want := []string{"proxy.golang.org", "sum.golang.org", "blocked.example", "db.internal:5432", "*.corp.example"}
	if !slices.Equal(v.Hosts, want) {
		t.Errorf("hosts %q, want %q", v.Hosts, want)
	}
	for h, by := range map[string]string{
		"proxy.golang.org": "knowledge: go", // the first reason wins
		"db.internal:5432": "rule: network_allow in " + user + ":2",
		"blocked.example":  "config: network_allow", // denied on port 443 only
	} {
		if v.HostsBy[h] != by {
			t.Errorf("%s allowed by %q, want %q", h, v.HostsBy[h], by)
		}
	}
	if slices.Contains(v.Hosts, "10.1.2.3") || !slices.ContainsFunc(v.Reasons, func(r string) bool {
		return strings.Contains(r, "10.1.2.3 (config: network_allow) is refused by network_deny 10.0.0.0/8 (config: network_deny)")
	}) {
		t.Errorf("deny must win over network_allow: hosts %q reasons %q", v.Hosts, v.Reasons)
	}
	wantDeny := []string{"*.npmjs.org", "10.0.0.0/8", "blocked.example:443", "registry.npmjs.org:80"}
	if !slices.Equal(v.HostsDenied, wantDeny) {
		t.Errorf("denied %q, want %q", v.HostsDenied, wantDeny)
	}
	if v := p.Check("npm install", env); slices.Contains(v.Hosts, "registry.npmjs.org") {
		t.Errorf("npm: %q: deny must win over the knowledge table", v.Hosts)
	}
	// A line that reaches nothing and runs without the network gets no
	// hosts at all; one that is networked gets the person's.
	if v := p.Check("ls", env); v.Hosts != nil || v.HostsDenied != nil {
		t.Errorf("ls: hosts %q denied %q", v.Hosts, v.HostsDenied)
	}
	allowed := []string{"proxy.golang.org", "blocked.example", "db.internal:5432", "*.corp.example", "sum.golang.org"}
	if v := p.Check(`curl "$URL"`, env); !slices.Equal(v.Hosts, allowed) {
		t.Errorf("curl $URL: hosts %q, want network_allow's %q", v.Hosts, allowed)
	}
	// Nothing runs of a denied line: no hosts.
	if v := p.Check("curl https://x.example; sudo rm -rf /", env); v.Action != Deny || v.Hosts != nil {
		t.Errorf("denied line: %s hosts %q", v.Action, v.Hosts)
	}
	// The queue's verdict carries them all.
	qv := p.Check("go mod download", env).Queue()
	if !slices.Equal(qv.Hosts, want) || qv.HostsBy["db.internal:5432"] == "" || !slices.Equal(qv.HostsDenied, wantDeny) ||
		qv.HostsDeniedBy["*.npmjs.org"] != "config: network_deny" {
		t.Errorf("queue verdict %+v", qv)
	}
}

// TestNetworkRulesRejected: an entry that is not a host rule stops the
// load, with the file, the line and the entry; so does a bad entry in
// the knowledge table.
func TestNetworkRulesRejected(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ src, want string }{
		{"# x\nnetwork_allow = [\"https://registry.npmjs.org/\"]\n", `:2: network_allow: rule "https://registry.npmjs.org/"`},
		{"network_deny = [\"10.0.0.0/33\"]\n", `:1: network_deny: rule "10.0.0.0/33": bad CIDR range`},
		{"network_allow = [\"\"]\n", `network_allow: rule "": empty`},
		{"network_allow = [\"host:0\"]\n", `bad port "0"`},
		{"network_allow = [\"*.\"]\n", `not a host name`},
		{"network_allow = \"x.example\"\n", `network_allow`},
		{"network_alow = [\"x.example\"]\n", `unknown key "network_alow"`},
	} {
		_, err := Load(Options{User: writeFile(t, "policy.toml", tc.src), UserRequired: true, Home: t.TempDir()})
		var le *LoadError
		if !errors.As(err, &le) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want a load error holding %q", tc.src, err, tc.want)
		}
	}
	if _, err := Load(Options{NetworkAllow: []string{"ok.example", "a b"}}); err == nil || !strings.Contains(err.Error(), `config network_allow: rule "a b"`) {
		t.Errorf("config network_allow: %v", err)
	}
	if _, err := Load(Options{NetworkDeny: []string{"[::1"}}); err == nil || !strings.Contains(err.Error(), "network_deny") {
		t.Errorf("config network_deny: %v", err)
	}
	for _, tc := range []struct{ src, want string }{
		{"[command.x]\ncategory = \"networked\"\nhosts = [\"http://x/\"]\n", `command x: hosts: rule "http://x/"`},
		{"[command.x]\ncategory = \"mutating\"\nfetches = true\n", "command x: fetches, but neither it nor its program names hosts"},
		{"[command.x]\ncategory = \"unknown\"\nhosts = [\"x.example\"]\n[command.x.sub.b]\ncategory = \"mutating\"\nfetches = true\n", ""},
	} {
		_, err := loadKnowledge(tc.src, "k.toml")
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q: %v, want %q", tc.src, err, tc.want)
		}
	}
}

// TestHostsGitRemote: git fetch, pull, push and remote update reach their
// remote's host, read from the repository's own config (a worktree's
// too) without running git; a remote over SSH adds none.
func TestHostsGitRemote(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	home := t.TempDir()
	repo := filepath.Join(home, "repo")
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	git(repo, "init", "-q")
	git(repo, "remote", "add", "origin", "https://Git.Example.com/team/app.git")
	git(repo, "remote", "add", "upstream", "http://mirror.example:8080/app.git")
	git(repo, "remote", "set-url", "--push", "upstream", "https://push.example/app.git")
	git(repo, "remote", "add", "gh", "git@github.com:team/app.git")
	git(repo, "commit", "-q", "--allow-empty", "-m", "x")
	wt := filepath.Join(home, "wt")
	git(repo, "worktree", "add", "-q", wt)
	sub := filepath.Join(repo, "pkg")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	p, _ := netPolicy(t, Options{Home: home}, nil)
	origin := []string{"git.example.com:443"}
	for _, tc := range []struct {
		dir, line string
		want      []string
	}{
		{repo, "git fetch origin", origin},
		{sub, "git fetch", origin}, // origin by default, from a subdirectory
		{repo, "git pull --rebase origin main", origin},
		{repo, "git push origin HEAD", origin},
		{repo, "git fetch upstream", []string{"mirror.example:8080", "push.example:443"}},
		{repo, "git push --repo=upstream", []string{"mirror.example:8080", "push.example:443"}},
		{repo, "git fetch --all", []string{"git.example.com:443", "mirror.example:8080", "push.example:443"}},
		{repo, "git remote update", []string{"git.example.com:443", "mirror.example:8080", "push.example:443"}},
		{repo, "git fetch --multiple origin gh", origin},
		{repo, "git fetch gh", nil}, // SSH
		{repo, "git ls-remote", origin},
		{repo, "git fetch https://other.example/x.git main", []string{"other.example:443"}},
		{repo, "git remote add -f new https://new.example/r", []string{"new.example:443"}},
		{repo, "git fetch nosuchremote", nil},
		{wt, "git fetch origin", origin}, // a worktree reads the common config
		{home, "git -C repo fetch", origin},
		{home, "git fetch", nil}, // no repository
		{repo, "git status", nil},
	} {
		v := p.Check(tc.line, Env{Cwd: tc.dir})
		if !slices.Equal(v.Hosts, tc.want) {
			t.Errorf("%s in %s: hosts %q, want %q", tc.line, tc.dir, v.Hosts, tc.want)
		}
	}
	if by := p.Check("git fetch origin", Env{Cwd: repo}).HostsBy["git.example.com:443"]; by != "git remote origin" {
		t.Errorf("allowed by %q", by)
	}
}

// TestHostsAptSources: apt's hosts come from the machine's sources lists
// (one-line and deb822) as well as the table.
func TestHostsAptSources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	put(t, filepath.Join(dir, "sources.list"), "# x\ndeb [arch=amd64 signed-by=/k.gpg] http://archive.ubuntu.com/ubuntu noble main\ndeb-src https://src.example/debian stable main\n")
	put(t, filepath.Join(dir, "sources.list.d", "d.sources"), "Types: deb\nURIs: http://deb.debian.org/debian https://mirror.example:8443/debian\nSuites: bookworm\n")
	put(t, filepath.Join(dir, "sources.list.d", "ignored.txt"), "deb http://ignored.example/ x y\n")
	p, _ := netPolicy(t, Options{}, nil)
	p.net.aptDir = dir
	// apt install is host_escape_risk (its default is deny); a rule lets
	// it ask, and a person may approve it.
	q, err := p.With([]string{"apt-get install *"}, []string{"test"})
	if err != nil {
		t.Fatal(err)
	}
	v := q.Check("apt-get install -y jq", Env{Cwd: "/tmp"})
	want := []string{"deb.debian.org", "security.debian.org", "archive.ubuntu.com:80", "src.example:443", "deb.debian.org:80", "mirror.example:8443"}
	if !slices.Equal(v.Hosts, want) {
		t.Errorf("hosts %q, want %q", v.Hosts, want)
	}
}

// TestConfigFilesReadWithCare: a FIFO, a directory or a device where a
// settings file goes is not read (the judge must not block), and a huge
// file is read only so far.
func TestConfigFilesReadWithCare(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(home, ".npmrc"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".config/pip/pip.conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(home, ".pip")); err != nil {
		t.Fatal(err)
	}
	p, _ := netPolicy(t, Options{Home: home}, nil)
	if v := p.Check("npm install; pip install x", Env{Cwd: home}); len(v.Hosts) != 3 {
		t.Errorf("hosts %q", v.Hosts)
	}
	big := filepath.Join(t.TempDir(), "big")
	put(t, big, strings.Repeat("x", maxConfigFile+10))
	if got := readConfigFile(big); len(got) != maxConfigFile {
		t.Errorf("read %d bytes of a file larger than the limit", len(got))
	}
}

// TestVerdictHostsJSON: hosts reach sluice check's JSON and a result's
// verdict, and are left out where there are none.
func TestVerdictHostsJSON(t *testing.T) {
	t.Parallel()
	p, _ := netPolicy(t, Options{}, nil)
	qv := p.Check("npm install", Env{Cwd: "/tmp"}).Queue()
	line, err := queueJSON(qv)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(line, `"hosts":["registry.npmjs.org"]`) || strings.Contains(line, "knowledge: npm") {
		t.Errorf("result verdict %s: hosts, and only the hosts", line)
	}
	line, _ = queueJSON(p.Check("ls", Env{Cwd: "/tmp"}).Queue())
	if strings.Contains(line, "hosts") {
		t.Errorf("result verdict %s: no hosts", line)
	}
}

func queueJSON(v queue.Verdict) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// TestJudgeSetNetwork: a reloaded config.toml's network_allow and
// network_deny reach the next verdicts of a running judge.
func TestJudgeSetNetwork(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	j := &Judge{Options: Options{Home: home, Getenv: func(string) string { return "" }, NetworkAllow: []string{"a.example"}}}
	if err := j.Start(); err != nil {
		t.Fatal(err)
	}
	req := &queue.Request{Kind: queue.KindExec, Command: "curl https://x.example/", Cwd: home}
	if v := j.Judge(req); !slices.Equal(v.Hosts, []string{"x.example:443", "a.example"}) || v.HostsBy["a.example"] != "config: network_allow" {
		t.Fatalf("hosts %q by %v", v.Hosts, v.HostsBy)
	}
	// A request whose env makes it a deny gets no hosts.
	bad := *req
	bad.Env = map[string]string{"LD_PRELOAD": "/tmp/x.so"}
	if v := j.Judge(&bad); v.Action != queue.ActionDeny || v.Hosts != nil {
		t.Fatalf("denied request: %s hosts %q", v.Action, v.Hosts)
	}
	j.SetNetwork([]string{"b.example"}, []string{"x.example"})
	if v := j.Judge(req); !slices.Equal(v.Hosts, []string{"b.example"}) || !slices.Equal(v.HostsDenied, []string{"x.example"}) {
		t.Fatalf("after SetNetwork: hosts %q denied %q", v.Hosts, v.HostsDenied)
	}
}
