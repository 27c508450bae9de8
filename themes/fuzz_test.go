package themes

import (
	"strings"
	"testing"
)

func FuzzParseTheme(f *testing.F) {
	for _, name := range []string{"dark", "light", "high-contrast"} {
		src, err := builtin.ReadFile(name + ".toml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	for _, s := range []string{
		"", "dark = true", `fg = "#E4E4E7"`, `fg = "7"`, `fg = "007"`, `fg = "255"`,
		`fg = 12`, `fg = "#fff"`, "[colors]\nfg = \"#ffffff\"", "fg.x = \"1\"",
		"[[fg]]", "fg = [\"#000000\"]", "\xff\xfe", "fg = \"\\u001b[31m\"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		p, err := parseTheme("fuzz", "fuzz.toml", src)
		p2, err2 := parseTheme("fuzz", "fuzz.toml", src)
		if (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() {
			t.Fatalf("not deterministic: %v, then %v", err, err2)
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "themes: fuzz.toml: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if p != p2 {
			t.Fatalf("not deterministic: %+v, then %+v", p, p2)
		}
		for _, sl := range slots(&themeFile{}, &p) {
			if absent(*sl.dst) {
				t.Fatalf("accepted theme leaves %s without a colour", sl.key)
			}
		}
		s := New(p)
		for _, a := range []string{"allow", "ask", "deny"} {
			_ = s.BadgeFor(a).Render(a)
		}
	})
}
