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
		if v.Action != tt.act || v.Risk != tt.risk {
			t.Errorf("%q: %s risk %s, want %s risk %s: %s", tt.line, v.Action, v.Risk, tt.act, tt.risk, explain(v))
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
		if v.Action != Ask || !slices.Contains(v.Reasons, want) {
			t.Errorf("%q: %s %q, want ask with %q", tt.line, v.Action, v.Reasons, want)
		}
	}
}

// TestWritesOutsideAsk: with the home directory under /tmp (a fresh
// HOME made for a try), copying or moving a file into /tmp asks (it was
// denied: "destroys /tmp, which holds the home directory"); what lands in
// the home directory or fills it, or destroys it, is still denied.
func TestWritesOutsideAsk(t *testing.T) {
	t.Parallel()
	home := filepath.Join(os.TempDir(), "sluice-fresh-home")
	p, err := Load(Options{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	project := filepath.Join(home, "proj")
	env := Env{Cwd: project, Home: home, Roots: []string{project}}
	T := os.TempDir()
	for _, line := range []string{
		"cp file1.txt " + T + "/",
		"mv file.txt " + T + "/",
		"cp file1.txt " + T,
		"cp -t " + T + " a.txt b.txt",
		"mv -t " + T + " a.txt",
		"cp notes.txt ~/",
		"cp report.pdf ~/Documents/ && echo done > " + T + "/done.txt",
		"ln -s " + project + "/bin/tool " + T + "/",
	} {
		v := p.Check(line, env)
		if v.Action != Ask || v.Category != Mutating {
			t.Errorf("%q: %s %s, want ask mutating: %s", line, v.Action, v.Category, explain(v))
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
		if v.Action != Deny || !found {
			t.Errorf("%q: %s %q, want deny saying %q", tt.line, v.Action, v.Reasons, tt.reason)
		}
	}
}
