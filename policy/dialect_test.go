package policy

import "testing"

// TestPosixDialect: where exec requests run in POSIX sh, a line that
// parses only as bash is at least ask (sh reads it differently, or not at
// all), and judged on its bash reading; plain POSIX lines are unchanged.
func TestPosixDialect(t *testing.T) {
	t.Parallel()
	posix, err := Load(Options{Home: tableEnv.Home, Shell: "posix"})
	if err != nil {
		t.Fatal(err)
	}
	bash := loadIn(t, tableEnv.Home, "", "")
	for _, tt := range []struct {
		line      string
		posix, sh Action
		posixCat  Category
	}{
		{"a=(one two); echo ${a[1]}", Ask, Allow, Unknown},
		{"ls <(echo x)", Ask, Allow, Unknown},
		{"diff <(ls a) <(ls b); sudo rm -rf /", Deny, Deny, HostEscape},
		{"ls -la && git status", Allow, Allow, ReadOnly},
	} {
		if v := posix.Check(tt.line, tableEnv); v.Action != tt.posix || v.Category != tt.posixCat {
			t.Errorf("posix %q: got %s %s, want %s %s (%v)", tt.line, v.Action, v.Category, tt.posix, tt.posixCat, v.Reasons)
		}
		if v := bash.Check(tt.line, tableEnv); v.Action != tt.sh {
			t.Errorf("bash %q: got %s, want %s", tt.line, v.Action, tt.sh)
		}
	}
}
