package app

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestParseConfigNetwork: the network keys decode into Config, the ask
// timeout defaults to 10 s, and each bad entry is refused with its line
// and what is wanted.
func TestParseConfigNetwork(t *testing.T) {
	t.Parallel()
	c, err := parseConfig([]byte("network_allow = [\"*.corp.example\", \"10.1.2.3:5432\", \"[fc00::/7]:443\"]\n" +
		"network_deny = [\"169.254.169.254\"]\nnetwork_upstream_proxy = \"http://u:p@proxy.corp:3128\"\nnetwork_ask_timeout = \"30s\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.NetworkAllow, []string{"*.corp.example", "10.1.2.3:5432", "[fc00::/7]:443"}) ||
		!slices.Equal(c.NetworkDeny, []string{"169.254.169.254"}) || c.NetworkUpstreamProxy != "http://u:p@proxy.corp:3128" ||
		c.AskTimeout() != 30*time.Second {
		t.Errorf("decoded %+v", c)
	}
	if d := (&Config{}).AskTimeout(); d != 10*time.Second {
		t.Errorf("default ask timeout %s", d)
	}
	for _, tc := range []struct{ toml, want string }{
		{"max_auto = 2\nnetwork_allow = [\"ok.example\", \"https://registry.npmjs.org/\"]", `line 2: network_allow: rule "https://registry.npmjs.org/"`},
		{"network_deny = [\"10.0.0.0/40\"]", `line 1: network_deny: rule "10.0.0.0/40": bad CIDR range (want a host, *.domain, host:port`},
		{"network_allow = [\"\"]", `network_allow: rule "": empty`},
		{"network_allow = \"x.example\"", "network_allow"},
		{"network_upstream_proxy = \"socks5://p:1080\"", `line 1: network_upstream_proxy = "socks5://p:1080": want http://host:port`},
		{"network_upstream_proxy = \"http://user:hunter2@p:3128/path\"", `network_upstream_proxy = "http://user:xxxxx@p:3128/path"`},
		{"network_ask_timeout = \"0s\"", "network_ask_timeout = 0s: must be between 1s and 10m0s"},
		{"network_ask_timeout = \"1h\"", "must be between 1s and 10m0s"},
		{"network_ask_timeout = 10", "network_ask_timeout"},
		{"network_alow = []", "unknown key network_alow; did you mean network_allow?"},
	} {
		_, err := parseConfig([]byte(tc.toml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error holding %q", tc.toml, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the error shows the password: %v", tc.toml, err)
		}
	}
}

// TestConfigHelpKeysKnown: every key 'sluice help config' shows is one
// config.toml takes.
func TestConfigHelpKeysKnown(t *testing.T) {
	t.Parallel()
	table, seen := "", 0
	for _, line := range strings.Split(ConfigHelp, "\n") {
		l := strings.TrimSpace(line)
		if strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]") {
			table = strings.Trim(l, "[]") + "."
			continue
		}
		if !strings.HasPrefix(line, "  ") || strings.HasPrefix(l, "#") {
			continue
		}
		key, _, ok := strings.Cut(l, " = ")
		if !ok || strings.ContainsAny(key, " #") {
			continue
		}
		seen++
		if !knownConfigKeys[table+key] {
			t.Errorf("help shows %s%s, which config.toml does not take", table, key)
		}
	}
	if seen < len(knownConfigKeys)-1 { // "console" is the table
		t.Errorf("help shows %d keys of %d", seen, len(knownConfigKeys)-1)
	}
}
