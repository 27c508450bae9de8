package app

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/exec"
)

func TestParseConfig(t *testing.T) {
	t.Parallel()
	c, err := parseConfig([]byte("max_auto = 2\nkill_grace = \"3s\"\nextra_secret_patterns = [\"MY_*\"]\n[console]\ngrace = \"600ms\"\nbell = false\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.maxAuto() != 2 || c.KillGrace != 3*time.Second || c.Console.Grace != 600*time.Millisecond || *c.Console.Bell {
		t.Errorf("decoded %+v", c)
	}
	pats := c.Secrets()
	if pats[len(pats)-1] != "MY_*" || len(pats) < 10 {
		t.Errorf("extra patterns not added to the defaults: %v", pats)
	}
	empty, err := parseConfig([]byte("secret_patterns = []\n"))
	if err != nil || len(empty.Secrets()) != 0 || empty.Secrets() == nil {
		t.Errorf("an empty secret_patterns must strip nothing: %v %v", empty.Secrets(), err)
	}
	for _, bad := range []string{"max_auto = 999", "MAX_AUTO = 2", "[console]\ngrace = \"10ms\"", "secret_patterns = [\"\"]", "default_timeout = \"-1s\"", "max_auto = \"four\""} {
		if _, err := parseConfig([]byte(bad)); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

// TestParseConfigEnvAllow: env_allow takes names and PREFIX_* globs,
// reaches the runner, and refuses anything else with an error that names
// the setting and the entry.
func TestParseConfigEnvAllow(t *testing.T) {
	t.Parallel()
	c, err := parseConfig([]byte("env_allow = [\"DATABASE_URL\", \"MY_*\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r := c.runner("/spool"); !slices.Equal(r.EnvAllow, []string{"DATABASE_URL", "MY_*"}) {
		t.Errorf("the runner's allow-list: %q", r.EnvAllow)
	}
	for _, tc := range []struct{ toml, want string }{
		{`env_allow = ["*"]`, `env_allow: "*" would pass the whole environment`},
		{`env_allow = [""]`, `env_allow: empty name`},
		{`env_allow = ["OK", "DATABASE-URL"]`, `env_allow: "DATABASE-URL" is not a variable name or a PREFIX_* glob`},
		{`env_allow = ["A*B"]`, `env_allow: "A*B" is not`},
		{`env_allow = ["PATH="]`, `env_allow: "PATH=" is not`},
		{`env_allow = "DATABASE_URL"`, `env_allow`},
		{`Env_Allow = ["X"]`, `unknown key Env_Allow`},
	} {
		if _, err := parseConfig([]byte(tc.toml)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error holding %q", tc.toml, err, tc.want)
		}
	}
}

func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{"", "max_auto = 4\n", "[console]\ntheme = \"dark\"\n", "secret_patterns = [\"[\"]", "default_timeout = \"1h\"", "x = 1", "[[console]]",
		"sandbox = \"require\"\nmax_procs = 64\n", "env_allow = [\"A_*\", \"B\"]", "sandbox = \"Off\"", "sandbox_hidden = [\"~/.ssh\", \"/etc/shadow\"]\nextra_sandbox_writable = [\"relative\"]", "max_procs = 3"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parseConfig(data)
		if err != nil {
			return
		}
		if c.MaxAuto < 0 || c.MaxAuto > MaxMaxAuto || c.DefaultTimeout < 0 || c.KillGrace < 0 {
			t.Fatalf("out of range config accepted: %+v", c)
		}
		if c.MaxProcs != 0 && (c.MaxProcs < 16 || c.MaxProcs > maxMaxProcs) {
			t.Fatalf("max_procs %d accepted", c.MaxProcs)
		}
		switch c.Sandbox {
		case "", "prefer", "require", "off":
		default:
			t.Fatalf("sandbox %q accepted", c.Sandbox)
		}
		_ = c.Secrets()
		if err := exec.CheckEnvAllow(c.EnvAllow); err != nil {
			t.Fatalf("env_allow %q accepted: %v", c.EnvAllow, err)
		}
		conf := c.Confine("/spool", "/policy.toml")
		for _, p := range append(append([]string{}, conf.Hidden...), conf.Writable...) {
			if !filepath.IsAbs(p) {
				t.Fatalf("a relative sandbox path got through: %q", p)
			}
		}
	})
}

// TestConfigUnknownKeyLine: an unknown key is named with its line and the
// known key nearest to it, wherever and however it is written.
func TestConfigUnknownKeyLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ toml, want string }{
		{"max_auto = 2\n\n  default_timout = \"5m\" # soon\n", `line 3: unknown key default_timout; did you mean default_timeout? (known: max_auto, `},
		{"[console]\nbell = false\n\"thme\" = \"dark\"\n", `line 3: unknown key console.thme; did you mean console.theme? (known: `},
		{"max_auto = 2\n[consol]\ntheme = \"dark\"\n", `line 2: unknown key consol; did you mean [console]? (known: `},
		{"console.grace = \"1s\"\nconsole.thme = \"x\"\n", `line 2: unknown key console.thme; did you mean console.theme?`},
		{"console = { bell = true, thme = \"x\" }\n", `line 1: unknown key console.thme; did you mean console.theme?`},
		{"Max_Auto = 2\n", `line 1: unknown key Max_Auto; did you mean max_auto? (known: `},
		{"env_allow = [\n  \"A\",\n]\nzzz = 1\n", `line 4: unknown key zzz (known: `},
	} {
		_, err := parseConfig([]byte(tc.toml))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: %v\nwant an error starting %q", tc.toml, err, tc.want)
		}
	}
}

// TestConfigWebKeys: the web keys become sluice-web's flags, before the
// person's own; a URL that is not one is refused with what to write.
func TestConfigWebKeys(t *testing.T) {
	c, err := parseConfig([]byte("web_url = \"https://laptop.example.ts.net\"\nnotify_url = \"https://ntfy.sh/t\"\nweb_require_passkey = true\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(c.WebArgs(), " ")
	if want := "--url=https://laptop.example.ts.net --notify-url=https://ntfy.sh/t --require-passkey"; got != want {
		t.Errorf("WebArgs %q, want %q", got, want)
	}
	if c, err := parseConfig(nil); err != nil || len(c.WebArgs()) != 0 {
		t.Errorf("no keys: %v, %v", c.WebArgs(), err)
	}
	for _, bad := range []string{`web_url = "laptop:8787"`, `notify_url = "ftp://x/y"`, `web_url = "https://"`} {
		if _, err := parseConfig([]byte(bad)); err == nil || !strings.Contains(err.Error(), "want an http or https URL") {
			t.Errorf("%s: %v, want the URL refused", bad, err)
		}
	}
}

// A configuration file that sets nothing (empty, or blank lines only) is
// the defaults, named by its path; one that sets anything is decoded and
// checked as ever.
func TestLoadConfigBlank(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for i, text := range []string{"", "\n  \n\t\n", "max_auto = 99\n", "\n\nmax_auto = 3\n"} {
		p := filepath.Join(dir, strconv.Itoa(i)+".toml")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := LoadConfig(p)
		switch i {
		case 0, 1:
			if err != nil || !reflect.DeepEqual(c, &Config{Path: p}) {
				t.Errorf("%q: got %+v, %v; want the defaults from %s", text, c, err, p)
			}
		case 2:
			if err == nil || !strings.Contains(err.Error(), "max_auto = 99") {
				t.Errorf("%q: got %+v, %v; want max_auto refused", text, c, err)
			}
		case 3:
			if err != nil || c.maxAuto() != 3 || c.Path != p {
				t.Errorf("%q: got %+v, %v; want max_auto 3 from %s", text, c, err, p)
			}
		}
	}
}
