package policy

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestHostProposals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		host string
		port int
		want []string
		def  int
	}{
		{"registry.evil.example", 443, []string{"registry.evil.example:443", "registry.evil.example", "*.evil.example"}, 1},
		{"Registry.Evil.Example.", 80, []string{"registry.evil.example:80", "registry.evil.example", "*.evil.example"}, 1},
		{"db.corp.example", 5432, []string{"db.corp.example:5432", "db.corp.example", "*.corp.example:5432"}, 0},
		{"example.com", 443, []string{"example.com:443", "example.com"}, 1}, // never *.com
		{"localhost", 8080, []string{"localhost:8080", "localhost"}, 0},
		{"10.1.2.3", 5432, []string{"10.1.2.3:5432", "10.1.2.3"}, 0},
		{"::1", 443, []string{"[::1]:443", "::1"}, 1},
		{"*.evil.example", 443, nil, 0},
		{"a b", 443, nil, 0},
		{"evil.example:443", 443, nil, 0},
		{"evil.example", 0, nil, 0},
		{"", 443, nil, 0},
	} {
		got, def := HostProposals(tc.host, tc.port)
		if !slices.Equal(got, tc.want) || def != tc.def {
			t.Errorf("HostProposals(%q, %d) = %q, %d; want %q, %d", tc.host, tc.port, got, def, tc.want, tc.def)
		}
		for _, e := range got {
			if _, err := AppendNetworkAllow(filepath.Join(t.TempDir(), "p.toml"), e, ""); err != nil {
				t.Errorf("proposal %q does not go into a file: %v", e, err)
			}
		}
	}
}

// hostsFor is the hosts a networked run of line gets under the policy
// file (its network_allow among them).
func hostsFor(t *testing.T, file, line string) []string {
	t.Helper()
	p, err := Load(Options{User: file, UserRequired: true, Home: tableEnv.Home})
	if err != nil {
		t.Fatalf("the file does not load: %v", err)
	}
	return p.Check(line, tableEnv).Hosts
}

// The entry goes where TOML takes it (a top-level key, before the first
// table), the file's own text stays, and the file then gives every
// networked run the host.
func TestAppendNetworkAllow(t *testing.T) {
	t.Parallel()
	const bare = "network_allow = [\"registry.evil.example\"]\n"
	for _, tc := range []struct {
		name, before, want string
	}{
		{"missing", "", "# allowed in the console\n" + bare},
		{"no tables", "# mine\n", "# mine\n\n# allowed in the console\n" + bare},
		{"no final newline", "network_deny = [\"10.0.0.0/8\"]", "network_deny = [\"10.0.0.0/8\"]\n\n# allowed in the console\n" + bare},
		{"before the first table and its comment", userPolicy, "# allowed in the console\n" + bare + "\n" + userPolicy},
		{"into an array on one line", "network_allow = [\"a.example\"] # mine\n[defaults]\nmutating = \"ask\"\n",
			"network_allow = [\"a.example\", \"registry.evil.example\"] # mine\n[defaults]\nmutating = \"ask\"\n"},
		{"into an empty array", "network_allow = []\n", "network_allow = [\"registry.evil.example\"]\n"},
		{"into a trailing comma", "network_allow = ['a.example',]\n", "network_allow = ['a.example', \"registry.evil.example\"]\n"},
		{"into a multi-line array", "network_allow = [\n  \"a.example\", # a\n  \"b.example\" # b\n]\n",
			"network_allow = [\n  \"a.example\", # a\n  \"b.example\",\n  \"registry.evil.example\" # b\n]\n"},
		{"into a multi-line array with a trailing comma", "network_allow = [\n\t\"a.example\",\n]\n",
			"network_allow = [\n\t\"a.example\",\n\t\"registry.evil.example\",\n]\n"},
		{"strings that look like the key", "project_secrets = [\"network_allow = [x]\", '''\n[defaults]''']\n[[rule]]\naction = \"allow\"\ncommand = \"network_allow *\"\n",
			"project_secrets = [\"network_allow = [x]\", '''\n[defaults]''']\n\n# allowed in the console\n" + bare + "\n[[rule]]\naction = \"allow\"\ncommand = \"network_allow *\"\n"},
		{"CRLF", "# mine\r\n[defaults]\r\nmutating = \"ask\"\r\n", "# allowed in the console\r\nnetwork_allow = [\"registry.evil.example\"]\r\n\r\n# mine\r\n[defaults]\r\nmutating = \"ask\"\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "sub", "policy.toml")
			if tc.before != "" {
				if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, []byte(tc.before), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.before != "" {
				if h := hostsFor(t, file, "curl https://elsewhere.example/x"); slices.Contains(h, "registry.evil.example") {
					t.Fatal("the host is allowed before it was added")
				}
			}
			text, err := NetworkAllowText(file, "registry.evil.example", "allowed in the console")
			if err != nil {
				t.Fatal(err)
			}
			added, err := AppendNetworkAllow(file, "registry.evil.example", "allowed in the console")
			if err != nil || !added {
				t.Fatalf("AppendNetworkAllow: %v, %v", added, err)
			}
			got, _ := os.ReadFile(file)
			if string(got) != tc.want {
				t.Fatalf("the file reads\n%q\nwant\n%q", got, tc.want)
			}
			if !strings.Contains(string(got), text) {
				t.Errorf("the text shown first, %q, is not what was written", text)
			}
			// Any networked run now reaches it, in any project.
			if h := hostsFor(t, file, "curl https://elsewhere.example/x"); !slices.Contains(h, "registry.evil.example") {
				t.Errorf("a later networked run's hosts %q lack the host", h)
			}
			// A second time changes nothing.
			if added, err := AppendNetworkAllow(file, "registry.evil.example", "again"); err != nil || added {
				t.Errorf("added again: %v, %v", added, err)
			}
			if again, _ := os.ReadFile(file); string(again) != string(got) {
				t.Error("the second add changed the file")
			}
			if tc.before != "" {
				if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o644 {
					t.Errorf("mode %v, want the file's own", fi.Mode().Perm())
				}
			}
		})
	}
}

// A file that does not load, a link, a bad entry: nothing is written, and
// the error says why.
func TestAppendNetworkAllowRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.toml")
	const bad = "network_allow = [\"a.example\"\n[defaults]\n"
	if err := os.WriteFile(broken, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := AppendNetworkAllow(broken, "registry.evil.example", "")
	var le *LoadError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "not added") {
		t.Errorf("a broken file: %v, want a LoadError saying the host was not added", err)
	}
	if got, _ := os.ReadFile(broken); string(got) != bad {
		t.Error("the broken file changed")
	}
	link := filepath.Join(dir, "link.toml")
	if err := os.Symlink(broken, link); err != nil {
		t.Fatal(err)
	}
	if _, err := AppendNetworkAllow(link, "registry.evil.example", ""); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a link: %v", err)
	}
	for _, e := range []string{"", "a b", "evil.example:99999", "*.*.example"} {
		if _, err := AppendNetworkAllow(filepath.Join(dir, "p.toml"), e, ""); err == nil {
			t.Errorf("entry %q was taken", e)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "p.toml")); err == nil {
		t.Error("a refused entry created the file")
	}
}

// A comment cannot end its line: whatever the command that asked holds,
// the file loads with exactly the one entry more.
func TestAppendNetworkAllowHostileComment(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "p.toml")
	if _, err := AppendNetworkAllow(file, "a.example", "approved \"x\"\nnetwork_allow = [\"*.example\"]\n\x1b[2J\u202e"); err != nil {
		t.Fatal(err)
	}
	if h := hostsFor(t, file, "curl https://b.example/"); slices.Contains(h, "*.example") || !slices.Contains(h, "a.example") {
		t.Errorf("hosts %q", h)
	}
}

// Whatever a policy file holds, adding a host never panics, and what is
// written loads with the host in network_allow.
func FuzzAppendNetworkAllow(f *testing.F) {
	for _, s := range []string{"", userPolicy, "network_allow = [\n'a.example', # x\n]\n", "a = \"\"\"\n[x]\\\"\"\"\"\n[t]\n",
		"network_allow = [[\"x\"]]", "k = {a = [1, 2], b = 'c'}\n", "\"network_allow\" = []\n", "network_allow = \"x\"\n", "a = \"\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		file := filepath.Join(t.TempDir(), "p.toml")
		if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		_, _ = NetworkAllowText(file, "fuzz.example", "c")
		if _, err := AppendNetworkAllow(file, "fuzz.example", "c"); err != nil {
			return
		}
		p, err := Load(Options{User: file, UserRequired: true})
		if err != nil {
			t.Fatalf("written file does not load: %v", err)
		}
		if !slices.Contains(fileAllows(p, file), "fuzz.example") {
			t.Fatalf("written file lacks the host:\n%s", src)
		}
	})
}
