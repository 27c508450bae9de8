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
		r, err := ParseRule(s)
		if err != nil {
			return
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
