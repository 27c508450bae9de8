package tui

import (
	"strings"
	"unicode"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// lineInput is the one-line text input of the console's dialogs (a deny
// reason, an edited command, a filter). It is small on purpose: the
// bubbles textinput links go-runewidth, whose init costs every sluice
// process (sluice run included) ~30 ms.
type lineInput struct {
	Prompt  string
	value   []rune
	pos     int // cursor, in runes
	width   int
	focused bool
}

func (in *lineInput) Reset()            { in.value, in.pos = nil, 0 }
func (in *lineInput) SetValue(s string) { in.value = []rune(s); in.pos = len(in.value) }
func (in *lineInput) Value() string     { return string(in.value) }
func (in *lineInput) CursorEnd()        { in.pos = len(in.value) }
func (in *lineInput) SetWidth(w int)    { in.width = w }
func (in *lineInput) Focus()            { in.focused = true }
func (in *lineInput) Blur()             { in.focused = false }
func (in *lineInput) insert(s string) {
	in.value = append(in.value[:in.pos], append([]rune(s), in.value[in.pos:]...)...)
	in.pos += len([]rune(s))
}
func (in *lineInput) deleteRange(a, b int) {
	in.value = append(in.value[:a], in.value[b:]...)
	in.pos = a
}

// Update edits the value for a key press or a paste.
func (in *lineInput) Update(msg tea.Msg) {
	switch msg := msg.(type) {
	case tea.PasteMsg:
		// A pasted newline would end the line; it becomes a space.
		in.insert(strings.Map(func(r rune) rune {
			if r == '\n' || r == '\r' {
				return ' '
			}
			return r
		}, msg.Content))
	case tea.KeyPressMsg:
		switch msg.String() {
		case "left", "ctrl+b":
			in.pos = max(0, in.pos-1)
		case "right", "ctrl+f":
			in.pos = min(len(in.value), in.pos+1)
		case "home", "ctrl+a":
			in.pos = 0
		case "end", "ctrl+e":
			in.pos = len(in.value)
		case "backspace", "ctrl+h":
			if in.pos > 0 {
				in.deleteRange(in.pos-1, in.pos)
			}
		case "delete", "ctrl+d":
			if in.pos < len(in.value) {
				in.value = append(in.value[:in.pos], in.value[in.pos+1:]...)
			}
		case "ctrl+u":
			in.deleteRange(0, in.pos)
		case "ctrl+k":
			in.value = in.value[:in.pos]
		case "ctrl+w":
			i := in.pos
			for i > 0 && unicode.IsSpace(in.value[i-1]) {
				i--
			}
			for i > 0 && !unicode.IsSpace(in.value[i-1]) {
				i--
			}
			in.deleteRange(i, in.pos)
		default:
			if msg.Text != "" {
				in.insert(msg.Text)
			}
		}
	}
}

// View shows the prompt and the value (escaped: what is typed or pasted
// is shown as it will be used), scrolled so the cursor shows, with the
// cursor as a reversed cell.
func (in *lineInput) View() string {
	before := plainText(string(in.value[:in.pos]))
	at, after := " ", ""
	if in.pos < len(in.value) {
		at = plainText(string(in.value[in.pos : in.pos+1]))
		after = plainText(string(in.value[in.pos+1:]))
	}
	room := max(4, in.width-ansi.StringWidth(in.Prompt)-1)
	if w := ansi.StringWidth(before); w > room-1 {
		before = "…" + ansi.TruncateLeft(before, w-room+2, "")
	}
	if !in.focused {
		return in.Prompt + before + at + after
	}
	line := in.Prompt + before + "\x1b[7m" + at + "\x1b[27m" + after
	return ansi.Truncate(line, ansi.StringWidth(in.Prompt)+room+1, "…")
}
