package web

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// segs flattens a Shown for comparison: plain text as is, escapes in [],
// folds in {}.
func segs(sh Shown) string {
	var b strings.Builder
	for i, l := range sh.Lines {
		if i > 0 {
			b.WriteString("|")
		}
		for _, s := range l {
			switch s.K {
			case SegEsc:
				b.WriteString("[" + s.T + "]")
			case SegFold:
				b.WriteString("{" + s.T + "}")
			default:
				b.WriteString(s.T)
			}
		}
	}
	return b.String()
}

func TestShapeEscapesAndFolds(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in, want       string
		hidden, folded bool
	}{
		{"go test ./...", "go test ./...", false, false},
		{"echo <script>alert(1)</script>", "echo <script>alert(1)</script>", false, false},
		{"printf '\x1b[2J\x1b]52;c;ZXZpbA==\x07'", "printf '[\\x1b][2J[\\x1b]]52;c;ZXZpbA==[\\x07]'", true, false},
		{"ls \u202egnp.exe", "ls [\\u{202e}]gnp.exe", true, false},
		{"a\u2066b\u2069c\u200bd", "a[\\u{2066}]b[\\u{2069}]c[\\u{200b}]d", true, false},
		{"rm\x00 -rf", "rm[\\x00] -rf", true, false},
		{"bad \xff byte", "bad [\\xff] byte", true, false},
		{"tab\there", "tab[\\t]here", true, false},
		{"one\n\n\n\n\ncurl evil | sh", "one|{⟨4 blank lines⟩}|curl evil | sh", false, true},
		{"one\n\ntwo", "one||two", false, false},
		{"true" + strings.Repeat(" ", 40) + "; rm -rf ~", "true{⟨40 spaces⟩}; rm -rf ~", false, true},
		{"grep 'a\\|b'", "grep 'a\\|b'", false, false},
	}
	for _, c := range cases {
		sh := Shape(c.in)
		if got := segs(sh); got != c.want || sh.Hidden != c.hidden || sh.Folded != c.folded {
			t.Errorf("Shape(%q) = %q hidden=%v folded=%v, want %q hidden=%v folded=%v", c.in, got, sh.Hidden, sh.Folded, c.want, c.hidden, c.folded)
		}
	}
	// ShapeLine keeps one line: a newline is escaped, not a line break.
	if got := segs(ShapeLine("a\nb")); got != `a[\n]b` {
		t.Errorf("ShapeLine: %q", got)
	}
}

// No text segment may hold a character that changes how text reads.
func TestShapeTextSegmentsAreClean(t *testing.T) {
	t.Parallel()
	in := "x\x1b[31my\u202ez\u2067w\u00adv\u2028u\x9bq\r\n"
	for _, l := range Shape(in).Lines {
		for _, s := range l {
			if s.K != SegText {
				continue
			}
			for _, r := range s.T {
				if r < 0x20 || (r >= 0x7f && r < 0xa0) || (r >= 0x2000 && r <= 0x206f && r != 0x2014) || r == 0xad {
					t.Errorf("text segment %q holds %U", s.T, r)
				}
			}
		}
	}
}

// The API hands hostile commands out as JSON with no markup in it: the
// encoder escapes <, > and &, and every hidden character is a segment of
// its own.
func TestHostileCommandRendersInert(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	d := r.pair("phone")
	cmd := "echo '</textarea><script>alert(document.cookie)</script>' \u202e\x1b[8m hidden"
	r.src.put("evil", cmd, digestA)
	for _, path := range []string{"/api/queue", "/api/request/evil"} {
		w := r.as(d, "GET", path, "")
		if w.Code != http.StatusOK {
			t.Fatalf("%s: %d", path, w.Code)
		}
		body := w.Body.String()
		for _, bad := range []string{"<script", "</textarea", "\u202e", "\x1b"} {
			if strings.Contains(body, bad) {
				t.Errorf("%s holds %q raw: %s", path, bad, body)
			}
		}
		if ct := w.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", path, ct)
		}
	}
	v := r.show(d, "evil")
	if got := segs(*v.Command); got != `echo '</textarea><script>alert(document.cookie)</script>' [\u{202e}][\x1b][8m hidden` {
		t.Errorf("command as shown: %q", got)
	}
	if !v.Hidden {
		t.Error("the detail does not flag hidden characters")
	}
	var list []itemView
	_ = json.Unmarshal(r.as(d, "GET", "/api/queue", "").Body.Bytes(), &list)
	if len(list) != 1 || !list[0].Flagged {
		t.Errorf("the queue row is not flagged: %+v", list)
	}
}

// The page's own code never turns text into markup.
func TestPageNeverParsesAgentText(t *testing.T) {
	t.Parallel()
	bad := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function|\.html\(`)
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, _ := static.ReadFile(p)
		if strings.HasSuffix(p, ".js") {
			// The file's opening comment names what it never does.
			code := regexp.MustCompile(`(?m)^//.*$`).ReplaceAllString(string(data), "")
			if m := bad.FindString(code); m != "" {
				t.Errorf("%s uses %s", p, m)
			}
		}
		if strings.HasSuffix(p, ".html") {
			if regexp.MustCompile(`<script[^>]*>\s*[^<\s]`).Match(data) || regexp.MustCompile(`\son[a-z]+=`).Match(data) {
				t.Errorf("%s has inline script or handlers (the CSP forbids them)", p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestOutputFilter(t *testing.T) {
	t.Parallel()
	var f outFilter
	// A colour, a clipboard write (OSC 52), a title, split across
	// chunks; a CR progress line; a bidi override; a UTF-8 character cut
	// in two.
	chunks := []string{"\x1b[3", "1mred\x1b[0m ok\r\n", "\x1b]52;c;ZXZp", "bA==\x07x\x1b]0;title\x07\n", "50%\r100%\n", "\u202eabc\n", "caf\xc3", "\xa9\n"}
	var got strings.Builder
	for _, c := range chunks {
		got.WriteString(f.write([]byte(c), false))
	}
	got.WriteString(f.write(nil, true))
	want := "red ok\nx\n50%\n100%\n\\u{202e}abc\ncafé\n"
	if got.String() != want {
		t.Fatalf("output as the page gets it:\n%q\nwant\n%q", got.String(), want)
	}
}
