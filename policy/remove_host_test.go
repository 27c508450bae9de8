package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// What 'A' in the console added comes out again: the entry (matched as
// the proxy reads it), and with the last one the statement and the
// comment the console wrote; the rest of the file stays byte for byte,
// and later networked runs no longer get the host.
func TestRemoveNetworkAllow(t *testing.T) {
	t.Parallel()
	const console = "# allowed in the console: \"npm install\" wanted registry.evil.example:443\n"
	for _, tc := range []struct {
		name, before, entry, want, removed string
	}{
		{"what A wrote before the first table", console + "network_allow = [\"registry.evil.example\"]\n\n" + userPolicy, "registry.evil.example",
			userPolicy, console + "network_allow = [\"registry.evil.example\"]\n"},
		{"what A wrote at the end", "# mine\n\n" + console + "network_allow = [\"registry.evil.example\"]\n", "Registry.Evil.Example.",
			"# mine\n", console + "network_allow = [\"registry.evil.example\"]\n"},
		{"a person's comment above stays", "# mine, about the network\nnetwork_allow = ['registry.evil.example'] # why\n[defaults]\nmutating = \"ask\"\n", "registry.evil.example",
			"# mine, about the network\n[defaults]\nmutating = \"ask\"\n", "network_allow = ['registry.evil.example'] # why\n"},
		{"first of a line", "network_allow = [\"registry.evil.example\", \"a.example\"] # mine\n[defaults]\nmutating = \"ask\"\n", "registry.evil.example",
			"network_allow = [\"a.example\"] # mine\n[defaults]\nmutating = \"ask\"\n", "\"registry.evil.example\""},
		{"last of a line", "network_allow = [\"a.example\", \"registry.evil.example\"]\n", "registry.evil.example",
			"network_allow = [\"a.example\"]\n", "\"registry.evil.example\""},
		{"a line of its own, with its comment", "network_allow = [\n  \"a.example\", # a\n  \"registry.evil.example\", # for npm\n  \"b.example\",\n]\n", "registry.evil.example",
			"network_allow = [\n  \"a.example\", # a\n  \"b.example\",\n]\n", "\"registry.evil.example\", # for npm"},
		{"a port", "network_allow = [\"a.example\", \"db.example:5432\"]\n", "DB.example:5432",
			"network_allow = [\"a.example\"]\n", "\"db.example:5432\""},
		{"CRLF", console[:len(console)-1] + "\r\nnetwork_allow = [\"registry.evil.example\"]\r\n\r\n# mine\r\n[defaults]\r\nmutating = \"ask\"\r\n", "registry.evil.example",
			"# mine\r\n[defaults]\r\nmutating = \"ask\"\r\n", console[:len(console)-1] + "\r\nnetwork_allow = [\"registry.evil.example\"]\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "policy.toml")
			if err := os.WriteFile(file, []byte(tc.before), 0o640); err != nil {
				t.Fatal(err)
			}
			if h := hostsFor(t, file, "curl https://elsewhere.example/x"); !slices.Contains(h, strings.ToLower(strings.TrimSuffix(tc.entry, "."))) {
				t.Fatalf("before: the run's hosts %q lack %s", h, tc.entry)
			}
			removed, err := RemoveNetworkAllow(file, tc.entry)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(file)
			if string(got) != tc.want {
				t.Errorf("the file reads\n%q\nwant\n%q", got, tc.want)
			}
			if removed != tc.removed {
				t.Errorf("removed %q, want %q", removed, tc.removed)
			}
			if h := hostsFor(t, file, "curl https://elsewhere.example/x"); slices.Contains(h, strings.ToLower(strings.TrimSuffix(tc.entry, "."))) {
				t.Errorf("after: a networked run still gets %s (%q)", tc.entry, h)
			}
			if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o640 {
				t.Errorf("mode %v, want the file's own", fi.Mode().Perm())
			}
		})
	}
}

// The console's 'A' and this undo each other: a person's file comes back
// as it was.
func TestRemoveNetworkAllowUndoesAppend(t *testing.T) {
	t.Parallel()
	for _, before := range []string{
		"",
		userPolicy,
		"# mine\n",
		"network_allow = [\"a.example\"] # mine\n[defaults]\nmutating = \"ask\"\n",
		"network_allow = [\n  \"a.example\",\n]\n",
	} {
		file := filepath.Join(t.TempDir(), "policy.toml")
		if err := os.WriteFile(file, []byte(before), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := AppendNetworkAllow(file, "registry.evil.example", `allowed in the console: "npm install" wanted registry.evil.example:443`); err != nil {
			t.Fatal(err)
		}
		if _, err := RemoveNetworkAllow(file, "registry.evil.example"); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(file); string(got) != before {
			t.Errorf("after A and revoke the file reads\n%q\nwant it as it was\n%q", got, before)
		}
	}
}

// What is not there, or comes from elsewhere, is refused with the reason,
// and the file is left as it was.
func TestRemoveNetworkAllowRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name, before, entry, want string
	}{
		{"not there", "network_allow = [\"a.example\", \"b.example:8443\"]\n", "c.example", `has no "c.example"; it holds a.example, b.example:8443`},
		{"a wider entry is not a narrower one", "network_allow = [\"*.example\"]\n", "a.example", `has no "a.example"; it holds *.example`},
		{"none at all", userPolicy, "a.example", "has no network_allow entries (config.toml's network_allow is edited by hand)"},
		{"not a host", "network_allow = [\"a.example\"]\n", "a b", `network_allow "a b"`},
		{"a file that does not load", "network_allow = [\"a.example\"\n", "a.example", "policy.toml"},
		{"a deny entry is not an allow one", "network_deny = [\"a.example\"]\n", "a.example", "has no network_allow entries"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"), "policy.toml")
			if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(tc.before), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := RemoveNetworkAllow(file, tc.entry)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
			if got, _ := os.ReadFile(file); string(got) != tc.before {
				t.Errorf("the file changed: %q", got)
			}
		})
	}
	if _, err := RemoveNetworkAllow(filepath.Join(dir, "missing.toml"), "a.example"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("a missing file: %v", err)
	}
}

// HostRules names where each entry in force comes from.
func TestHostRules(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "policy.toml")
	if err := os.WriteFile(file, []byte("# mine\nnetwork_allow = [\"a.example\", \"*.b.example\"]\nnetwork_deny = [\"10.0.0.0/8\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := Load(Options{User: file, UserRequired: true, NetworkAllow: []string{"proxy.corp.example:3128"}})
	if err != nil {
		t.Fatal(err)
	}
	got := p.HostRules()
	want := []HostRule{
		{"network_allow", "proxy.corp.example:3128", "config.toml"},
		{"network_allow", "a.example", file + ":2"},
		{"network_allow", "*.b.example", file + ":2"},
		{"network_deny", "10.0.0.0/8", file + ":3"},
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("HostRules lacks %+v; it has %+v", w, got)
		}
	}
}

// Whatever a policy file holds, taking a host out never panics, and what
// is written loads without it (the entry is appended first, so that there
// is one to take out).
func FuzzRemoveNetworkAllow(f *testing.F) {
	for _, s := range []string{"", userPolicy, "network_allow = [\n'a.example', # x\n]\n", "network_allow = ['fuzz.example','fuzz.example']\n",
		"network_allow = [\"a.example\" ,\n\"b.example\"]\n", "k = {a = [1, 2], b = 'c'}\n", "network_allow = [\n\"a.example\"\n, 'b.example'\n]\n",
		"# allowed in the console\nnetwork_allow = []\n\n\n[defaults]\n", "network_allow = [ # c\n]\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		file := filepath.Join(t.TempDir(), "p.toml")
		if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		_, _ = RemoveNetworkAllow(file, "a.example")
		if _, err := AppendNetworkAllow(file, "fuzz.example", "allowed in the console"); err != nil {
			return
		}
		if _, err := RemoveNetworkAllow(file, "fuzz.example"); err != nil {
			return
		}
		p, err := Load(Options{User: file, UserRequired: true})
		if err != nil {
			t.Fatalf("written file does not load: %v", err)
		}
		if slices.Contains(fileAllows(p, file), "fuzz.example") {
			t.Fatalf("the host is still there:\n%q", src)
		}
	})
}
