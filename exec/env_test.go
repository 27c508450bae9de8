//go:build unix

package exec

import (
	"bytes"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// TestInheritEnv: what a run inherits is the allow-list's names, minus
// the secret ones unless the person named them exactly.
func TestInheritEnv(t *testing.T) {
	t.Parallel()
	shells := map[string]bool{"/bin/bash": true}
	for _, tc := range []struct {
		name            string
		env             []string
		allow, patterns []string
		want            []string
	}{
		{"defaults pass", []string{"PATH=/bin", "HOME=/h", "LANG=C.UTF-8", "LC_ALL=C", "LC_TIME=en_GB.UTF-8", "TERM=xterm",
			"GOPATH=/g", "http_proxy=http://p:3128", "CI=true", "XDG_CACHE_HOME=/c"}, nil, nil,
			[]string{"PATH=/bin", "HOME=/h", "LANG=C.UTF-8", "LC_ALL=C", "LC_TIME=en_GB.UTF-8", "TERM=xterm",
				"GOPATH=/g", "http_proxy=http://p:3128", "CI=true", "XDG_CACHE_HOME=/c"}},
		{"unlisted secrets stay", []string{"PATH=/bin", "DATABASE_URL=postgres://u:secret@db/x", "STRIPE_KEY=sk_live", "MY_PASS=p"},
			nil, nil, []string{"PATH=/bin"}},
		{"options and programs stay", []string{"TAR_OPTIONS=--to-command=sh", "GREP=x", "MAKEFLAGS=-j", "LD_PRELOAD=/x.so",
			"LD_LIBRARY_PATH=/x", "NODE_OPTIONS=--require=/x", "PYTHONSTARTUP=/x.py", "PYTHONPATH=/x", "BASH_ENV=/x",
			"ENV=/x", "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.pager", "GIT_SSH_COMMAND=x", "GOFLAGS=-toolexec=x",
			"PAGER=x", "EDITOR=x", "LESSOPEN=|x", "SHLVL=3", "OLDPWD=/", "HOSTNAME=h"},
			nil, nil, nil},
		{"the known secrets stay", []string{"SSH_AUTH_SOCK=/s", "GITHUB_TOKEN=g", "AWS_REGION=r"}, nil, nil, nil},
		{"a stale id and malformed entries go", []string{"SLUICE_REQUEST_ID=stale", "malformed", "=x", "PATH=/bin"},
			nil, nil, []string{"PATH=/bin"}},
		{"names match case included", []string{"path=/x", "Home=/y", "HTTP_PROXY=a", "https_proxy=b", "lc_all=C"}, nil, nil,
			[]string{"HTTP_PROXY=a", "https_proxy=b"}},
		{"a locale path stays", []string{"LANG=/tmp/x", "LC_CTYPE=../x", "LANGUAGE=en:fr", "LC_ALL=C"}, nil, nil,
			[]string{"LANGUAGE=en:fr", "LC_ALL=C"}},
		{"SHELL only as a login shell", []string{"SHELL=/bin/bash"}, nil, nil, []string{"SHELL=/bin/bash"}},
		{"SHELL of the agent's own", []string{"SHELL=/tmp/agent/sh"}, nil, nil, nil},
		{"env_allow adds names and globs", []string{"DATABASE_URL=d", "MY_A=1", "MY_B=2", "MYX=3", "TAR_OPTIONS=t"},
			[]string{"DATABASE_URL", "MY_*"}, nil, []string{"DATABASE_URL=d", "MY_A=1", "MY_B=2"}},
		{"an exact name wins over the secret patterns", []string{"GITHUB_TOKEN=g", "GH_TOKEN=h", "DEPLOY_KEY=k"},
			[]string{"GITHUB_TOKEN", "DEPLOY_KEY"}, []string{"*_TOKEN", "DEPLOY_*"}, []string{"GITHUB_TOKEN=g", "DEPLOY_KEY=k"}},
		{"a glob does not", []string{"MY_API_KEY=k", "MY_HOST=h"}, []string{"MY_*"}, nil, []string{"MY_HOST=h"}},
		{"a secret pattern strips a default name", []string{"HOME=/h", "PATH=/bin", "HTTPS_PROXY=http://u:pw@p"},
			nil, []string{"*_PROXY"}, []string{"HOME=/h", "PATH=/bin"}},
		{"an exact name skips the value's check", []string{"SHELL=/opt/zsh", "LC_ALL=/l"}, []string{"SHELL", "LC_ALL"}, nil,
			[]string{"SHELL=/opt/zsh", "LC_ALL=/l"}},
		{"empty patterns strip nothing allowed", []string{"GITHUB_TOKEN=g", "HOME=/h"}, []string{"GITHUB_*"}, []string{},
			[]string{"GITHUB_TOKEN=g", "HOME=/h"}},
		{"a malformed pattern is a literal", []string{"X[=1", "XY=2"}, []string{"X*"}, []string{"X["}, []string{"XY=2"}},
	} {
		if got := inheritEnv(tc.env, tc.allow, tc.patterns, func() map[string]bool { return shells }); !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// TestBuildEnv: the request's env is added after what is inherited,
// filtered by the secret patterns but not by the allow-list, and the id
// comes last.
func TestBuildEnv(t *testing.T) {
	t.Parallel()
	base := []string{"PATH=/bin", "OVER=base", "FOO_TOKEN=a", "SLUICE_REQUEST_ID=stale", "HOME=/h"}
	for _, tc := range []struct {
		name     string
		allow    []string
		patterns []string
		extra    map[string]string
		id       string
		want     []string
	}{
		{"no request env", nil, nil, nil, "id1", []string{"PATH=/bin", "HOME=/h", "SLUICE_REQUEST_ID=id1"}},
		{"request env sorted, secrets stripped", []string{"OVER"}, nil,
			map[string]string{"OVER": "req", "B_EXTRA": "2", "ANTHROPIC_API_KEY": "f", "A_PASSWORD_FILE": "g", "SLUICE_REQUEST_ID": "forged"},
			"id2", []string{"PATH=/bin", "HOME=/h", "B_EXTRA=2", "OVER=req", "SLUICE_REQUEST_ID=id2"}},
		{"request env is not held to the allow-list", nil, nil, map[string]string{"GOFLAGS": "-count=1"}, "id3",
			[]string{"PATH=/bin", "HOME=/h", "GOFLAGS=-count=1", "SLUICE_REQUEST_ID=id3"}},
		{"an exact allow does not reach the request env", []string{"FOO_TOKEN"}, nil, map[string]string{"FOO_TOKEN": "req"}, "",
			[]string{"PATH=/bin", "HOME=/h"}},
		{"no id, none set", nil, nil, nil, "", []string{"PATH=/bin", "HOME=/h"}},
	} {
		if got := BuildEnv(base, tc.allow, tc.patterns, tc.extra, tc.id); !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// TestCheckEnvAllow: names and PREFIX* globs, nothing else.
func TestCheckEnvAllow(t *testing.T) {
	t.Parallel()
	if err := CheckEnvAllow(append([]string{"DATABASE_URL", "MY_*", "x1", "_A"}, DefaultEnvAllow...)); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"", "*", "1X", "A-B", "A*B", "A**", "A=B", "PATH ", "$HOME", "A?"} {
		if err := CheckEnvAllow([]string{"OK", bad}); err == nil || !strings.HasPrefix(err.Error(), "exec: ") {
			t.Errorf("CheckEnvAllow(%q) = %v", bad, err)
		}
	}
}

func TestCheckPatterns(t *testing.T) {
	t.Parallel()
	if err := CheckPatterns(DefaultSecretPatterns); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"", "X["} {
		if err := CheckPatterns([]string{bad}); err == nil || !strings.HasPrefix(err.Error(), "exec: ") {
			t.Errorf("CheckPatterns(%q) = %v", bad, err)
		}
	}
}

// TestRunSecretsNeverReachChild prints the child's environment and looks
// for every secret, by name and by value, in the log.
func TestRunSecretsNeverReachChild(t *testing.T) {
	t.Parallel()
	r := testRunner()
	r.EnvAllow = []string{"HARMLESS", "FOO_*"} // a glob lets no secret through
	r.BaseEnv = append(r.BaseEnv,
		"FOO_TOKEN=secret-base-1", "AWS_SECRET_ACCESS_KEY=secret-base-2", "ANTHROPIC_API_KEY=secret-base-3",
		"HARMLESS=visible-base", "PWD=/wrong/place")
	req := execReq(t, "env")
	req.Env = map[string]string{
		"FOO_TOKEN": "secret-req-1", "AWS_SECRET_ACCESS_KEY": "secret-req-2", "ANTHROPIC_API_KEY": "secret-req-3",
		"REQ_HARMLESS": "visible-req",
	}
	o := run(t.Context(), t, r, req, Options{}, 10*time.Second)
	checkRan(t, req, o)
	for _, s := range []string{"secret-", "FOO_TOKEN", "AWS_SECRET_ACCESS_KEY", "ANTHROPIC_API_KEY", "/wrong/place"} {
		if bytes.Contains(o.log, []byte(s)) {
			t.Errorf("%q reached the child:\n%s", s, o.log)
		}
	}
	lines := strings.Split(string(o.log), "\n")
	for _, s := range []string{"HARMLESS=visible-base", "REQ_HARMLESS=visible-req", "SLUICE_REQUEST_ID=" + req.ID, "TERM=xterm-256color"} {
		if !slices.Contains(lines, s) {
			t.Errorf("%q missing from the child's env:\n%s", s, o.log)
		}
	}
	if o.res.Status != queue.StatusDone {
		t.Errorf("status %s", o.res.Status)
	}
}

// FuzzSecretGlob: the secret patterns' own matcher says what path.Match
// says, for any pattern and name (a malformed pattern: the identical name
// only).
func FuzzSecretGlob(f *testing.F) {
	for _, p := range DefaultSecretPatterns {
		f.Add(p, "MY_"+p)
	}
	f.Add("*_TOKEN_*", "A_TOKEN_TOKEN_B")
	f.Add("**", "")
	f.Add("A*A", "A")
	f.Add("*_KEY*", "X/_KEY")
	f.Add("X[", "X[")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		want, err := path.Match(pattern, name)
		if err != nil {
			want = pattern == name
		}
		if got := compileGlob(pattern).match(name); got != want {
			t.Fatalf("glob %q on %q: %v, path.Match says %v", pattern, name, got, want)
		}
	})
}
