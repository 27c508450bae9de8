package sandbox

import (
	osexec "os/exec"
	"slices"
	"strings"
	"testing"
)

// envMap reads env as a map, failing on a name given twice (which value
// a program sees would then depend on the program).
func envMap(t *testing.T, env []string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := m[k]; dup {
			t.Errorf("%s is set twice", k)
		}
		m[k] = v
	}
	return m
}

// TestProxyEnv: every proxy setting the tools read names the run's
// proxy, in place of a company proxy the caller's environment named; the
// run's loopback goes around it; git's http.proxy comes after the
// GIT_CONFIG entries already there; the CA variables and GOPROXY pass as
// they are.
func TestProxyEnv(t *testing.T) {
	t.Parallel()
	const url = "http://127.0.0.1:3128"
	in := []string{
		"PATH=/usr/bin", "HTTPS_PROXY=http://corp:8080", "https_proxy=http://corp:8080", "NO_PROXY=corp.internal",
		"NPM_CONFIG_PROXY=http://corp:8080", "GOPROXY=https://goproxy.example",
		"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=core.pager", "GIT_CONFIG_VALUE_0=cat",
		"GIT_CONFIG_KEY_1=user.name", "GIT_CONFIG_VALUE_1=me",
		"SSL_CERT_FILE=/ca.pem", "NODE_EXTRA_CA_CERTS=/ca.pem", "REQUESTS_CA_BUNDLE=/ca.pem", "GIT_SSL_CAINFO=/ca.pem",
	}
	got := envMap(t, ProxyEnv(slices.Clone(in), url))
	for _, name := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
		"npm_config_proxy", "npm_config_https_proxy", "PIP_PROXY", "YARN_HTTP_PROXY", "YARN_HTTPS_PROXY", "CARGO_HTTP_PROXY"} {
		if got[name] != url {
			t.Errorf("%s = %q, want %q", name, got[name], url)
		}
	}
	for _, name := range []string{"NO_PROXY", "no_proxy", "npm_config_noproxy"} {
		if got[name] != "localhost,127.0.0.1,::1" {
			t.Errorf("%s = %q", name, got[name])
		}
	}
	if _, ok := got["NPM_CONFIG_PROXY"]; ok {
		t.Error("npm's upper-case proxy setting (the company's) is still there")
	}
	want := map[string]string{
		"GIT_CONFIG_COUNT": "3", "GIT_CONFIG_KEY_2": "http.proxy", "GIT_CONFIG_VALUE_2": url,
		"GIT_CONFIG_KEY_0": "core.pager", "GIT_CONFIG_VALUE_1": "me",
		"GOPROXY": "https://goproxy.example", "PATH": "/usr/bin",
		"SSL_CERT_FILE": "/ca.pem", "NODE_EXTRA_CA_CERTS": "/ca.pem", "REQUESTS_CA_BUNDLE": "/ca.pem", "GIT_SSL_CAINFO": "/ca.pem",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if out := ProxyEnv(in, ""); !slices.Equal(out, in) {
		t.Errorf("without a proxy the environment changed: %q", out)
	}
	// A count that is no number starts git's entries at 0.
	if m := envMap(t, ProxyEnv([]string{"GIT_CONFIG_COUNT=x", "GIT_CONFIG_KEY_0=a.b"}, url)); m["GIT_CONFIG_KEY_0"] != "http.proxy" || m["GIT_CONFIG_COUNT"] != "1" {
		t.Errorf("bad count: %v", m)
	}
}

// TestProxyEnvTools: the tools themselves read the proxy from the
// environment ProxyEnv makes (those installed here).
func TestProxyEnvTools(t *testing.T) {
	t.Parallel()
	const url = "http://127.0.0.1:3128"
	env := ProxyEnv([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1"}, url)
	for _, tc := range []struct {
		tool string
		args []string
	}{
		{"git", []string{"config", "--get", "http.proxy"}},
		{"npm", []string{"config", "get", "proxy"}},
		{"npm", []string{"config", "get", "https-proxy"}},
	} {
		path, err := osexec.LookPath(tc.tool)
		if err != nil {
			t.Logf("%s is not installed", tc.tool)
			continue
		}
		cmd := osexec.Command(path, tc.args...)
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil || strings.TrimSpace(string(out)) != url {
			t.Errorf("%s %s: %q, %v; want %s", tc.tool, strings.Join(tc.args, " "), out, err, url)
		}
	}
}
