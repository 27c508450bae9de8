package setup

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// tree lists the files and directories under dir (relative), but the
// sluice program testOptions puts in bin/.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." || rel == "bin" || strings.HasPrefix(rel, "bin"+string(filepath.Separator)) {
			return nil
		}
		if d.IsDir() {
			rel += "/"
		}
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// TestRoundTripFreshHome: from a fresh HOME, install then uninstall
// leaves nothing behind (no file, no {} file, no directory), for each
// agent with and without the MCP server, for the user and for a
// project; uninstall in a fresh HOME creates nothing (it made
// ~/.claude.json).
func TestRoundTripFreshHome(t *testing.T) {
	for _, agent := range Agents {
		for _, mcp := range []bool{false, true} {
			for _, project := range []bool{false, true} {
				if project && agent == "codex" {
					continue // Codex has no project install
				}
				name := agent
				if mcp {
					name += "+mcp"
				}
				if project {
					name += "+project"
				}
				t.Run(name, func(t *testing.T) {
					opt := testOptions(t)
					opt.MCP = mcp
					if project {
						opt.Project = filepath.Join(opt.Home, "src", "shop")
						if err := os.MkdirAll(opt.Project, 0o755); err != nil {
							t.Fatal(err)
						}
					}
					opt.Cwd = opt.Project
					before := tree(t, opt.Home)
					p, err := Uninstall(agent, opt)
					if err != nil || !p.Empty() {
						t.Fatalf("uninstall before any install: %v\n%s", err, p.Diff())
					}
					p, err = Install(agent, opt)
					apply(t, p, err)
					if len(p.Changes) == 0 {
						t.Fatal("install wrote nothing")
					}
					p, err = Uninstall(agent, opt)
					apply(t, p, err)
					if got := tree(t, opt.Home); strings.Join(got, " ") != strings.Join(before, " ") {
						t.Fatalf("left behind: %q (before install: %q)\n%s", got, before, p.Diff())
					}
				})
			}
		}
	}
}

// copyTree copies testdata/home/NAME into home.
func copyTree(t *testing.T, name, home string) map[string]string {
	t.Helper()
	src := filepath.Join("testdata", "home", name)
	files := map[string]string{}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[rel] = string(data)
		write(t, filepath.Join(home, rel), string(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// checkFiles compares the files in home with want, byte for byte.
func checkFiles(t *testing.T, home string, want map[string]string, during string) {
	t.Helper()
	for rel, w := range want {
		got, err := os.ReadFile(filepath.Join(home, rel))
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		if string(got) != w {
			t.Errorf("%s after uninstall is not as it was (%d bytes, was %d):\n%s\n--- was:\n%s\n--- during:\n%s", rel, len(got), len(w), got, w, during)
		}
	}
}

// TestRoundTripKeepsPersonsFiles: a HOME with the person's own settings,
// written the way each agent writes them (Claude Code and Gemini CLI:
// two spaces and no final newline, Gemini's with comments; Codex: TOML
// with comments, serde's JSON) or by hand (four spaces, one-line
// arrays): install adds sluice's members where they go, in the file's
// own layout, and uninstall gives back every file byte for byte. The
// backups install and uninstall make are all else that is left.
func TestRoundTripKeepsPersonsFiles(t *testing.T) {
	for _, tc := range []struct{ fixture, agent string }{
		{"claude", "claude"}, {"claude-hand", "claude"}, {"codex", "codex"}, {"gemini", "gemini"},
	} {
		for _, mcp := range []bool{false, true} {
			t.Run(tc.fixture+map[bool]string{true: "+mcp"}[mcp], func(t *testing.T) {
				opt := testOptions(t)
				opt.MCP = mcp
				want := copyTree(t, tc.fixture, opt.Home)
				p, err := Install(tc.agent, opt)
				apply(t, p, err)
				if f := finding(t, opt, tc.agent); !f.Configured || len(f.Problems) > 0 {
					t.Fatalf("after install: configured %v, %v\n%s", f.Configured, f.Problems, p.Diff())
				}
				for _, c := range p.Changes {
					if !c.Existed {
						continue
					}
					// Only lines are added: the person's own lines are
					// all there, in their order.
					if !subsequence(lines(string(c.Before)), lines(string(c.After))) {
						t.Errorf("install changed the person's own lines in %s:\n%s", c.Path, p.Diff())
					}
				}
				during := p.Diff()
				p, err = Uninstall(tc.agent, opt)
				apply(t, p, err)
				checkFiles(t, opt.Home, want, during)
				for _, f := range tree(t, opt.Home) {
					if _, ok := want[f]; !ok && !strings.HasSuffix(f, "/") && !strings.Contains(f, ".sluice-backup-") {
						t.Errorf("left behind: %s", f)
					}
				}
			})
		}
	}
}

func lines(s string) []string { return strings.Split(s, "\n") }

// subsequence reports whether every line of a is in b, in order: as it
// was, or with a comma after it (JSON needs one after a member that is
// no longer last), or with elements added before its closing bracket (a
// list on one line stays on one line).
func subsequence(a, b []string) bool {
	i := 0
	for _, l := range b {
		if i < len(a) && kept(a[i], l) {
			i++
		}
	}
	return i == len(a)
}

func kept(old, now string) bool {
	if now == old || now == old+"," {
		return true
	}
	j := strings.LastIndexAny(old, "]}")
	return j > 0 && strings.HasPrefix(now, old[:j]) && strings.HasSuffix(now, old[j:])
}

// TestUninstallAfterAgentRewrote: the agents rewrite their own files
// between an install and an uninstall (Claude Code its ~/.claude.json,
// Codex a table in config.toml, written before the last comment, so
// inside sluice's block; Gemini CLI a setting): uninstall takes out
// sluice's members and tables only, and keeps what the agent wrote.
func TestUninstallAfterAgentRewrote(t *testing.T) {
	for _, tc := range []struct {
		fixture, agent, file string
		rewrite              func(string) string
	}{
		{"claude", "claude", ".claude.json", func(s string) string {
			s = strings.Replace(s, `"numStartups": 14,`, `"numStartups": 15,`, 1)
			return strings.Replace(s, "\n  \"tipsHistory\"", "\n  \"lastReleaseNotesSeen\": \"2.1.330\",\n  \"tipsHistory\"", 1)
		}},
		{"codex", "codex", ".codex/config.toml", func(s string) string {
			return strings.Replace(s, codexEnd, "\n[projects.\"/home/you/src/cli\"]\ntrust_level = \"trusted\"\n"+codexEnd, 1)
		}},
		{"gemini", "gemini", ".gemini/settings.json", func(s string) string {
			return strings.Replace(s, `"vimMode": true`, `"vimMode": false`, 1)
		}},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			opt := testOptions(t)
			opt.MCP = true
			want := copyTree(t, tc.fixture, opt.Home)
			p, err := Install(tc.agent, opt)
			apply(t, p, err)
			path := filepath.Join(opt.Home, tc.file)
			installed := readString(t, path)
			rewritten := tc.rewrite(installed)
			if rewritten == installed {
				t.Fatalf("the rewrite changed nothing in\n%s", installed)
			}
			write(t, path, rewritten)
			want[tc.file] = tc.rewrite(want[tc.file])
			if tc.agent == "codex" {
				// What Codex wrote stays where it was: after the
				// person's text and the newline before the block.
				want[tc.file] += "\n[projects.\"/home/you/src/cli\"]\ntrust_level = \"trusted\"\n"
			}
			p, err = Uninstall(tc.agent, opt)
			apply(t, p, err)
			checkFiles(t, opt.Home, want, rewritten)
		})
	}
}

// TestInstallTwiceKeepsPlace: a second install changes nothing, and one
// with another wait changes sluice's entry where it is (not moved after
// a hook the person added since).
func TestInstallTwiceKeepsPlace(t *testing.T) {
	opt := testOptions(t)
	p, err := Install("claude", opt)
	apply(t, p, err)
	path := filepath.Join(opt.Home, ".claude", "settings.json")
	s := readString(t, path)
	tail := "      }\n    ]\n  }\n}\n"
	if !strings.HasSuffix(s, tail) {
		t.Fatalf("install wrote\n%s", s)
	}
	s = strings.TrimSuffix(s, tail) + "      },\n      {\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"~/bin/log-bash\"}]}\n    ]\n  }\n}\n"
	write(t, path, s)
	if _, err := parseDoc([]byte(s), strictJSON); err != nil {
		t.Fatalf("the test's edit: %v\n%s", err, s)
	}
	if again, err := Install("claude", opt); err != nil || !again.Empty() {
		t.Fatalf("install twice: %v\n%s", err, again.Diff())
	}
	opt.Wait = 50 * time.Second
	p, err = Install("claude", opt)
	apply(t, p, err)
	got := readString(t, path)
	if strings.Index(got, "hook claude --wait 50s") > strings.Index(got, "log-bash") || strings.Count(got, "hook claude") != 1 {
		t.Fatalf("sluice's entry moved or doubled:\n%s", got)
	}
}

// TestRoundTripLayouts: whatever the layout of the person's settings
// file (one line, tabs, a final newline or none, comments where the
// agent reads them), uninstall after install gives it back byte for
// byte; a file with nothing in it but sluice's goes. An empty list or
// object sluice's members went into and left empty goes too: nothing
// tells it from one sluice made.
func TestRoundTripLayouts(t *testing.T) {
	const removed = "(removed)"
	for _, tc := range []struct {
		agent, file, before, after string
	}{
		{"claude", ".claude/settings.json", `{"model":"opus"}`, ""},
		{"claude", ".claude/settings.json", "{\n\t\"model\": \"opus\",\n\t\"env\": {}\n}\n", ""},
		{"claude", ".claude/settings.json", "{\n\t\"model\": \"opus\",\n\t\"hooks\": {}\n}\n", "{\n\t\"model\": \"opus\"\n}\n"},
		{"claude", ".claude/settings.json", "{ \"permissions\": { \"allow\": [] }, \"hooks\": { \"PreToolUse\": [] } }\n", removed},
		{"claude", ".claude/settings.json", "{}", removed},
		{"claude", ".claude/settings.json", "\n{\n}\n\n", removed},
		{"gemini", ".gemini/settings.json", "{\n  // nothing yet\n}\n", ""},
		{"gemini", ".gemini/settings.json", "{\n  \"general\": {\"vimMode\": true} // mine\n}", ""},
		{"codex", ".codex/config.toml", "", removed},
		{"codex", ".codex/config.toml", `model = "gpt-5.5"`, ""},
		{"codex", ".codex/config.toml", "model = \"gpt-5.5\"\n", ""},
		{"codex", ".codex/config.toml", "model = \"gpt-5.5\"\n\n\n", ""},
		{"codex", ".codex/config.toml", "# nothing here yet\n", ""},
		{"codex", ".codex/hooks.json", "{\n  \"hooks\": {\n    \"Stop\": []\n  }\n}", ""},
		{"codex", ".codex/hooks.json", "{\n  \"hooks\": {}\n}", removed},
	} {
		t.Run(tc.agent+" "+strings.ReplaceAll(tc.before, "\n", `\n`), func(t *testing.T) {
			opt := testOptions(t)
			opt.MCP = true
			path := filepath.Join(opt.Home, tc.file)
			write(t, path, tc.before)
			p, err := Install(tc.agent, opt)
			apply(t, p, err)
			during := p.Diff()
			p, err = Uninstall(tc.agent, opt)
			apply(t, p, err)
			want := tc.after
			if want == "" {
				want = tc.before
			}
			got, err := os.ReadFile(path)
			switch {
			case want == removed && err == nil:
				t.Errorf("a file with nothing of the person's in it stays:\n%q", got)
			case want == removed:
			case err != nil:
				t.Errorf("%v\n%s", err, during)
			case string(got) != want:
				t.Errorf("after uninstall:\n%q\nwant\n%q\n--- during:\n%s", got, want, during)
			}
		})
	}
}

// TestUninstallWithoutSluice: uninstall where sluice never was changes
// nothing, not even an empty file or a {} it could remove.
func TestUninstallWithoutSluice(t *testing.T) {
	opt := testOptions(t)
	opt.Cwd = filepath.Join(opt.Home, "src", "shop")
	copyTree(t, "claude", opt.Home)
	copyTree(t, "gemini", opt.Home)
	write(t, filepath.Join(opt.Home, ".codex", "hooks.json"), "")
	write(t, filepath.Join(opt.Home, ".codex", "config.toml"), "model = \"gpt-5.5\"\n")
	write(t, filepath.Join(opt.Cwd, ".claude", "settings.json"), "{}")
	for _, agent := range Agents {
		if p, err := Uninstall(agent, opt); err != nil || !p.Empty() {
			t.Errorf("%s: %v\n%s", agent, err, p.Diff())
		}
	}
}
