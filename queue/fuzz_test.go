package queue

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzDecodeRequest feeds arbitrary bytes to the request decoder: it must
// never panic, must refuse with an *InvalidError or accept, and what it
// accepts must survive a round trip through the spool's own encoding and
// print without anything a terminal would act on.
func FuzzDecodeRequest(f *testing.F) {
	for _, data := range fixtures(f) {
		f.Add(data, "")
	}
	for _, s := range []string{
		`{"version":1,"id":"A1","kind":"exec","command":"ls"}`,
		`{"version":1,"id":"A1","kind":"exec","command":"ls","command":"rm -rf ~"}`,
		`{"version":1,"id":"A1","kind":"exec","command":"echo \u001b]0;pwned\u0007 \u202e"}`,
		`{"version":1,"id":"A1","kind":"tool","tool":"mcp__github__create_issue","input":{"title":"x","labels":["a","b"],"body":{"k":[1,2,{"z":null}]}}}`,
		`{"version":1,"id":"A1","kind":"edit","path":"/a","old_string":"x","new_string":"y","replace_all":true}`,
		`{"version":1e0,"id":"A1","kind":"exec","command":"ls"}`,
		`{"version":1,"id":"A1","kind":"exec","command":"ls","timeout_s":1e99}`,
		"{\"version\":1,\"id\":\"A1\",\"kind\":\"exec\",\"command\":\"\xff\"}",
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[`,
		`{"version":1,"id":"A1","kind":"exec","command":"ls"} trailing`,
		`{"version":1,"id":"A1","kind":"write","path":"/etc/passwd","content":"","created_at":"2026-11-21T15:04:05Z","expires_at":"2026-11-21T15:04:05Z"}`,
	} {
		f.Add([]byte(s), "A1")
	}
	f.Fuzz(func(t *testing.T, data []byte, name string) {
		req, err := DecodeRequest(data, name)
		if err != nil {
			var inv *InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("refusal %v is not an *InvalidError", err)
			}
			if strings.ContainsAny(inv.Reason, "\n\r") || !utf8.ValidString(inv.Reason) {
				t.Fatalf("reason %q is not one valid line", inv.Reason)
			}
			return
		}
		if !ValidID(req.ID) || (name != "" && req.ID != name) {
			t.Fatalf("accepted id %q for name %q", req.ID, name)
		}
		enc, err := marshalLine(req)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		again, err := DecodeRequest(enc, req.ID)
		if err != nil {
			t.Fatalf("own encoding refused: %v\n%s", err, enc)
		}
		enc2, _ := marshalLine(again)
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip changed the request:\n%s\n%s", enc, enc2)
		}
		shown, _ := Printable(req.Summary())
		for _, r := range shown {
			if hidden(r) {
				t.Fatalf("Printable left %U in %q", r, shown)
			}
		}
	})
}

// FuzzPrintable: Printable's output holds nothing a terminal acts on and
// reads back as its input.
func FuzzPrintable(f *testing.F) {
	for _, s := range []string{`grep 'a\|b'`, "cont \\\nnext", "\\\x1b[2J", `\u{202e}`, "a\u202eb", "\\\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, _ := Printable(s)
		for _, r := range got {
			if r < 0x20 || r == 0x7f || hidden(r) {
				t.Fatalf("Printable(%q) left %U", s, r)
			}
		}
		if back := unprintable(got); back != s {
			t.Fatalf("Printable(%q) = %q reads back as %q", s, got, back)
		}
	})
}
