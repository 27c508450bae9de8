//go:build linux

package exec

import (
	"slices"
	"strings"
	"testing"
)

// TestRunEnvAllowList: a run, confined or not, does not see the engine's
// variables that are not on the allow-list (a secret under a name no
// pattern knows, options for tar, a library to preload, git configuration,
// a file bash would source), and sees them once env_allow names them.
func TestRunEnvAllowList(t *testing.T) {
	t.Parallel()
	f := newConfineFixture(t)
	leaks := []string{"DATABASE_URL=postgres://u:secret@db/x", "TAR_OPTIONS=--to-command=touch-sluice-pwned",
		"LD_PRELOAD=/nonexistent/sluice-preload.so", "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.pager",
		"GIT_CONFIG_VALUE_0=touch-sluice-pwned", "NODE_OPTIONS=--require=/nonexistent/x.js",
		"SHELL=/nonexistent/agent-sh", "LC_ALL=/nonexistent/locale"}
	f.r.BaseEnv = append(f.r.BaseEnv, leaks...)
	f.r.BaseEnv = append(f.r.BaseEnv, "LANG=C.UTF-8", "http_proxy=http://proxy.invalid:3128")
	names := make([]string, len(leaks))
	for i, kv := range leaks {
		names[i], _, _ = strings.Cut(kv, "=")
	}
	for _, allow := range []bool{false, true} {
		if allow {
			f.r.Reconfigure(Settings{EnvAllow: names, Confine: f.r.Confine})
		}
		for _, opt := range []Options{{Profile: "read_only"}, {Profile: "networked"}, {Unconfined: true}} {
			o := f.run(t, "env", nil, opt)
			lines := strings.Split(strings.ReplaceAll(string(o.log), "\r", ""), "\n")
			networked := opt.Profile == "networked"
			for _, kv := range leaks {
				if networked && kv == "GIT_CONFIG_COUNT=1" {
					// The run's proxy is one more of git's settings
					// (sandbox.ProxyEnv): after the allowed ones.
					want := map[bool]string{false: "GIT_CONFIG_COUNT=1", true: "GIT_CONFIG_COUNT=2"}[allow]
					if !slices.Contains(lines, want) {
						t.Errorf("%s missing from a networked run's environment:\n%s", want, o.log)
					}
					continue
				}
				if got := slices.Contains(lines, kv); got != allow {
					t.Errorf("%s allowed %v (%s): in the run's environment %v:\n%s", kv, allow, o.res.Sandbox, got, o.log)
				}
			}
			for _, kv := range []string{"LANG=C.UTF-8", "http_proxy=http://proxy.invalid:3128", "SLUICE_REQUEST_ID=" + o.res.ID} {
				if networked && strings.HasPrefix(kv, "http_proxy=") {
					// A networked run's proxy is its own (the company's
					// is network_upstream_proxy's to chain to).
					if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "http_proxy=http://sluice:") }) {
						t.Errorf("the run's own proxy missing from its environment:\n%s", o.log)
					}
					continue
				}
				if !slices.Contains(lines, kv) {
					t.Errorf("%s missing from the run's environment (%s):\n%s", kv, o.res.Sandbox, o.log)
				}
			}
		}
	}
}
