package policy

import (
	"slices"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/netproxy/netrule"
)

// FuzzGitRemotes: any .git/config is read without panicking, the same
// way twice; every remote it names is listed once, in order, with no
// empty URL, and each host found is a rule in its own form.
func FuzzGitRemotes(f *testing.F) {
	for _, s := range []string{
		"[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://github.com/x/y.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n",
		"[remote \"a b\"] url = \"http://h:8080/p\" # comment\n[Remote \"UP\"]\n\tURL=git://x.example/r\n\tpushurl = https://p.example/r ; c\n",
		"[remote.old]\nurl = https://old.example/\n[remote \"x\"]\nurl = a\\\nb\n",
		"[remote \"q\\\"\"]\nurl = \"unterminated\n[\n]\n[remote \"\"]\nurl=\n",
		"\xff[remote \"\x00\"]\nurl=\\",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		remotes, order := gitRemotes(src)
		again, order2 := gitRemotes(src)
		if !slices.Equal(order, order2) || len(remotes) != len(again) {
			t.Fatalf("read differently twice: %q", src)
		}
		if len(order) != len(remotes) {
			t.Fatalf("order %q does not list the remotes %v", order, remotes)
		}
		for i, name := range order {
			if _, ok := remotes[name]; !ok || slices.Contains(order[i+1:], name) {
				t.Fatalf("remote %q listed wrongly in %q", name, order)
			}
			for _, u := range remotes[name] {
				if u == "" {
					t.Fatalf("an empty URL for %q", name)
				}
				checkHost(t, u)
			}
		}
	})
}

// FuzzNpmrc: any .npmrc or pip.conf is read without panicking; every
// registry or index found is text of the file, and none uses ${...}.
func FuzzNpmrc(f *testing.F) {
	for _, s := range []string{
		"registry=https://registry.npmjs.org/\n@s:registry = \"http://x:1/\"\n//x/:_authToken=t\n",
		"REGISTRY=${R}\n; c\n# c\nregistry\n=\n",
		"[global]\nindex-url = https://i.example/simple\nextra-index-url =\n  https://a.example\n\thttps://b.example\n[x]\nindex_url: http://c.example\n",
		"\"registry\"=\"\\x\"\n\xff=\xfe\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		for _, u := range npmrcRegistries(src) {
			if u == "" || strings.Contains(u, "${") {
				t.Fatalf("registry %q from %q", u, src)
			}
			checkHost(t, u)
		}
		for _, u := range pipIndexes(src) {
			if u == "" || !strings.Contains(src, u) {
				t.Fatalf("index %q is not text of %q", u, src)
			}
			checkHost(t, u)
		}
	})
}

// checkHost fails t when u's host is not a netproxy rule in its own form.
func checkHost(t *testing.T, u string) {
	t.Helper()
	if h, ok := urlHost(u); ok {
		if r, err := netrule.ParseRule(h); err != nil || r.String() != h || r.Port == 0 {
			t.Fatalf("host %q of %q is not a rule with a port in its own form (%v)", h, u, err)
		}
	}
}
