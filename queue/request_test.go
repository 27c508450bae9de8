package queue

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fixtures reads the realistic requests in testdata/requests.
func fixtures(t testing.TB) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob("../testdata/requests/*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	out := make(map[string][]byte, len(paths))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = data
	}
	return out
}

func TestDecodeFixtures(t *testing.T) {
	t.Parallel()
	for name, data := range fixtures(t) {
		req, err := DecodeRequest(data, "")
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if req.Summary() == "" || req.EffectiveMode() == "" {
			t.Errorf("%s: empty summary or mode", name)
		}
	}
}

func TestDecodeRequestRefuses(t *testing.T) {
	t.Parallel()
	const ok = `"version":1,"id":"A1","kind":"exec","command":"ls"`
	tests := []struct {
		name, data, want string
	}{
		{"not JSON", `hello`, "not JSON"},
		{"truncated", `{"version":1,"id":"A1","kind":"ex`, "not JSON"},
		{"array", `[1,2]`, "not a JSON object"},
		{"trailing data", `{` + ok + `} {}`, "trailing data"},
		{"duplicate key", `{` + ok + `,"command":"rm -rf ~"}`, `duplicate key "command"`},
		{"duplicate nested key", `{"version":1,"id":"A1","kind":"exec","command":"ls","env":{"A":"1","A":"2"}}`, `duplicate key "A"`},
		{"unknown field", `{` + ok + `,"timeout":30}`, `unknown field "timeout"`},
		{"wrong type", `{"version":"1","id":"A1","kind":"exec","command":"ls"}`, `field "version" must be int`},
		{"missing version", `{"id":"A1","kind":"exec","command":"ls"}`, `missing required field "version"`},
		{"unknown version", `{"version":2,"id":"A1","kind":"exec","command":"ls"}`, "unsupported version 2"},
		{"missing id", `{"version":1,"kind":"exec","command":"ls"}`, `missing required field "id"`},
		{"id with slash", `{"version":1,"id":"a/b","kind":"exec","command":"ls"}`, "is not 1-64"},
		{"id with dots", `{"version":1,"id":"..","kind":"exec","command":"ls"}`, "is not 1-64"},
		{"id too long", `{"version":1,"id":"` + strings.Repeat("a", 65) + `","kind":"exec","command":"ls"}`, "is not 1-64"},
		{"missing kind", `{"version":1,"id":"A1","command":"ls"}`, `missing required field "kind"`},
		{"unknown kind", `{"version":1,"id":"A1","kind":"shell","command":"ls"}`, `unknown kind "shell"`},
		{"exec without command", `{"version":1,"id":"A1","kind":"exec"}`, `needs a "command"`},
		{"NUL in command", `{"version":1,"id":"A1","kind":"exec","command":"ls\u0000rm"}`, "NUL"},
		{"write without path", `{"version":1,"id":"A1","kind":"write","content":"x"}`, `needs a "path"`},
		{"edit without old_string", `{"version":1,"id":"A1","kind":"edit","path":"/a","new_string":"x"}`, `non-empty "old_string"`},
		{"patch without diff", `{"version":1,"id":"A1","kind":"patch"}`, `needs a "diff"`},
		{"tool without name", `{"version":1,"id":"A1","kind":"tool","input":{}}`, `needs a "tool"`},
		{"tool in execute mode", `{"version":1,"id":"A1","kind":"tool","tool":"Read","mode":"execute"}`, "decide mode only"},
		{"tool input not object", `{"version":1,"id":"A1","kind":"tool","tool":"Read","input":[1]}`, "must be a JSON object"},
		{"bad mode", `{` + ok + `,"mode":"yolo"}`, `mode "yolo"`},
		{"relative cwd", `{` + ok + `,"cwd":"src/app"}`, "not an absolute path"},
		{"negative timeout", `{` + ok + `,"timeout_s":-1}`, "negative"},
		{"huge timeout", `{` + ok + `,"timeout_s":99999999999}`, "limit"},
		{"env name with =", `{` + ok + `,"env":{"A=B":"x"}}`, "env name"},
		{"expires before created", `{` + ok + `,"created_at":"2026-11-21T15:00:00Z","expires_at":"2026-11-21T14:00:00Z"}`, "expires_at is not after"},
		{"non-UTF-8", "{\"version\":1,\"id\":\"A1\",\"kind\":\"exec\",\"command\":\"ls \xff\"}", "UTF-8"},
		{"too deep", `{"version":1,"id":"A1","kind":"tool","tool":"X","input":` + strings.Repeat(`{"a":`, 70) + `1` + strings.Repeat(`}`, 70) + `}`, "nested deeper"},
		{"over 1 MiB", `{` + ok + `,"note":"` + strings.Repeat("x", MaxRequestSize) + `"}`, "over the"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := DecodeRequest([]byte(tt.data), "")
			var inv *InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("DecodeRequest = %v, want an *InvalidError", err)
			}
			if !strings.Contains(inv.Reason, tt.want) {
				t.Errorf("reason %q does not say %q", inv.Reason, tt.want)
			}
			if strings.ContainsAny(inv.Reason, "\n\r") {
				t.Errorf("reason %q is not one line", inv.Reason)
			}
		})
	}
}

func TestDecodeRequestNameMismatch(t *testing.T) {
	t.Parallel()
	data := []byte(`{"version":1,"id":"B2","kind":"exec","command":"ls"}`)
	if _, err := DecodeRequest(data, "A1"); err == nil || !strings.Contains(err.Error(), "does not match the file name") {
		t.Fatalf("got %v, want a name mismatch", err)
	}
	if _, err := DecodeRequest(data, "B2"); err != nil {
		t.Fatalf("matching name refused: %v", err)
	}
}

func TestEffectiveMode(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		r    Request
		want Mode
	}{
		{Request{Kind: KindExec}, ModeExecute},
		{Request{Kind: KindTool}, ModeDecide},
		{Request{Kind: KindExec, Mode: ModeDecide}, ModeDecide},
	} {
		if got := tt.r.EffectiveMode(); got != tt.want {
			t.Errorf("%+v: mode %s, want %s", tt.r, got, tt.want)
		}
	}
}

func TestPrintable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"go test ./...", "go test ./...", true},
		{"echo héllo 日本", "echo héllo 日本", true},
		{`printf 'a\n'`, `printf 'a\\n'`, true},
		{`grep 'a\|b' f`, `grep 'a\|b' f`, true},
		{`echo C:\Users\me`, `echo C:\Users\me`, true},
		{"tail \\\n", `tail \\\n`, false},
		{"cont \\\nnext", `cont \\\nnext`, false},
		{"ls\n rm -rf ~", `ls\n rm -rf ~`, false},
		{"echo \x1b[2J\x1b[Hhi", `echo \x1b[2J\x1b[Hhi`, false},
		{"echo \u202egnp.exe", `echo \u{202e}gnp.exe`, false},
		{"rm\u200b -rf", `rm\u{200b} -rf`, false},
		{"a\u2066b\u2069", `a\u{2066}b\u{2069}`, false},
		{"tag\U000E0041", `tag\u{e0041}`, false},
		{"bad \xff byte", `bad \xff byte`, false},
		{"c1 \u009b31m", `c1 \u{009b}31m`, false},
		{"tab\there", `tab\there`, false},
		{"cr\rover", `cr\rover`, false},
	}
	for _, tt := range tests {
		got, ok := Printable(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Printable(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
		for _, r := range got {
			if r < 0x20 || r == 0x7f || hidden(r) {
				t.Errorf("Printable(%q) left %U in the output", tt.in, r)
			}
		}
	}
}

// unprintable decodes Printable's output: what a reader of it can rely on.
func unprintable(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '\\':
			b.WriteByte('\\')
			i++
		case 'n':
			b.WriteByte('\n')
			i++
		case 't':
			b.WriteByte('\t')
			i++
		case 'r':
			b.WriteByte('\r')
			i++
		case 'x':
			v, _ := strconv.ParseUint(s[i+2:i+4], 16, 8)
			b.WriteByte(byte(v))
			i += 3
		case 'u':
			end := strings.IndexByte(s[i:], '}')
			v, _ := strconv.ParseUint(s[i+3:i+end], 16, 32)
			b.WriteRune(rune(v))
			i += end
		default:
			b.WriteByte('\\')
		}
	}
	return b.String()
}

// TestPrintableDecodes: Printable's output reads back one way, whatever
// mix of backslashes and escaped characters an agent sends.
func TestPrintableDecodes(t *testing.T) {
	t.Parallel()
	for _, s := range []string{`a\|b`, "\\\n", `\\n`, "\\\x1b", `\x1b`, "\\\u202e", `\u{202e}`, "x\\", `\`, "\\\xff", `\\\\`, "\\\t\\t"} {
		got, _ := Printable(s)
		if back := unprintable(got); back != s {
			t.Errorf("Printable(%q) = %q, which reads back as %q", s, got, back)
		}
	}
}
