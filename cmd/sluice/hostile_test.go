package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/queue"
)

// Agent text that a terminal would act on, through the commands a person
// runs: sluice ls, deny, audit tail and verify, check, submit. The
// human-readable output shows it escaped; JSON output stays valid JSON.

var cliHostile = []struct{ name, text string }{
	{"CSI 2J", "\x1b[2J\x1b[H"},
	{"erase the line above", "\r\x1b[1A\x1b[2K"},
	{"OSC 0 title", "\x1b]0;pwned\x07"},
	{"OSC 52 clipboard", "\x1b]52;c;cm0gLXJmIH4=\x07"},
	{"OSC 8 hyperlink", "\x1b]8;;https://evil.example\x07click\x1b]8;;\x07"},
	{"DCS", "\x1bP1$qm\x1b\\"},
	{"APC", "\x1b_Gf=100;AAAA\x1b\\"},
	{"SGR conceal", "\x1b[8mhidden\x1b[0m"},
	{"C1 as UTF-8", "\u009b2J\u0085\u009d0;t\u009c"},
	{"RLO", "txt.\u202esh"},
	{"isolates", "\u2066rm -rf ~\u2069"},
	{"zero-width", "r\u200bm\ufeff"},
	{"separators", "a\u2028b\u2029c"},
	{"C0 and DEL", "\a\b\x7f\v\f"},
	{"newlines", "one\ntwo\r\n"},
	{"invalid UTF-8", "\xff\xfe\xc3\x28"},
}

// sluiceCmd runs sluice in this process.
func sluiceCmd(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, cli.Stdio{In: strings.NewReader(stdin), Out: &out, Err: &errb})
	return out.String(), errb.String(), code
}

// visible fails the test if s holds anything a terminal would act on or
// hide: invalid UTF-8, a control character but \n, an escape, a C1
// control, a bidi control, an invisible rune.
func visible(t *testing.T, what, s string) {
	t.Helper()
	if bad := hiddenIn(s); bad != "" {
		t.Errorf("%s: %s", what, bad)
	}
}

// hiddenIn describes the first thing in s a terminal would act on or
// hide, or returns "".
func hiddenIn(s string) string {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		ctx := s[max(0, i-30):min(len(s), i+30)]
		if r == utf8.RuneError && n <= 1 {
			return fmt.Sprintf("invalid UTF-8 at byte %d: %q", i, ctx)
		}
		if _, ok := queue.Printable(string(r)); !ok && r != '\n' {
			return fmt.Sprintf("raw %U at byte %d: %q", r, i, ctx)
		}
		i += n
	}
	return ""
}

// TestHostileCLI sets up a spool and an audit log full of agent text
// meant for a terminal, then reads them back with every command a person
// uses. It sets COLUMNS, so it does not run in parallel.
func TestHostileCLI(t *testing.T) {
	t.Setenv("COLUMNS", "")
	dir := t.TempDir()
	spool, log := filepath.Join(dir, "spool"), filepath.Join(dir, "audit.jsonl")
	sp, err := queue.Open(spool)
	if err != nil {
		t.Fatal(err)
	}
	type submitted struct {
		req  *queue.Request
		text string
	}
	var reqs []submitted
	for _, x := range cliHostile {
		input, _ := json.Marshal(map[string]string{"q": x.text})
		for _, r := range []*queue.Request{
			{Kind: queue.KindExec, Command: "echo " + x.text, Cwd: "/tmp/" + x.text, Agent: "agent" + x.text, Session: x.text, Note: x.text},
			{Kind: queue.KindWrite, Path: "/tmp/" + x.text, Content: x.text, Agent: x.text},
			{Kind: queue.KindTool, Tool: "T" + x.text, Input: input, Agent: x.text},
		} {
			if err := sp.Submit(r); err != nil {
				t.Fatalf("%s: %v", x.name, err)
			}
			reqs = append(reqs, submitted{r, x.text})
		}
	}
	// Bad files: unreadable JSON with escapes in it, a name that is not an
	// id, and a refusal whose reason quotes the agent (an env name).
	for name, data := range map[string]string{
		"BADHOSTILE1.json":              "\x1b[2J\u202e{",
		"evil\x1b]0;pwned\a\u202e.json": "{}",
		"BADENVNAME1.json":              `{"version":1,"id":"BADENVNAME1","kind":"exec","command":"ls","env":{"\u001b[2J\u202e":"\u0000"}}`,
	} {
		if err := os.WriteFile(filepath.Join(spool, "new", name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("ls", func(t *testing.T) {
		out, errOut, code := sluiceCmd(t, "", "--spool", spool, "ls")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		visible(t, "stdout", out)
		visible(t, "stderr", errOut)
		for _, want := range []string{`\x1b[2J`, `\u{202e}`, `\u{009b}`, `\x07`, " bad "} {
			if !strings.Contains(out, want) {
				t.Errorf("the table does not show %q:\n%s", want, out)
			}
		}
	})

	t.Run("ls --json", func(t *testing.T) {
		out, errOut, code := sluiceCmd(t, "", "--spool", spool, "ls", "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var list []lsEntry
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatalf("not JSON: %v\n%q", err, out)
		}
		byID := map[string]*queue.Request{}
		for _, e := range list {
			byID[e.ID] = e.Request
		}
		for _, s := range reqs {
			got := byID[s.req.ID]
			if got == nil {
				t.Errorf("%s is not listed", s.req.ID)
				continue
			}
			if utf8.ValidString(s.text) && (got.Command != s.req.Command || got.Agent != s.req.Agent || got.Path != s.req.Path) {
				t.Errorf("the JSON changed the request: %+v, want %+v", got, s.req)
			}
		}
		if bad := hiddenIn(out); bad != "" {
			t.Errorf("'sluice ls --json' wrote a character a terminal acts on raw: %s", bad)
		}
	})

	// A person denies everything, giving a reason pasted from the agent.
	for _, s := range reqs {
		out, errOut, code := sluiceCmd(t, "", "--spool", spool, "deny", "--audit", log, "--reason", "because "+s.text, s.req.ID)
		if code != 0 {
			t.Fatalf("deny %s: exit %d: %s", s.req.ID, code, errOut)
		}
		visible(t, "deny stdout", out)
		visible(t, "deny stderr", errOut)
	}
	for _, arg := range []string{"BADHOSTILE1", "BADENVNAME1", "\x1b[2J\u202eBAD", "\x1b]0;x\a"} {
		out, errOut, code := sluiceCmd(t, "", "--spool", spool, "deny", "--audit", log, arg)
		if code == 0 {
			t.Errorf("deny %q succeeded", arg)
		}
		visible(t, "deny "+arg+" stdout", out)
		visible(t, "deny "+arg+" stderr", errOut)
	}
	// Events as a tampered or foreign log may hold them, in every field
	// the table shows; then a line that is no event at all.
	l, err := audit.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range cliHostile {
		ev := queue.Event{ID: "01JDHOSTILEEVENT0000000000", Event: queue.EventName("queued" + x.text), Actor: x.text,
			Agent: x.text, Kind: queue.Kind("write" + x.text), Path: x.text, Status: queue.Status(x.text), Reason: x.text,
			EditedFrom: x.text, Cwd: x.text}
		if err := l.Record(ev); err != nil {
			t.Fatal(err)
		}
		ev.Kind, ev.Path, ev.Tool = queue.KindTool, "", x.text
		if err := l.Record(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// One denied per request, two invalid (the bad files denied), and ours.
	events := len(reqs) + 2 + 2*len(cliHostile)
	f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("{\"seq\":999,\"event\":\"\x1b[2J\u202e\xff\x9b31m\"}\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()

	t.Run("audit tail", func(t *testing.T) {
		out, errOut, code := sluiceCmd(t, "", "audit", "tail", "-n", "1000", "--audit", log)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		visible(t, "stdout", out)
		visible(t, "stderr", errOut)
		if rows := strings.Count(out, "\n"); rows != 1+events+1 {
			t.Errorf("%d rows, want a header, %d events and the line that is not one", rows, events)
		}
		for _, want := range []string{`\x1b[2J`, `\u{202e}`, `\u{009b}`, `(not an event)`} {
			if !strings.Contains(out, want) {
				t.Errorf("the table does not show %q", want)
			}
		}
	})

	t.Run("audit tail, cut to 60 columns", func(t *testing.T) {
		t.Setenv("COLUMNS", "60")
		out, errOut, _ := sluiceCmd(t, "", "audit", "tail", "-n", "1000", "--audit", log)
		visible(t, "stdout", out)
		visible(t, "stderr", errOut)
	})

	t.Run("audit tail --json", func(t *testing.T) {
		out, errOut, code := sluiceCmd(t, "", "audit", "tail", "-n", "1000", "--json", "--audit", log)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		visible(t, "stdout", out)
		visible(t, "stderr", errOut)
		if !strings.Contains(errOut, "not an event") {
			t.Errorf("no note of the line left out: %q", errOut)
		}
		denied := map[string]queue.Event{}
		lines := 0
		sc := bufio.NewScanner(strings.NewReader(out))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines++
			var ev queue.Event
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Fatalf("line %d is not JSON: %v: %q", lines, err, sc.Text())
			}
			if ev.Event == queue.EventDenied {
				denied[ev.ID] = ev
			}
		}
		if lines != events {
			t.Errorf("%d lines, want %d", lines, events)
		}
		for _, s := range reqs {
			ev, ok := denied[s.req.ID]
			if !ok {
				t.Errorf("no denied event for %s", s.req.ID)
				continue
			}
			if utf8.ValidString(s.text) && (ev.Agent != s.req.Agent || ev.Reason != "because "+s.text ||
				ev.Command != s.req.Command || ev.Path != s.req.Path || ev.Tool != s.req.Tool) {
				t.Errorf("the JSON changed the event: %+v, want the request %+v", ev, s.req)
			}
		}
	})

	t.Run("audit tail filters", func(t *testing.T) {
		for _, args := range [][]string{
			{"--agent", "agent\x1b[2J\x1b[H"}, {"--id", "\x1b[2J\u202e"}, {"--event", "queued\x1b]0;x\a"},
			{"--since", "\x1b[2J\u202e"}, {"--audit", filepath.Join(dir, "no\x1b[2J\u202e.jsonl")},
		} {
			out, errOut, _ := sluiceCmd(t, "", append([]string{"audit", "tail", "--audit", log}, args...)...)
			visible(t, fmt.Sprintf("%q stdout", args), out)
			visible(t, fmt.Sprintf("%q stderr", args), errOut)
		}
	})

	t.Run("audit verify", func(t *testing.T) {
		out, errOut, code := sluiceCmd(t, "", "audit", "verify", "--audit", log)
		if code != 1 {
			t.Errorf("verify of a log with a foreign line: exit %d, want 1", code)
		}
		visible(t, "stdout", out)
		visible(t, "stderr", errOut)
	})

	t.Run("check", func(t *testing.T) {
		for _, x := range cliHostile {
			out, errOut, _ := sluiceCmd(t, "", "--spool", spool, "check", "--", "echo", x.text, "; curl evil.example/"+x.text)
			visible(t, x.name+" stdout", out)
			visible(t, x.name+" stderr", errOut)
			out, _, _ = sluiceCmd(t, "", "--spool", spool, "check", "--json", "--", "echo", x.text)
			if !json.Valid([]byte(out)) {
				t.Errorf("%s: check --json is not JSON: %q", x.name, out)
			}
		}
	})

	t.Run("submit", func(t *testing.T) {
		for _, in := range []string{
			"\x1b[2J\u202e",
			`{"version":1,"kind":"exec","command":"ls","\u001b]0;pwned\u0007\u202e":1}`,
			`{"version":1,"kind":"\u001b[2J\u202e","command":"ls"}`,
			`{"version":1,"id":"\u001b[2J","kind":"exec","command":"ls"}`,
		} {
			out, errOut, code := sluiceCmd(t, in, "--spool", spool, "submit")
			if code == 0 {
				t.Errorf("submit of %q succeeded", in)
			}
			visible(t, "stdout", out)
			visible(t, "stderr", errOut)
		}
		// An env name is quoted by the refusal without escaping.
		in := `{"version":1,"kind":"exec","command":"ls","env":{"\u001b[2J\u202e":"\u0000"}}`
		_, errOut, _ := sluiceCmd(t, in, "--spool", spool, "submit")
		if bad := hiddenIn(errOut); bad != "" {
			t.Errorf("an env name reached the refusal unescaped: %s", bad)
		}
	})
}
