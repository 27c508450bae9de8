package policy

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzCheck judges arbitrary lines: no panic, the same verdict twice,
// valid values, and never allow for a line with hidden characters.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		"git status", "git status; rm -rf ~", `r''m -rf /`, "$(echo rm) -rf x", "sudo -u root env LD_PRELOAD=x ls",
		`find . -exec sh -c 'rm -rf "$1"' _ {} \;`, `bash -c "bash -c \"bash -c 'rm -rf x'\""`, "cat <<EOF | sh\nrm -rf x\nEOF",
		"f() { rm -rf x; }; f", "for f in *.go; do gofmt -w $f; done", "a=$(curl -s https://x) && echo $a",
		"git -c core.pager='sh -c id' log", "docker run -v /:/host alpine", "echo \x1b[2J", "echo \u202eevil",
		"xargs -I{} rm -rf {}", "timeout 5 nice -n 10 env FOO=1 python3 -c 'print(1)'", "(((((((((((", "${x:-$(rm -rf y)}",
		"awk '{system(\"rm x\")}'", "sed -n '1e id' f", "git show > ~/.ssh/id_rsa", "cd /etc && echo x > passwd",
		strings.Repeat("$(", 300) + "ls" + strings.Repeat(")", 300), strings.Repeat("ls | ", 2000) + "ls",
		"eval \"$(ssh-agent)\"", "if true; then rm -rf x; elif false; then :; else ls; fi", "case $x in a) rm -rf y;; esac",
		"cp f /tmp/", "mv -t ~ .profile", "cp -r src/. ~/", "echo x 1< f > /dev/stdout", "curl -so /dev/null https://x >& /dev/null",
		"nmcli device wifi list", "nmcli -s c show x",
	} {
		f.Add(s)
	}
	p := Default()
	f.Fuzz(func(t *testing.T, line string) {
		v := p.Check(line, tableEnv)
		if v.Action < Allow || v.Action > Deny || v.Category < ReadOnly || v.Category > HostEscape || v.Risk < Low || v.Risk > Critical {
			t.Fatalf("out-of-range verdict %+v", v)
		}
		a, _ := json.Marshal(v)
		b, _ := json.Marshal(p.Check(line, tableEnv))
		if string(a) != string(b) {
			t.Fatalf("not deterministic:\n%s\n%s", a, b)
		}
		if hiddenRunes(line) != "" && v.Action == Allow {
			t.Fatalf("allowed a line with hidden characters: %q", line)
		}
		for _, c := range v.Commands {
			if c.Action > v.Action || c.Category > v.Category {
				t.Fatalf("a part is stricter than the line: %+v vs %s %s", c, v.Action, v.Category)
			}
		}
		// A grant is a place outside the project a person may let an
		// approved run write: never for a denied line, never a device,
		// /proc, /sys or /, never inside the project.
		for _, g := range v.Grants {
			if v.Action == Deny || !filepath.IsAbs(g) || g != filepath.Clean(g) || g == "/" || inRoots(g, tableEnv.Roots) ||
				under(g, "/dev") || under(g, "/proc") || under(g, "/sys") {
				t.Fatalf("grant %q of a %s verdict", g, v.Action)
			}
		}
	})
}
