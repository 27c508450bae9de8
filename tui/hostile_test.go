package tui

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sluice-dev/sluice/queue"
	"github.com/sluice-dev/sluice/themes"
	"github.com/sluice-dev/sluice/tui/screen"
)

// Terminal injection through the console: agent text (commands, paths,
// notes, names, tool input), command output, results and what a person
// pastes, holding escape sequences, C1 controls, bidi overrides,
// invisible characters, invalid UTF-8 and very long lines. Every frame
// must hold only SGR escapes, fit the terminal exactly, and show none of
// it raw; a request holding any of it is flagged.

// hostileText is agent text a terminal would act on. raw, when set, is a
// sequence that must never reach the screen as it is (everything else is
// caught by cleanFrame's generic rules).
var hostileText = []struct{ name, text, raw string }{
	// The long ones first: the newest run's output shows in every frame.
	{"combining marks", "Z" + strings.Repeat("\u0301", 500), ""},
	{"wide runes", strings.Repeat("漢字😀", 700), ""},
	{"a very long line", strings.Repeat("A", 10000), ""},
	{"a long line of escapes", strings.Repeat("\x1b[2J\u202e", 500), ""},
	{"CSI 2J", "\x1b[2J\x1b[3J\x1b[H", ""},
	{"cursor up, erase line", "\x1b[1A\x1b[2K\rgit status", ""},
	{"cursor to 999,999", "\x1b[999;999Hx\x1b[1;1H", ""},
	{"save and restore cursor", "\x1b7\x1b[5;5Hhidden\x1b8", ""},
	{"OSC 0 title, BEL", "\x1b]0;pwned\x07", ""},
	{"OSC 2 title, ST", "\x1b]2;pwned\x1b\\", ""},
	{"OSC 52 clipboard", "\x1b]52;c;cm0gLXJmIH4=\x07", ""},
	{"OSC 8 hyperlink", "\x1b]8;;https://evil.example\x07click me\x1b]8;;\x07", ""},
	{"OSC 9 notification", "\x1b]9;you have mail\x07", ""},
	{"DCS DECRQSS", "\x1bP1$qm\x1b\\", ""},
	{"sixel", "\x1bPq#0;2;0;0;0#0~~@@vv@@~~\x1b\\", ""},
	{"APC kitty graphics", "\x1b_Gf=100;AAAA\x1b\\", ""},
	{"PM and SOS", "\x1b^privacy\x1b\\\x1bXsos\x1b\\", ""},
	{"SGR conceal", "safe \x1b[5;7;8mrm -rf ~\x1b[0m", "\x1b[5;7;8m"},
	{"SGR true colour left open", "\x1b[38;2;1;2;3;48;2;1;2;3m", "\x1b[38;2;1;2;3;48;2;1;2;3m"},
	{"raw 8-bit C1", "\x9b31m\x9d0;t\x07\x90q\x9c", ""},
	{"C1 as UTF-8", "\u009b2J\u0085\u009d0;t\u009c", ""},
	{"RLO", "txt.\u202esh", ""},
	{"isolates", "\u2066rm -rf ~\u2069 \u2067x\u2069 \u2068y\u2069", ""},
	{"embeddings and marks", "\u202a\u202b\u202c\u202d\u200e\u200f\u061c", ""},
	{"zero-width", "r\u200bm \u200c-\u200drf\u2060 \ufeff~", ""},
	{"separators", "a\u2028b\u2029c\u0085d", ""},
	{"invisible others", "\u00ad\u3164\u115f\ufe0f\U000e0041\ue000\ufffd", ""},
	{"invalid UTF-8", "\xff\xfe\xc3\x28\xed\xa0\x80\xf8\x88\x80\x80\x80", ""},
	{"C0 controls", "\x00\x01\a\b\b\b\t\v\f\x0e\x0f\x7f", ""},
	{"CR over the line", "rm -rf ~\rls -la   ", ""},
	{"newlines", "line one\nline two\r\nline three\n\n", ""},
	{"incomplete escape at the end", "echo \x1b", ""},
	{"incomplete CSI at the end", "echo \x1b[", ""},
}

// long reports whether a hostile text is one of the long ones, which go
// in fewer places to keep the suite fast.
func long(s string) bool { return len(s) > 200 }

// hostileScene is a console holding, for each hostile text, pending
// requests of every kind with it in every field, and finished runs with
// it in their results. With screens, runs also show it as their output
// on an emulated screen (see TestHostileOutput for what that may show).
func hostileScene(t *testing.T, st *themes.Styles, w, h int, screens bool) *Model {
	t.Helper()
	at := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	judge := hostileVerdicts{}
	m := New(Options{Styles: st, Now: func() time.Time { return at }, Actor: "alice",
		Engine: &queue.Engine{Judge: judge}})
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	var events []any
	var previews []previewedMsg
	n := 0
	id := func() string { n++; return fmt.Sprintf("01JDH0STILE%015d", n) }
	for _, x := range hostileText {
		s := x.text
		reqs := []*queue.Request{{ID: id(), Kind: queue.KindExec, Command: "echo " + s + " done", Cwd: "/home/alice/" + s,
			Agent: "agent" + s, Session: s, Note: "note " + s}}
		if !long(s) {
			reqs = append(reqs,
				&queue.Request{ID: id(), Kind: queue.KindTool, Tool: "Tool" + s, Input: json.RawMessage(`{"query": "` + s + `"}`), Agent: s},
				&queue.Request{ID: id(), Kind: queue.KindWrite, Path: "/home/alice/" + s + "/x.go", Content: s, Cwd: "/home/alice"},
				&queue.Request{ID: id(), Kind: queue.KindPatch, Diff: s, Cwd: "/home/alice/" + s})
			previews = append(previews,
				previewedMsg{id: reqs[2].ID, diff: "--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-old " + s + "\n+" + s + "\n"},
				previewedMsg{id: reqs[3].ID, err: errors.New("cannot apply " + s)})
		}
		for _, r := range reqs {
			events = append(events, requestPending{req: r, verdict: judge.Judge(r), at: at.Add(-time.Minute)})
		}

		// A run this console watched; and one answered elsewhere, shown
		// from its result alone.
		ran := &queue.Request{ID: id(), Kind: queue.KindExec, Command: "make " + s, Cwd: "/", Agent: s, Note: s}
		r := &run{req: ran, verdict: judge.Judge(ran), by: queue.ByHuman, started: at}
		if screens {
			r.screen = screen.New(40, 6, nil)
			t.Cleanup(r.screen.Close)
			_, _ = r.screen.Write([]byte("out " + s + "\r\nmore " + s + "\r\n"))
		}
		events = append(events, runStarted{run: r},
			runFinished{id: ran.ID, req: ran, at: at, res: queue.Result{Status: queue.StatusDone, ExitCode: new(int),
				Reason: s, Command: "edited " + s, DecidedBy: queue.ByHuman}})
		other := &queue.Request{ID: id(), Kind: queue.KindExec, Command: "make " + s, Agent: s}
		events = append(events, runFinished{id: other.ID, req: other, at: at, res: queue.Result{Status: queue.StatusDenied,
			Reason: "denied: " + s, OutputTail: "tail " + s + "\nlast " + s, Verdict: &queue.Verdict{Action: "ask", Reasons: []string{s}}}})
	}
	m.Update(engineMsg{events: events})
	for _, p := range previews {
		m.Update(p)
	}
	m.resized()
	m.graceUntil = time.Time{}
	return m
}

// hostileVerdicts asks about everything, giving the agent's own text
// back as a reason (as a policy quoting a command would).
type hostileVerdicts struct{}

func (hostileVerdicts) Judge(r *queue.Request) queue.Verdict {
	return queue.Verdict{Action: "ask", Category: "unknown", Risk: "high", Reasons: []string{"quotes " + r.Summary()},
		Parts: []queue.Part{{Command: r.Command, Category: "unknown", Action: "ask", Rule: "default: " + r.Command}}}
}

// cleanFrame checks the frame invariants (checkFrame) and cleanText.
func cleanFrame(t *testing.T, out string, w, h int, raw ...string) {
	t.Helper()
	checkFrame(t, out, w, h)
	cleanText(t, out, raw...)
}

// cleanLines checks lines a pane shows: only SGR escapes, clean text,
// and, when w > 0, none wider than w.
func cleanLines(t *testing.T, what string, lines []string, w int, raw ...string) {
	t.Helper()
	if w <= 0 {
		w = math.MaxInt
	}
	for i, l := range lines {
		if got := ansi.StringWidth(l); got > w {
			t.Errorf("%s: line %d is %d cells wide, room for %d: %q", what, i+1, got, w, ansi.Strip(l))
		}
	}
	out := strings.Join(lines, "\n")
	checkFrame(t, out, math.MaxInt, len(lines))
	cleanText(t, out, raw...)
}

// cleanText checks that nothing but SGR and printable, visible text
// reaches the terminal: valid UTF-8, no control character but \n, no C1,
// bidi, zero-width or other hidden rune, and none of raw. Escapes must
// already be known to be SGR (checkFrame).
func cleanText(t *testing.T, out string, raw ...string) {
	t.Helper()
	for i := 0; i < len(out); {
		if out[i] == 0x1b {
			i += strings.IndexByte(out[i:], 'm') + 1
			continue
		}
		r, n := utf8.DecodeRuneInString(out[i:])
		if r == utf8.RuneError && n <= 1 {
			t.Fatalf("invalid UTF-8 at byte %d: %q", i, out[max(0, i-20):min(len(out), i+20)])
		}
		if !shown(r) && r != '\n' {
			t.Fatalf("raw %U at byte %d: %q", r, i, out[max(0, i-20):min(len(out), i+20)])
		}
		i += n
	}
	for _, s := range raw {
		if s != "" && strings.Contains(out, s) {
			t.Fatalf("raw %q on screen", s)
		}
	}
}

var hostileSizes = []struct{ w, h int }{{60, 20}, {80, 24}, {140, 40}}

// panes is the inner width of the panes in m's layout: the queue and
// history on the left, the detail and output on the right.
func panes(m *Model) (left, right int) {
	l, fw := m.layout(), m.st.Pane.Border.GetHorizontalFrameSize()
	return l.leftW - fw, l.rightW - fw
}

// TestHostileQueueAndHistory checks, in each size, every row of the
// queue and the history, the whole detail of every request and run, and
// the output pane of every run; and whole frames for a sample of them.
// (Whole frames for all of them cost a minute under the race detector.)
func TestHostileQueueAndHistory(t *testing.T) {
	t.Parallel()
	var raw []string
	for _, x := range hostileText {
		raw = append(raw, x.raw)
	}
	for _, c := range []struct {
		w, h  int
		theme string
	}{{60, 20, "Dark"}, {80, 24, "NoColor"}, {140, 40, "Dark"}} {
		st := themes.Default(true)
		if c.theme == "NoColor" {
			st = themes.Mono()
		}
		t.Run(fmt.Sprintf("%dx%d/%s", c.w, c.h, c.theme), func(t *testing.T) {
			t.Parallel()
			m := hostileScene(t, st, c.w, c.h, false)
			left, right := panes(m)
			cleanLines(t, "queue", m.queueLines(left, len(m.pending)), left, raw...)
			for i, it := range m.pending {
				m.selected, m.detailTop = i, 0
				// The whole detail, not only what the pane shows; the
				// pane cuts a line too wide for it.
				detail := m.detailLines(right, 0)
				cleanLines(t, "detail", detail, 0, raw...)
				if wantFlag(it.req) && !strings.Contains(ansi.Strip(strings.Join(detail, "\n")), "hidden characters") {
					t.Errorf("request %d (%s %q) holds hidden characters, and its detail does not say so",
						i, it.req.Kind, it.req.Summary())
				}
				if i%9 == 0 {
					cleanFrame(t, m.render(), c.w, c.h, raw...)
				}
			}
			m.focus = focusHistory
			cleanLines(t, "history", m.historyLines(left, len(m.history)), left, raw...)
			_, rows := m.outputInner()
			for i := range m.history {
				m.histSel = i
				cleanLines(t, "detail", m.detailLines(right, 0), 0, raw...)
				cleanLines(t, "output", m.outputLines(right, rows), 0, raw...) // cut by the pane too
				if i%9 == 0 {
					cleanFrame(t, m.render(), c.w, c.h, raw...)
				}
			}
		})
	}
}

// TestHostileOutput: a run's output goes through a terminal emulator,
// which obeys the escapes meant for it, so the output pane may show what
// an agent's text may not (U+FFFD for bad bytes, zero-width runes); but
// no control character, no escape but SGR, and no bidi control reaches
// the terminal, in any size.
func TestHostileOutput(t *testing.T) {
	t.Parallel()
	var bidi []string
	for _, sz := range hostileSizes {
		m := hostileScene(t, themes.Default(true), sz.w, sz.h, true)
		m.focus = focusHistory // the output of the selected run
		_, right := panes(m)
		_, rows := m.outputInner()
		for i := range m.history {
			if runAt(m, i).screen == nil {
				continue
			}
			m.histSel = i
			shown := m.outputLines(right, rows)
			if i%4 == 0 {
				out := m.render()
				checkFrame(t, out, sz.w, sz.h)
				shown = append(shown, out)
			}
			for _, s := range shown {
				for i := 0; i < len(s); {
					if s[i] == 0x1b {
						i += strings.IndexByte(s[i:], 'm') + 1
						continue
					}
					r, n := utf8.DecodeRuneInString(s[i:])
					switch {
					case r == utf8.RuneError && n <= 1:
						t.Fatalf("invalid UTF-8 at byte %d: %q", i, s[max(0, i-20):min(len(s), i+20)])
					case r < 0x20 && r != '\n', r >= 0x7f && r < 0xa0:
						t.Fatalf("raw %U at byte %d: %q", r, i, s[max(0, i-20):min(len(s), i+20)])
					case bidiControl(r):
						bidi = append(bidi, fmt.Sprintf("%dx%d: %U in %q", sz.w, sz.h, r, s[max(0, i-20):min(len(s), i+20)]))
					}
					i += n
				}
			}
		}
	}
	if len(bidi) > 0 {
		t.Errorf("bidi controls from a command's output reached the frame, where they can reorder "+
			"the rest of its line on a bidi-aware terminal; %d times, first: %s", len(bidi), bidi[0])
	}
}

// runAt is the run the history shows at row i.
func runAt(m *Model, i int) *run { return m.history[len(m.history)-1-i] }

// shown reports whether a terminal draws r as the visible glyph (or
// space) it is. It is the hostile tests' own oracle, read off Unicode's
// properties rather than queue.Printable, which the console under test
// uses: no control (Cc), format character (Cf: bidi, zero-width, tags),
// line or paragraph separator, private-use rune, variation selector or
// other default-ignorable code point (Hangul fillers, the combining
// grapheme joiner), nor U+FFFD.
func shown(r rune) bool {
	for _, t := range []*unicode.RangeTable{unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Co,
		unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point} {
		if unicode.Is(t, r) {
			return false
		}
	}
	return r != utf8.RuneError
}

// bidiControl reports whether r is a Unicode Bidi_Control character.
func bidiControl(r rune) bool {
	return r == 0x061c || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// wantFlag reports whether a request's text holds anything a terminal
// would not show as typed (shown), newlines aside (the detail shows them as line breaks), in the
// fields the queue shows. (The tool input is left to TestHostileHiddenFlag.)
func wantFlag(r *queue.Request) bool {
	for _, s := range []string{r.Command, r.Path, r.Note, r.Agent, r.Session, r.Cwd, r.Tool} {
		for _, r := range strings.ReplaceAll(s, "\n", "") {
			if !shown(r) {
				return true
			}
		}
		if !utf8.ValidString(s) {
			return true
		}
	}
	return false
}

// TestHostileHiddenFlag: a request whose only hidden characters are in
// one field is flagged all the same.
func TestHostileHiddenFlag(t *testing.T) {
	t.Parallel()
	const rlo = "\u202e"
	base := func() *queue.Request {
		return &queue.Request{ID: "01JDFLAG0000000000000000000", Kind: queue.KindExec, Command: "ls", Cwd: "/home/alice", Agent: "a"}
	}
	for _, tc := range []struct {
		name string
		req  func(r *queue.Request)
		bug  string
	}{
		{"command", func(r *queue.Request) { r.Command += rlo }, ""},
		{"cwd", func(r *queue.Request) { r.Cwd += rlo }, ""},
		{"agent", func(r *queue.Request) { r.Agent += rlo }, ""},
		{"session", func(r *queue.Request) { r.Session = rlo }, ""},
		{"note", func(r *queue.Request) { r.Note = rlo }, ""},
		{"path", func(r *queue.Request) { r.Kind, r.Path = queue.KindWrite, "/tmp/x"+rlo }, ""},
		{"tool name", func(r *queue.Request) { r.Kind, r.Tool = queue.KindTool, "T"+rlo }, ""},
		{"tool input", func(r *queue.Request) {
			r.Kind, r.Tool, r.Input = queue.KindTool, "Bash", json.RawMessage(`{"command":"rm -rf ~ `+rlo+`"}`)
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := New(Options{Styles: themes.Mono(), Now: time.Now})
			m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
			r := base()
			tc.req(r)
			m.Update(engineMsg{events: []any{requestPending{req: r, verdict: queue.Verdict{Action: "ask"}, at: time.Now()}}})
			m.graceUntil = time.Time{}
			out := m.render()
			cleanFrame(t, out, 80, 24)
			flagged := strings.Contains(ansi.Strip(out), "hidden characters")
			switch {
			case !flagged && tc.bug != "":
				t.Skipf("known bug: %s", tc.bug)
			case !flagged:
				t.Errorf("not flagged:\n%s", ansi.Strip(out))
			case tc.bug != "":
				t.Logf("the known bug is fixed; remove its note: %s", tc.bug)
			}
		})
	}
}

// TestHostileDialogs types and pastes hostile text into every dialog:
// the deny reason, the edited command and its confirmation, the filter,
// the rule confirmation; and shows it in the status line.
func TestHostileDialogs(t *testing.T) {
	t.Parallel()
	for _, sz := range hostileSizes {
		t.Run(fmt.Sprintf("%dx%d", sz.w, sz.h), func(t *testing.T) {
			t.Parallel()
			m := hostileScene(t, themes.Default(true), sz.w, sz.h, false)
			// The dialog box, header and status line, which is where
			// dialogs show what was typed; and a whole frame now and then.
			n := 0
			frame := func(what string) {
				t.Helper()
				cleanLines(t, what, strings.Split(m.dialogBox(), "\n"), sz.w)
				cleanLines(t, what, []string{m.header(), m.statusLine()}, sz.w)
				if n++; n%7 == 0 {
					cleanFrame(t, m.render(), sz.w, sz.h)
				}
			}
			press := func(b key.Binding) {
				t.Helper()
				m.Update(keyMsg(b.Keys()[0]))
			}
			for _, x := range hostileText {
				s := x.text
				m.focus, m.mode, m.filter = focusQueue, modeNormal, ""
				m.selected, m.graceUntil = -1, time.Time{}
				for j, it := range m.pending {
					if it.req.Kind == queue.KindExec && it.req.Command == "echo "+s+" done" {
						m.selected = j
					}
				}
				if m.selected < 0 {
					t.Fatalf("no exec request holds %s", x.name)
				}

				press(m.keys.Deny)
				m.Update(tea.PasteMsg{Content: s})
				m.Update(tea.KeyPressMsg{Code: 'x', Text: s})
				frame(x.name + "/deny, pasted and typed")
				m.Update(tea.KeyPressMsg{Code: tea.KeyEscape})

				// A long command is read to its end before it can be
				// approved or edited.
				press(m.keys.Bottom)
				frame(x.name + "/scrolled to the end")
				press(m.keys.Edit)
				if !isOpen[*editDialog](m) {
					t.Fatalf("edit did not open (mode %s, status %q)", state(m), m.status)
				}
				m.Update(tea.PasteMsg{Content: s})
				m.Update(tea.KeyPressMsg{Code: tea.KeyHome})
				frame(x.name + "/edit, pasted, cursor home")
				// The edited command is judged off the UI goroutine.
				if _, cmd := m.Update(keyMsg(m.keys.Submit.Keys()[0])); cmd != nil {
					m.Update(cmd())
				}
				if !isOpen[*confirmEditDialog](m) {
					t.Fatalf("the edit was not checked (mode %s)", state(m))
				}
				frame(x.name + "/confirm edit")
				m.Update(tea.KeyPressMsg{Code: tea.KeyEscape})

				press(m.keys.Filter)
				m.Update(tea.PasteMsg{Content: s})
				frame(x.name + "/filter")
				press(m.keys.Submit)
				frame(x.name + "/filtered")
				m.filter = ""

				m.open(&ruleDialog{rule: ruleProposedMsg{id: m.current().req.ID, patterns: []string{"echo " + s, "echo " + s + " *"}, matches: []int{1, 3}}})
				frame(x.name + "/rule")
				m.dlg = nil

				m.Update(errMsg{err: errors.New("failed: " + s)})
				frame(x.name + "/status")
			}
		})
	}
}

// TestHostileNotification: the bell and desktop notification carry agent
// text inside an OSC; nothing in it may end the sequence or start another.
func TestHostileNotification(t *testing.T) {
	t.Parallel()
	for _, tmux := range []bool{false, true} {
		m := New(Options{Styles: themes.Mono(), Bell: true, Notify: true, Tmux: tmux})
		for _, x := range hostileText {
			for _, n := range []int{1, 3} {
				req := &queue.Request{ID: "01JDNOTIFY000000000000000000", Kind: queue.KindExec, Command: x.text, Agent: x.text}
				msg, ok := m.notify(n, req)().(tea.RawMsg)
				if !ok {
					t.Fatalf("%s: notify sent %T", x.name, msg)
				}
				out, _ := msg.Msg.(string)
				if tmux {
					inner, ok := strings.CutPrefix(out, "\a\x1bPtmux;")
					inner, ok2 := strings.CutSuffix(inner, "\x1b\\")
					if !ok || !ok2 {
						t.Fatalf("%s: not one tmux passthrough: %q", x.name, out)
					}
					out = "\a" + strings.ReplaceAll(inner, "\x1b\x1b", "\x1b")
				}
				text, ok := strings.CutPrefix(out, "\a\x1b]9;sluice: ")
				text, rest, ok2 := strings.Cut(text, "\a")
				if !ok || !ok2 || rest != "\x1b]777;notify;sluice;"+text+"\a" {
					t.Fatalf("%s: not a bell and two OSCs: %q", x.name, out)
				}
				for _, r := range text {
					if !shown(r) || r == ';' || r == utf8.RuneError {
						t.Fatalf("%s: %U in the notification text %q", x.name, r, text)
					}
				}
			}
		}
	}
}

// TestHostileHugeCommand: a command as long as a request file allows
// (1 MiB) renders and fits; and the work a frame takes does not grow with
// the agent's text beyond what the screen shows. Work is counted in heap
// allocations, which, unlike time, a loaded machine does not change; the
// test is not parallel so that other tests' allocations stay out of it.
func TestHostileHugeCommand(t *testing.T) {
	model := func(s string) *Model {
		m := New(Options{Styles: themes.Default(true), Now: time.Now})
		m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
		req := &queue.Request{ID: "01JDHUGE00000000000000000000", Kind: queue.KindExec, Command: s, Agent: "a", Note: s}
		m.Update(engineMsg{events: []any{requestPending{req: req, verdict: queue.Verdict{Action: "ask"}, at: time.Now()}}})
		return m
	}
	cleanFrame(t, model(strings.Repeat("x", queue.MaxRequestSize/2-200)).render(), 80, 24)

	// Bidi overrides, every one escaped, in two fields: the frame is the
	// same whatever their number, so its work should be too.
	work := func(n int) (allocs uint64, took time.Duration) {
		m := model(strings.Repeat("\u202e", n))
		cleanFrame(t, m.render(), 80, 24)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		m.render()
		took = time.Since(start)
		runtime.ReadMemStats(&after)
		return after.Mallocs - before.Mallocs, took
	}
	// Beyond maxShown runes a field is cut (with a marker): from there on
	// the work stays the same.
	const n = 2 * maxShown
	small, _ := work(n)
	big, took := work(4 * n)
	if big > 2*small {
		t.Errorf("a frame does work in proportion to the agent's text, not to the screen: "+
			"%d allocations with %d escaped runes, %d with %d (%s a frame). styledText (tui/text.go) "+
			"renders each escaped rune with its own lipgloss Render, and detailLines styles and wraps "+
			"every line of every field however few the pane shows, on every frame (once a second while "+
			"requests wait, 20 a second while one runs): a 1 MiB request of them takes seconds a frame "+
			"and makes the console unusable", small, 2*n, big, 8*n, took)
	}
}

// TestBackslashShownAsTyped: printf '\rbuild' shows in the queue and the
// detail as it runs, one backslash, not doubled; a real carriage return
// in the same place shows as an escape (styled, and flagged), so the two
// never look alike.
func TestBackslashShownAsTyped(t *testing.T) {
	f := newFixture(t)
	f.update(tea.WindowSizeMsg{Width: 120, Height: 36})
	f.submit(`printf '\rbuild'`)
	out := ansi.Strip(f.m.render())
	if strings.Contains(out, `\\rbuild`) || strings.Count(out, `printf '\rbuild'`) < 2 {
		t.Errorf("the typed backslash is not shown as typed (queue row and detail):\n%s", out)
	}
	if it := f.m.current(); it == nil || it.hidden {
		t.Error("a typed backslash flagged as hidden characters")
	}
	f.submit("printf '\rbuild'")
	f.update(keyMsg("j"))
	if it := f.m.current(); it == nil || !it.hidden {
		t.Error("a real carriage return is not flagged")
	}
}
