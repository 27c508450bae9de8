package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSinksAreNoWrites: writing /dev/null, the terminal or the command's
// own output streams, by whatever name, is no write outside the project:
// no reason says so and the risk stays the category's own (curl … -o
// /dev/null was "writes /dev/null, outside the project", risk high). The
// streams a line may have put a file on, and standard input, are judged
// by the name written, never by what the judge's own descriptors lead to.
func TestSinksAreNoWrites(t *testing.T) {
	t.Parallel()
	p := Default()
	for _, tt := range []struct {
		line string
		act  Action
		risk Risk
	}{
		{"curl -s https://example.com -o /dev/null", Ask, Medium},
		{"curl -s -o /dev/null -w '%{http_code}' https://example.com >& /dev/null", Ask, Medium},
		{"curl -sSo /dev/stdout https://example.com 2>/dev/stderr", Ask, Medium},
		{"wget -qO /dev/null https://example.com", Ask, Medium},
		{"echo x >& /dev/null", Allow, Low},
		{"echo x > /proc/self/fd/2", Allow, Low},
		{"ls >/dev/fd/1 2>/dev/tty", Allow, Low},
		{"ls | tee /dev/stderr", Allow, Low},
	} {
		v := p.Check(tt.line, tableEnv)
		if v.Action != tt.act || v.Risk != tt.risk || len(v.Grants) > 0 {
			t.Errorf("%q: %s risk %s grants %q, want %s risk %s and no grants: %s", tt.line, v.Action, v.Risk, v.Grants, tt.act, tt.risk, explain(v))
		}
		for _, r := range v.Reasons {
			if strings.Contains(r, "/dev/") || strings.Contains(r, "/proc/") || strings.Contains(r, "outside the project") {
				t.Errorf("%q: reason %q", tt.line, r)
			}
		}
	}
	// The streams reopen what the line put on them: judged, by the name
	// written (the judge's own fd 0 or 1 is /dev/null or a pipe, which
	// says nothing of the command's).
	for _, tt := range []struct{ line, name string }{
		{"echo x 1< notes.txt > /dev/stdout", "/dev/stdout"},
		{"sort < in.txt > /dev/stdin", "/dev/stdin"},
		{"echo x > /dev/fd/0 < notes.txt", "/dev/fd/0"},
		{"exec 3< notes.txt; echo x > /dev/fd/3", "/dev/fd/3"},
		{"cat notes.txt > /proc/self/fd/0", "/proc/self/fd/0"},
	} {
		v := p.Check(tt.line, tableEnv)
		want := "writes " + tt.name + ", which opens again whatever file that descriptor of the command holds"
		if v.Action != Ask || !slices.Contains(v.Reasons, want) || len(v.Grants) > 0 {
			t.Errorf("%q: %s %q grants %q, want ask with %q", tt.line, v.Action, v.Reasons, v.Grants, want)
		}
	}
}

// TestWritesOutsideAsk: with the home directory under /tmp (a fresh
// HOME made for a try), copying or moving a file into /tmp asks (it was
// denied: "destroys /tmp, which holds the home directory"), and names the
// target as a grant; what lands in the home directory or fills it, or
// destroys it, is still denied, with no grant.
func TestWritesOutsideAsk(t *testing.T) {
	t.Parallel()
	home := filepath.Join(os.TempDir(), "sluice-fresh-home")
	tmp, err := filepath.EvalSymlinks(os.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := loadIn(t, home, "", "")
	project := filepath.Join(home, "proj")
	env := Env{Cwd: project, Home: home, Roots: []string{project}}
	T := os.TempDir()
	for _, tt := range []struct {
		line   string
		grants []string
	}{
		{"cp file1.txt " + T + "/", []string{tmp}},
		{"mv file.txt " + T + "/", []string{tmp}},
		{"cp file1.txt " + T, []string{tmp}},
		{"cp -t " + T + " a.txt b.txt", []string{tmp}},
		{"mv -t " + T + " a.txt", []string{tmp}},
		{"cp notes.txt ~/", []string{home}},
		{"cp report.pdf ~/Documents/ && echo done > " + T + "/done.txt", []string{filepath.Join(home, "Documents"), filepath.Join(tmp, "done.txt")}},
		{"ln -s " + project + "/bin/tool " + T + "/", []string{tmp}},
	} {
		v := p.Check(tt.line, env)
		if v.Action != Ask || v.Category != Mutating || !slices.Equal(v.Grants, tt.grants) {
			t.Errorf("%q: %s %s grants %q, want ask mutating granting %q: %s", tt.line, v.Action, v.Category, v.Grants, tt.grants, explain(v))
		}
	}
	for _, tt := range []struct{ line, reason string }{
		{"cp .bashrc ~/", "writes " + home + "/.bashrc: "},
		{"cp .bashrc " + home + "/", "writes " + home + "/.bashrc: "},
		{"mv -t ~ .profile", "writes " + home + "/.profile: "},
		{"cp -r dotfiles/. ~/", "destroys " + home + ","},
		{"cp -rT dotfiles ~", "destroys " + home + ","},
		{"mv -T build " + T, "destroys " + filepath.Clean(T) + ","},
		{"cp -r sluice-fresh-home " + T + "/", "destroys " + filepath.Join(filepath.Clean(T), "sluice-fresh-home") + ","},
		{`cp "$f" ` + T + "/", "under a name known only when the line runs"},
		{"mv ~/.config " + T + "/cfg", "destroys " + home + "/.config,"},
		{"cp id.pub ~/.ssh/", "writes " + home + "/.ssh"},
	} {
		v := p.Check(tt.line, env)
		found := slices.ContainsFunc(v.Reasons, func(r string) bool { return strings.Contains(r, tt.reason) })
		if v.Action != Deny || !found || len(v.Grants) > 0 {
			t.Errorf("%q: %s %q grants %q, want deny saying %q and no grants", tt.line, v.Action, v.Reasons, v.Grants, tt.reason)
		}
	}
}

// TestGrants: the grants are the literal paths outside the project a
// line writes, resolved, that a person may allow; none for a write in
// the project, a path computed at run time, a pattern, a device, or a
// denied line.
func TestGrants(t *testing.T) {
	t.Parallel()
	out := resolvedDir(t)
	if err := os.Mkdir(filepath.Join(out, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(out, "real"), filepath.Join(out, "link")); err != nil {
		t.Fatal(err)
	}
	p := loadIn(t, tableEnv.Home, "", "")
	for _, tt := range []struct {
		line   string
		grants []string
	}{
		{"cp f " + out + "/x/", []string{out + "/x"}},
		{"curl -so " + out + "/a.tgz https://example.com/a.tgz", []string{out + "/a.tgz"}},
		{"echo x > " + out + "/a.txt; sort -o " + out + "/b.txt f; echo y >> " + out + "/a.txt", []string{out + "/a.txt", out + "/b.txt"}},
		{"cp f " + out + "/link/", []string{out + "/real"}},
		{"cd " + out + " && touch made.txt", []string{out + "/made.txt"}},
		{"cp f build/", nil},
		{"echo x > $OUT/a.txt", nil},
		{"cp f " + out + "/*/", nil},
		{"cp f /dev/null", nil},
		{"echo 1 > /proc/sys/kernel/x", nil},
		{"cp f /", nil},
		{"cp f " + out + "/ok/ && cp g ~/.ssh/", nil},
		// Where code other programs trust later lives: asked, never
		// granted (a grant would plant what a later unconfined build runs).
		{"echo planted > ~/.cache/go-build/0.01", nil},
		{"cp hook.sh ~/.config/git/hooks/", nil},
	} {
		v := p.Check(tt.line, tableEnv)
		if !slices.Equal(v.Grants, tt.grants) || !slices.Equal(v.Queue().Grants, tt.grants) {
			t.Errorf("%q: grants %q (queue %q), want %q: %s %s", tt.line, v.Grants, v.Queue().Grants, tt.grants, v.Action, explain(v))
		}
	}
}

// resolvedDir is a temporary directory with its symlinks resolved.
func resolvedDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}
