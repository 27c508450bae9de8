package tui

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sluice-dev/sluice/queue"
	"github.com/sluice-dev/sluice/themes"
	"github.com/sluice-dev/sluice/tui/screen"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// scene is a console with a realistic queue, history and output, at a
// fixed time, with no engine behind it.
func scene(t *testing.T, st *themes.Styles, w, h int) *Model {
	t.Helper()
	at := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	m := New(Options{Styles: st, Now: func() time.Time { return at }, Actor: "alice"})
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	reqs := []requestPending{
		{req: &queue.Request{ID: "01JD0000000000000000000001", Kind: queue.KindExec, Command: "go test ./... -run TestSpool -count=1",
			Cwd: "/home/alice/src/sluice", Agent: "claude-code", Session: "s-4f2a", Note: "Run the tests before committing"},
			verdict: queue.Verdict{Action: "ask", Category: "mutating", Risk: "medium", Reasons: []string{"compiles and runs the project's tests"},
				Parts: []queue.Part{{Command: "go test ./... -run TestSpool -count=1", Category: "mutating", Action: "ask", Rule: "default: mutating → ask (knowledge: go test)"}}}},
		{req: &queue.Request{ID: "01JD0000000000000000000002", Kind: queue.KindExec, Command: "rm -rf build dist node_modules/.cache",
			Cwd: "/home/alice/src/sluice", Agent: "codex", ExpiresAt: at.Add(40 * time.Second)},
			verdict: queue.Verdict{Action: "ask", Category: "destructive", Risk: "high", Reasons: []string{"deletes files recursively"}}},
		{req: &queue.Request{ID: "01JD0000000000000000000003", Kind: queue.KindExec, Command: "git commit -m \"fix\"\u202e ;rm -rf ~ #\x1b[2J",
			Cwd: "/home/alice/src/sluice", Agent: "gemini-cli"},
			verdict: queue.Verdict{Action: "ask", Category: "unknown", Risk: "high", Reasons: []string{"control or invisible characters (U+202E)"}}},
	}
	var events []any
	for i, r := range reqs {
		r.at = at.Add(-time.Duration(30-i*10) * time.Second)
		events = append(events, r)
	}
	scr := screen.New(40, 6, nil)
	_, _ = scr.Write([]byte("\x1b[32mok  \x1b[0m github.com/sluice-dev/sluice/queue 4.3s\r\nbuild [==========] 100%\r\n"))
	ran := &run{req: &queue.Request{ID: "01JD0000000000000000000000", Kind: queue.KindExec, Command: "go vet ./...", Cwd: "/home/alice/src/sluice"},
		verdict: queue.Verdict{Action: "allow", Category: "read_only", Risk: "low"}, by: queue.ByPolicy, started: at.Add(-time.Minute), screen: scr}
	events = append(events, runStarted{run: ran}, runFinished{id: ran.req.ID, req: ran.req, at: at.Add(-50 * time.Second),
		res: queue.Result{Status: queue.StatusDone, ExitCode: new(int), DurationMS: 1234, DecidedBy: queue.ByPolicy}})
	m.Update(engineMsg{events: events})
	m.resized()
	m.graceUntil = time.Time{} // show the steady state
	return m
}

func TestView(t *testing.T) {
	sizes := []struct{ w, h int }{{60, 20}, {80, 24}, {140, 40}}
	styles := map[string]*themes.Styles{"Dark": themes.Default(true), "Light": themes.Default(false), "NoColor": themes.Mono()}
	for _, sz := range sizes {
		for name, st := range styles {
			t.Run(filepath.Join(strings.ReplaceAll(ansi.Strip(sizeName(sz.w, sz.h)), " ", ""), name), func(t *testing.T) {
				m := scene(t, st, sz.w, sz.h)
				for _, view := range []string{"queue", "help", "deny"} {
					switch view {
					case "help":
						m.mode = modeHelp
					case "deny":
						m.mode = modeNormal
						m.openInput(modeDenyReason, "", "reason (optional): ")
					}
					out := m.render()
					checkFrame(t, out, sz.w, sz.h)
					if view == "queue" {
						golden(t, out)
					}
				}
			})
		}
	}
}

func sizeName(w, h int) string { return strings.Join([]string{itoa(w), "x", itoa(h)}, "") }

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// checkFrame asserts the invariants of every frame: exactly h lines, none
// wider than w, and no escape sequence but SGR.
func checkFrame(t *testing.T, out string, w, h int) {
	t.Helper()
	lines := strings.Split(out, "\n")
	if len(lines) != h {
		t.Errorf("%d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if got := ansi.StringWidth(l); got > w {
			t.Errorf("line %d is %d cells wide, terminal is %d: %q", i+1, got, w, ansi.Strip(l))
		}
	}
	for i := 0; i < len(out); i++ {
		if out[i] != 0x1b {
			continue
		}
		j := i + 1
		if j >= len(out) || out[j] != '[' {
			t.Fatalf("non-CSI escape at byte %d: %q", i, out[i:min(i+12, len(out))])
		}
		for j++; j < len(out) && (out[j] >= '0' && out[j] <= '9' || out[j] == ';' || out[j] == ':'); j++ {
		}
		if j >= len(out) || out[j] != 'm' {
			t.Fatalf("escape other than SGR at byte %d: %q", i, out[i:min(i+12, len(out))])
		}
	}
}

func golden(t *testing.T, got string) {
	t.Helper()
	p := filepath.Join("testdata", t.Name()+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run 'make golden' to create it)", err)
	}
	if string(want) != got {
		t.Errorf("view differs from %s (run 'make golden' after checking the change):\n%s", p, ansi.Strip(got))
	}
}

// No request text can reach the terminal raw, whatever the size.
func TestViewEscapesHostileText(t *testing.T) {
	t.Parallel()
	for _, w := range []int{40, 60, 100, 160} {
		m := scene(t, themes.Default(true), w, 24)
		out := m.render()
		if strings.ContainsRune(out, '\u202e') || strings.Contains(out, "\x1b[2J") {
			t.Fatalf("width %d: raw hostile text on screen", w)
		}
		checkFrame(t, out, w, 24)
	}
}
