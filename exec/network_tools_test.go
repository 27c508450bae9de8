//go:build linux

package exec

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/netip"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// Real tools in a confined networked run, offline: each fetches from a
// local server standing in for its registry, whose name the runs' proxies
// resolve to it (the test resolver table). With the registry among the
// verdict's hosts the tool succeeds through the proxy and the result lists
// exactly that host; without it the tool fails with the proxy's refusal
// line, well inside the run's timeout.

// toolTimeout is the runs' own timeout: a tool that hung on a refused
// connection would end "timeout", which the tests fail.
const toolTimeout = 3 * time.Minute

// toolFixture is a confining runner whose runs' proxies resolve each
// registry name to a local server of its own.
type toolFixture struct {
	*confineFixture
}

// newToolFixture serves each handler under its name (host, port 80 as
// the tools ask for it) for runs confined with box.
func newToolFixture(t *testing.T, box string, servers map[string]http.Handler) *toolFixture {
	t.Helper()
	f := newConfineFixture(t)
	addrs := map[string]netip.AddrPort{}
	c := f.r.Confine
	c.Box = box
	for name, h := range servers {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		addr := netip.MustParseAddrPort(srv.Listener.Addr().String())
		addrs[name] = addr
		// The server is on the host's loopback: a rule must name its
		// address for the name that resolves there to be reached.
		c.NetAllow = append(c.NetAllow, addr.String())
	}
	c.resolve = func(_ context.Context, host string, _ int) ([]netip.AddrPort, error) {
		if a, ok := addrs[host]; ok {
			return []netip.AddrPort{a}, nil
		}
		return nil, fmt.Errorf("no such host %s", host)
	}
	return &toolFixture{f}
}

// runTool runs cmd networked in the project with env and the verdict's
// hosts; the run must end by itself (status done), not at its timeout.
func (f *toolFixture) runTool(t *testing.T, cmd string, env map[string]string, hosts ...string) runOut {
	t.Helper()
	req := execReq(t, cmd)
	req.Cwd = f.project
	req.Env = env
	req.TimeoutS = int(toolTimeout / time.Second)
	opt := Options{Profile: "networked", Hosts: HostSet{Allow: hosts},
		LogPath: filepath.Join(f.spool, "out", req.ID+".log")}
	o := run(t.Context(), t, f.r, req, opt, toolTimeout+time.Minute)
	checkRan(t, req, o)
	if o.res.Status != queue.StatusDone {
		t.Fatalf("%q: status %s (%s):\n%s", cmd, o.res.Status, o.res.Reason, o.log)
	}
	return o
}

// needTool skips the test when name is not installed.
func needTool(t *testing.T, name string) {
	t.Helper()
	if _, err := osexec.LookPath(name); err != nil {
		t.Skipf("%s not installed: the case needs the real tool", name)
	}
}

// wantOnly fails unless the run contacted exactly host:80, allowed by the
// verdict, with bytes each way.
func wantOnly(t *testing.T, o runOut, host string) {
	t.Helper()
	if n := o.res.Network; len(n) != 1 || n[0].Host != host || n[0].Port != 80 ||
		n[0].AllowedBy != "verdict" || n[0].Sent == 0 || n[0].Received == 0 {
		t.Errorf("network %+v, want %s:80 alone, allowed by the verdict, with bytes each way", n, host)
	}
}

// wantRefused fails unless the run failed with the proxy's refusal of
// host:80 as its last line, and its network says so.
func wantRefused(t *testing.T, o runOut, host string) {
	t.Helper()
	if *o.res.ExitCode == 0 {
		t.Fatalf("%s outside the run's hosts: exit 0:\n%s", host, o.log)
	}
	if want, got := "sluice: the run's proxy refused "+host+":80: not in this run's hosts", shownLast(o.log); got != want {
		t.Errorf("last line %q, want %q; log:\n%s", got, want, o.log)
	}
	if n := o.res.Network; len(n) != 1 || n[0].Host != host || !strings.HasPrefix(n[0].AllowedBy, "refused: ") {
		t.Errorf("network %+v, want %s refused alone", n, host)
	}
}

// csiRe is a terminal control sequence (CSI); col1Re one that returns
// to the line's first column (a carriage return among them).
var (
	csiRe  = regexp.MustCompile("\x1b\\[[0-9;?]*[ -/]*[@-~]")
	col1Re = regexp.MustCompile("\r|\x1b\\[1?G")
)

// shownLast is the log's last line as a terminal shows it: what follows
// its last return to the first column, without control sequences. A tool
// that redraws a progress line on a terminal (npm's spinner: "|" then
// ESC[1G ESC[0K, with no line ending) leaves that in front of the line
// the run ends with.
func shownLast(log []byte) string {
	l := lastLine(log)
	if m := col1Re.FindAllStringIndex(l, -1); m != nil {
		l = l[m[len(m)-1][1]:]
	}
	return csiRe.ReplaceAllString(l, "")
}

// forModes runs body in each way a networked run is held to its proxy.
func forModes(t *testing.T, body func(t *testing.T, box string)) {
	t.Helper()
	modes := netModes(t)
	names := make([]string, 0, len(modes))
	for m := range modes {
		names = append(names, m)
	}
	sort.Strings(names)
	for _, m := range names {
		box := modes[m]
		t.Run(m, func(t *testing.T) {
			t.Parallel()
			body(t, box)
		})
	}
}

// zipOf is a zip archive of files (name to content).
func zipOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		w, err := zw.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(files[n])); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// serveFiles answers a request for a path with its content, any other
// with 404.
func serveFiles(files map[string][]byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	})
}

// goProxy is a GOPROXY serving module tiny.test/tiny at v1.0.0.
func goProxy(t *testing.T) http.Handler {
	const mod, ver = "tiny.test/tiny", "v1.0.0"
	gomod := "module " + mod + "\n\ngo 1.21\n"
	z := zipOf(t, map[string]string{
		mod + "@" + ver + "/go.mod":  gomod,
		mod + "@" + ver + "/tiny.go": "package tiny\n\n// Answer is the answer.\nconst Answer = 42\n",
	})
	base := "/" + mod + "/@v/"
	return serveFiles(map[string][]byte{
		base + "list":          []byte(ver + "\n"),
		base + ver + ".info":   []byte(`{"Version":"` + ver + `","Time":"2026-01-02T03:04:05Z"}`),
		base + ver + ".mod":    []byte(gomod),
		base + ver + ".zip":    z,
		"/" + mod + "/@latest": []byte(`{"Version":"` + ver + `","Time":"2026-01-02T03:04:05Z"}`),
	})
}

// `go mod download` from a local GOPROXY, into a module cache in the
// run's own TMPDIR.
func TestToolsGoModDownload(t *testing.T) {
	t.Parallel()
	needTool(t, "go")
	forModes(t, func(t *testing.T, box string) {
		f := newToolFixture(t, box, map[string]http.Handler{"proxy.test": goProxy(t)})
		gomod := "module example.com/app\n\ngo 1.21\n\nrequire tiny.test/tiny v1.0.0\n"
		if err := os.WriteFile(filepath.Join(f.project, "go.mod"), []byte(gomod), 0o600); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{"GOPROXY": "http://proxy.test", "GOSUMDB": "off", "GOFLAGS": "-mod=mod",
			"GOTOOLCHAIN": "local"}
		// The module cache and build cache are the run's: fresh, and
		// writable whatever the confinement makes of the user's.
		cmd := `export GOMODCACHE="$TMPDIR/mod" GOCACHE="$TMPDIR/cache" && go mod download -json tiny.test/tiny && ` +
			`cat "$GOMODCACHE/tiny.test/tiny@v1.0.0/tiny.go"`
		o := f.runTool(t, cmd, env, "proxy.test")
		if *o.res.ExitCode != 0 || !strings.Contains(string(o.log), "const Answer = 42") {
			t.Fatalf("go mod download: exit %d:\n%s", *o.res.ExitCode, o.log)
		}
		wantOnly(t, o, "proxy.test")

		o = f.runTool(t, cmd, env, "registry.test")
		wantRefused(t, o, "proxy.test")
	})
}

// gitServer is git http-backend serving a bare repository repo.git whose
// one commit holds hello.txt.
func gitServer(t *testing.T) http.Handler {
	t.Helper()
	root := t.TempDir()
	work := filepath.Join(t.TempDir(), "work")
	env := append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1")
	gitIn := func(dir string, args ...string) {
		t.Helper()
		cmd := osexec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	gitIn(work, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(work, "hello.txt"), []byte("hello from git\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gitIn(work, "add", "hello.txt")
	gitIn(work, "commit", "-q", "-m", "first")
	gitIn(root, "clone", "-q", "--bare", work, "repo.git")
	return &cgi.Handler{Path: mustGit(t), Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
}

func mustGit(t *testing.T) string {
	t.Helper()
	p, err := osexec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// `git clone` over HTTP from git http-backend.
func TestToolsGitClone(t *testing.T) {
	t.Parallel()
	needTool(t, "git")
	forModes(t, func(t *testing.T, box string) {
		f := newToolFixture(t, box, map[string]http.Handler{"git.test": gitServer(t)})
		env := map[string]string{"GIT_TERMINAL_PROMPT": "0"}
		o := f.runTool(t, "git clone -q http://git.test/repo.git && cat repo/hello.txt", env, "git.test")
		if *o.res.ExitCode != 0 || !strings.Contains(string(o.log), "hello from git") {
			t.Fatalf("git clone: exit %d:\n%s", *o.res.ExitCode, o.log)
		}
		wantOnly(t, o, "git.test")

		o = f.runTool(t, "git clone -q http://git.test/repo.git again", env, "registry.test")
		wantRefused(t, o, "git.test")
	})
}

// pypiIndex is a simple index serving tinypkg 0.1 as a wheel.
func pypiIndex(t *testing.T) http.Handler {
	const whl = "tinypkg-0.1-py3-none-any.whl"
	files := map[string]string{
		"tinypkg/__init__.py":            "VALUE = 1\n",
		"tinypkg-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: tinypkg\nVersion: 0.1\n",
		"tinypkg-0.1.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: sluice-test\nRoot-Is-Purelib: true\n" +
			"Tag: py3-none-any\n",
	}
	var record strings.Builder
	for _, n := range []string{"tinypkg/__init__.py", "tinypkg-0.1.dist-info/METADATA", "tinypkg-0.1.dist-info/WHEEL"} {
		s := sha256.Sum256([]byte(files[n]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", n, base64.RawURLEncoding.EncodeToString(s[:]), len(files[n]))
	}
	record.WriteString("tinypkg-0.1.dist-info/RECORD,,\n")
	files["tinypkg-0.1.dist-info/RECORD"] = record.String()
	w := zipOf(t, files)
	sum := sha256.Sum256(w)
	page := fmt.Sprintf("<!DOCTYPE html>\n<html><body><a href=\"/files/%s#sha256=%s\">%s</a></body></html>\n",
		whl, hex.EncodeToString(sum[:]), whl)
	return serveFiles(map[string][]byte{
		"/simple/tinypkg/": []byte(page),
		"/files/" + whl:    w,
	})
}

// `pip download` from a local simple index.
func TestToolsPipDownload(t *testing.T) {
	t.Parallel()
	needTool(t, "pip")
	forModes(t, func(t *testing.T, box string) {
		f := newToolFixture(t, box, map[string]http.Handler{"pypi.test": pypiIndex(t)})
		// No check of pip's own version (it asks the index), and pip's
		// cache in the run's TMPDIR.
		env := map[string]string{"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1",
			"PIP_TRUSTED_HOST": "pypi.test"} // pip ignores a plain-HTTP index otherwise
		cmd := `export PIP_CACHE_DIR="$TMPDIR/pip" && pip download --no-deps --index-url http://pypi.test/simple/ tinypkg`
		o := f.runTool(t, cmd, env, "pypi.test")
		if *o.res.ExitCode != 0 {
			t.Fatalf("pip download: exit %d:\n%s", *o.res.ExitCode, o.log)
		}
		if _, err := os.Stat(filepath.Join(f.project, "tinypkg-0.1-py3-none-any.whl")); err != nil {
			t.Fatalf("pip download: the wheel is not in the project: %v\n%s", err, o.log)
		}
		wantOnly(t, o, "pypi.test")

		// Into another directory: the wheel already in the project
		// must not spare pip the index.
		o = f.runTool(t, cmd+" -d elsewhere", env, "registry.test")
		wantRefused(t, o, "pypi.test")
	})
}

// npmRegistry serves package tinypkg 1.0.0: its packument and tarball.
func npmRegistry(t *testing.T) http.Handler {
	t.Helper()
	var tgz bytes.Buffer
	gz := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(gz)
	for _, f := range []struct{ name, body string }{
		{"package/package.json", `{"name":"tinypkg","version":"1.0.0","main":"index.js"}` + "\n"},
		{"package/index.js", "module.exports = 'hello from npm';\n"},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)),
			ModTime: time.Unix(1767322800, 0), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	s1, s512 := sha1.Sum(tgz.Bytes()), sha512.Sum512(tgz.Bytes())
	doc := map[string]any{
		"name":      "tinypkg",
		"dist-tags": map[string]string{"latest": "1.0.0"},
		"versions": map[string]any{"1.0.0": map[string]any{
			"name": "tinypkg", "version": "1.0.0", "main": "index.js",
			"dist": map[string]string{
				"tarball":   "http://npm.test/tinypkg/-/tinypkg-1.0.0.tgz",
				"shasum":    hex.EncodeToString(s1[:]),
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:]),
			},
		}},
	}
	packument, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return serveFiles(map[string][]byte{
		"/tinypkg":                     packument,
		"/tinypkg/-/tinypkg-1.0.0.tgz": tgz.Bytes(),
	})
}

// `npm install` of a package from a local registry.
func TestToolsNpmInstall(t *testing.T) {
	t.Parallel()
	needTool(t, "npm")
	forModes(t, func(t *testing.T, box string) {
		f := newToolFixture(t, box, map[string]http.Handler{"npm.test": npmRegistry(t)})
		if err := os.WriteFile(filepath.Join(f.project, "package.json"),
			[]byte(`{"name":"app","version":"1.0.0","private":true}`+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		// No audit, funding note or update check (each asks a
		// registry), and npm's cache in the run's TMPDIR.
		env := map[string]string{"npm_config_registry": "http://npm.test/", "npm_config_audit": "false",
			"npm_config_fund": "false", "npm_config_update_notifier": "false", "npm_config_fetch_retries": "0"}
		cmd := `export npm_config_cache="$TMPDIR/npm" && npm install tinypkg && node -p "require('tinypkg')"`
		o := f.runTool(t, cmd, env, "npm.test")
		if *o.res.ExitCode != 0 || !strings.Contains(string(o.log), "hello from npm") {
			t.Fatalf("npm install: exit %d:\n%s", *o.res.ExitCode, o.log)
		}
		wantOnly(t, o, "npm.test")

		if err := os.RemoveAll(filepath.Join(f.project, "node_modules")); err != nil {
			t.Fatal(err)
		}
		o = f.runTool(t, cmd, env, "registry.test")
		wantRefused(t, o, "npm.test")
	})
}
