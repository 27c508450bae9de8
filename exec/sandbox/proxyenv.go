package sandbox

import (
	"strconv"
	"strings"
)

// NoProxy is what a proxied run reaches without its proxy: its own
// loopback, where its tests listen.
const NoProxy = "localhost,127.0.0.1,::1"

// proxyVars are the settings that name a proxy, in the names the tools
// read: the common variables in both cases (curl, wget, Go, Python,
// Node's fetch with them), npm's (which reads npm_config_* in any case),
// pip's, yarn's (berry ignores the common ones), cargo's. git takes its
// http.proxy through GIT_CONFIG_COUNT (ProxyEnv).
var proxyVars = []string{
	"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
	"npm_config_proxy", "npm_config_https_proxy",
	"PIP_PROXY", "YARN_HTTP_PROXY", "YARN_HTTPS_PROXY", "CARGO_HTTP_PROXY",
}

// noProxyVars name what goes around the proxy.
var noProxyVars = []string{"NO_PROXY", "no_proxy", "npm_config_noproxy"}

// ProxyEnv returns env with every proxy setting the run's tools read
// naming proxy (a URL, Confinement.ProxyURL), and NoProxy what they reach
// without it; the settings env had for another proxy (a company's, which
// the caller's proxy chains to) are replaced, npm's whatever their case.
// git gets http.proxy as one more GIT_CONFIG_COUNT entry, after those env
// holds. Go honours HTTPS_PROXY; GOPROXY is left as it is. The CA
// variables (SSL_CERT_FILE, NODE_EXTRA_CA_CERTS, REQUESTS_CA_BUNDLE,
// GIT_SSL_CAINFO) pass as they are. With proxy "" env is returned as is.
func ProxyEnv(env []string, proxy string) []string {
	if proxy == "" {
		return env
	}
	gitCount := 0
	for _, kv := range env {
		if val, ok := strings.CutPrefix(kv, "GIT_CONFIG_COUNT="); ok {
			if n, err := strconv.Atoi(val); err == nil && n > 0 {
				gitCount = n
			}
		}
	}
	n := strconv.Itoa(gitCount)
	gitVars := []string{"GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_" + n, "GIT_CONFIG_VALUE_" + n}
	replaced := func(name string) bool {
		for _, list := range [][]string{proxyVars, noProxyVars, gitVars} {
			for _, v := range list {
				if name == v || strings.HasPrefix(v, "npm_config_") && strings.EqualFold(name, v) {
					return true
				}
			}
		}
		return false
	}
	out := make([]string, 0, len(env)+len(proxyVars)+len(noProxyVars)+len(gitVars))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !replaced(name) {
			out = append(out, kv)
		}
	}
	for _, v := range proxyVars {
		out = append(out, v+"="+proxy)
	}
	for _, v := range noProxyVars {
		out = append(out, v+"="+NoProxy)
	}
	return append(out, "GIT_CONFIG_KEY_"+n+"=http.proxy", "GIT_CONFIG_VALUE_"+n+"="+proxy,
		"GIT_CONFIG_COUNT="+strconv.Itoa(gitCount+1))
}
