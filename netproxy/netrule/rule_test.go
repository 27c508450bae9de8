package netrule

import "testing"

func FuzzParseRule(f *testing.F) {
	for _, s := range []string{
		"registry.npmjs.org", "*.npmjs.org", "registry.npmjs.org:443", "10.0.0.0/8", "10.0.0.0/8:5432",
		"127.0.0.1:8080", "::1", "[::1]:443", "[fc00::/7]:443", "fe80::/10", "::ffff:10.0.0.0/104",
		"[::ffff:127.0.0.1]", "*.", "a:b:c", "[", "[]:1", "host:0", "host:65536", "0x7f.1", "127.1", "-",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// Any audit line's target is matched without a panic.
		if wild, err := ParseRule("*.example"); err == nil {
			_ = wild.MatchTarget(s)
		}
		r, err := ParseRule(s)
		if err != nil {
			return
		}
		if !r.Prefix.IsValid() && r.Port != 0 && !r.Wildcard && !r.MatchTarget(r.String()) {
			t.Fatalf("%q does not match its own target %q", s, r.String())
		}
		back, err := ParseRule(r.String())
		if err != nil || back != r {
			t.Fatalf("%q -> %q -> %+v, %v; want %+v", s, r.String(), back, err, r)
		}
		if r.Prefix.IsValid() == (r.Name != "") {
			t.Fatalf("%q: neither or both of a name and a range: %+v", s, r)
		}
	})
}

// A rule matches the targets a connect request names as the proxy would
// judge them: names in any case, the port where the rule has one, an
// address by its range; what is not host:port matches nothing.
func TestMatchTarget(t *testing.T) {
	for _, tc := range []struct {
		rule, target string
		want         bool
	}{
		{"registry.evil.example", "registry.evil.example:443", true},
		{"registry.evil.example", "Registry.Evil.Example.:80", true},
		{"registry.evil.example", "evil.example:443", false},
		{"registry.evil.example:443", "registry.evil.example:8443", false},
		{"*.evil.example", "registry.evil.example:443", true},
		{"*.evil.example", "evil.example:443", false},
		{"*.evil.example", "registry.evil.example.other:443", false},
		{"10.0.0.0/8:5432", "10.1.2.3:5432", true},
		{"10.0.0.0/8:5432", "10.1.2.3:5433", false},
		{"10.0.0.0/8", "ten.example:443", false},
		{"::1", "[::1]:443", true},
		{"[fc00::/7]:443", "[fd00::1]:443", true},
		{"registry.evil.example", "registry.evil.example", false},
		{"registry.evil.example", "registry.evil.example:0", false},
		{"registry.evil.example", "", false},
		{"registry.evil.example", "registry.evil.example:443\n", false},
	} {
		r, err := ParseRule(tc.rule)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.MatchTarget(tc.target); got != tc.want {
			t.Errorf("%q.MatchTarget(%q) = %v, want %v", tc.rule, tc.target, got, tc.want)
		}
	}
}
