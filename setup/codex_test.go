package setup

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCodexHookHash: the hash Codex 0.169.0 itself reported
// (codex app-server, hooks/list, currentHash) for this hook, and with a
// trusted_hash of that value Codex listed the hook "trusted".
func TestCodexHookHash(t *testing.T) {
	got := CodexHookHash("^(Bash|apply_patch)$", "/usr/bin/sluice hook codex --wait 1m50s", 120)
	if want := "sha256:3279e2e3666d1e89565597ae3da9d5293db51e62d38de80df0921fe5a094ecde"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if CodexHookHash("^(Bash|apply_patch)$", "/usr/bin/sluice hook codex --wait 1m51s", 120) == got {
		t.Fatal("an edited command hashes the same")
	}
}

// TestCodexConfigBlock: sluice's block in config.toml is replaced, not
// repeated, and taken out whole; the person's own tables stay.
func TestCodexConfigBlock(t *testing.T) {
	opt := testOptions(t)
	opt.MCP = true
	cfg := filepath.Join(opt.Home, ".codex", "config.toml")
	write(t, cfg, "model = \"gpt-5-codex\"\n\n[projects.\"/src/shop\"]\ntrust_level = \"trusted\"\n")
	p, err := Install("codex", opt)
	apply(t, p, err)
	opt.Wait *= 2
	p, err = Install("codex", opt)
	apply(t, p, err)
	got := readString(t, cfg)
	if strings.Count(got, codexBegin) != 1 || !strings.Contains(got, "trust_level = \"trusted\"") || !strings.Contains(got, "env_vars = [\"SLUICE_SPOOL\"") {
		t.Fatalf("config.toml after two installs:\n%s", got)
	}
	p, err = Uninstall("codex", opt)
	apply(t, p, err)
	if got := readString(t, cfg); got != "model = \"gpt-5-codex\"\n\n[projects.\"/src/shop\"]\ntrust_level = \"trusted\"\n" {
		t.Fatalf("config.toml after uninstall:\n%q", got)
	}
}

func codexFailOpen() []failOpenCase {
	hooksJSON := func(matcher, command string) setupFn {
		return func(t *testing.T, opt Options) {
			write(t, filepath.Join(opt.Home, ".codex", "hooks.json"),
				`{"hooks":{"PreToolUse":[{"matcher":`+quote(matcher)+`,"hooks":[{"type":"command","command":`+quote(strings.ReplaceAll(command, "SLUICE", opt.Sluice))+`,"timeout":120}]}]}}`)
		}
	}
	trusted := func(matcher, command string) setupFn {
		return func(t *testing.T, opt Options) {
			hooksJSON(matcher, command)(t, opt)
			cmd := strings.ReplaceAll(command, "SLUICE", opt.Sluice)
			key := codexKey(filepath.Join(opt.Home, ".codex", "hooks.json"), 0, 0)
			write(t, filepath.Join(opt.Home, ".codex", "config.toml"),
				"[hooks.state."+tomlString(key)+"]\ntrusted_hash = "+tomlString(CodexHookHash(matcher, cmd, 120))+"\n")
		}
	}
	return []failOpenCase{
		{"codex: hook never trusted", "codex", hooksJSON(codexMatcher, "SLUICE hook codex --wait 1m50s"), "has not been told to trust", FailOpen},
		{"codex: hook edited after it was trusted", "codex", func(t *testing.T, opt Options) {
			trusted(codexMatcher, "SLUICE hook codex --wait 1m50s")(t, opt)
			hooksJSON(codexMatcher, "SLUICE hook codex --wait 1m")(t, opt)
		}, "changed since it was trusted", FailOpen},
		{"codex: fallback ask", "codex", trusted(codexMatcher, "SLUICE hook codex --wait 1m50s --fallback ask"), "Codex runs the tool on ask", FailOpen},
		{"codex: matcher leaves out apply_patch", "codex", trusted("^Bash$", "SLUICE hook codex --wait 1m50s"), "leaves out Bash or apply_patch", FailOpen},
		{"codex: timeout under the wait", "codex", trusted(codexMatcher, "SLUICE hook codex --wait 5m"), "the agent kills the hook after 2m0s", FailOpen},
	}
}
