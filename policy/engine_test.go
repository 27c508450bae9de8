package policy

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestVerdictJSONShape pins the fields protocol section 4 promises to outside
// tools.
func TestVerdictJSONShape(t *testing.T) {
	t.Parallel()
	v := Default().Check("git status; rm -rf build", tableEnv)
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Action   *string  `json:"action"`
		Category *string  `json:"category"`
		Risk     *string  `json:"risk"`
		Reasons  []string `json:"reasons"`
		Commands []struct {
			Argv     []string `json:"argv"`
			Category string   `json:"category"`
			Rule     string   `json:"rule"`
		} `json:"commands"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if got.Action == nil || *got.Action != "ask" || *got.Category != "destructive" || *got.Risk != "high" {
		t.Fatalf("verdict %s", data)
	}
	if len(got.Commands) != 2 || strings.Join(got.Commands[1].Argv, " ") != "rm -rf build" ||
		got.Commands[1].Category != "destructive" || got.Commands[1].Rule == "" || len(got.Reasons) == 0 {
		t.Fatalf("commands %s", data)
	}
}

func TestHostileShapes(t *testing.T) {
	t.Parallel()
	p := Default()
	tests := []struct {
		name, line string
		act        Action
		cat        Category
		reason     string
	}{
		{"parse error", "echo 'unclosed", Ask, Unknown, "does not parse"},
		{"if without fi", "if true; then rm -rf x", Ask, Unknown, "does not parse"},
		{"empty", "   ", Ask, ReadOnly, "no command"},
		{"deep nesting", strings.Repeat("(", 500) + "ls" + strings.Repeat(")", 500), Ask, Unknown, "nests brackets"},
		{"deep substitution", strings.Repeat("$(", 150) + "rm -rf x" + strings.Repeat(")", 150), Ask, Unknown, "too deep"},
		{"sh -c nested past the bound", strings.Repeat("sh -c '", 1) + strings.Repeat(`sh -c "`, 1) + "rm -rf x" + `"'`, Ask, Destructive, ""},
		{"huge pipeline", strings.Repeat("cat x | ", 20000) + "rm -rf y", Ask, Destructive, ""},
		{"huge word", "echo " + strings.Repeat("a", 1<<20), Allow, ReadOnly, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := p.Check(tt.line, tableEnv)
			if v.Action != tt.act || v.Category != tt.cat {
				t.Fatalf("got %s %s, want %s %s: %.200s", v.Action, v.Category, tt.act, tt.cat, explain(v))
			}
			if tt.reason != "" && !strings.Contains(strings.Join(v.Reasons, ";"), tt.reason) {
				t.Errorf("reasons %q should say %q", v.Reasons, tt.reason)
			}
		})
	}
}

// TestRecursionBounded: wrappers that re-parse (sh -c inside sh -c …) stop
// at maxDepth and say so, rather than recurse without end.
func TestRecursionBounded(t *testing.T) {
	t.Parallel()
	line := "rm -rf x"
	for range maxDepth + 3 {
		line = "sh -c " + shellQuote(line)
	}
	v := Default().Check(line, tableEnv)
	if v.Action == Allow || !strings.Contains(strings.Join(v.Reasons, ";"), "too deep") {
		t.Fatalf("%s", explain(v))
	}
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// TestHiddenRunesASCII: the ASCII fast path names exactly the characters
// the Unicode tables call hidden (controls, format, separators), the
// newline and the tab aside.
func TestHiddenRunesASCII(t *testing.T) {
	for c := rune(0); c < utf8.RuneSelf; c++ {
		want := c != '\n' && c != '\t' && (unicode.Is(unicode.Cc, c) || unicode.Is(unicode.Cf, c) || unicode.Is(unicode.Zl, c) || unicode.Is(unicode.Zp, c))
		got := hiddenRunes("echo "+string(c)+"x") != ""
		if got != want {
			t.Errorf("%U: hidden %v, want %v", c, got, want)
		}
	}
	if got := hiddenRunes("ls \u202e\x1b[2J\x00"); got != "U+202E U+001B U+0000" {
		t.Errorf("hiddenRunes = %q", got)
	}
}
