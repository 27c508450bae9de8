package tui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/sluice-dev/sluice/queue"
)

// notify rings the bell and sends a desktop notification (OSC 9 and OSC
// 777) for requests that need a person. The text is the agent's, so it is
// escaped and stripped of anything that could end the sequence early.
func (m *Model) notify(n int, last *queue.Request) tea.Cmd {
	if !m.d.opt.Bell && !m.d.opt.Notify {
		return nil
	}
	var b strings.Builder
	if m.d.opt.Bell {
		b.WriteString("\a")
	}
	if m.d.opt.Notify && last != nil {
		text := fmt.Sprintf("%s asks: %s", plainText(last.Agent), plainText(last.Summary()))
		if n > 1 {
			text = fmt.Sprintf("%d requests need you; last: %s", n, text)
		}
		text = oscSafe(text)
		osc := "\x1b]9;sluice: " + text + "\x07" + "\x1b]777;notify;sluice;" + text + "\x07"
		if m.d.opt.Tmux {
			osc = tmuxPassthrough(osc)
		}
		b.WriteString(osc)
	}
	return tea.Raw(b.String())
}

// oscSafe keeps printable text only, without ';' (OSC 777's separator),
// at most 120 characters.
func oscSafe(s string) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == ';' {
			r = ' '
		}
		b.WriteRune(r)
		if n++; n >= 120 {
			b.WriteString("…")
			break
		}
	}
	return b.String()
}

// tmuxPassthrough wraps an escape sequence so tmux hands it to the outer
// terminal (needs 'set -g allow-passthrough on' in tmux 3.3+).
func tmuxPassthrough(seq string) string {
	return "\x1bPtmux;" + strings.ReplaceAll(seq, "\x1b", "\x1b\x1b") + "\x1b\\"
}
