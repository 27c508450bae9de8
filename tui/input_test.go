package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

func TestLineInputEditing(t *testing.T) {
	t.Parallel()
	var in lineInput
	in.Focus()
	in.SetWidth(40)
	for _, r := range "go test ./..." {
		in.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	in.Update(tea.KeyPressMsg{Code: tea.KeyBackspace})
	in.Update(tea.KeyPressMsg{Code: tea.KeyHome})
	in.Update(tea.KeyPressMsg{Code: 'x', Text: "x"})
	if got := in.Value(); got != "xgo test ./.." {
		t.Fatalf("value %q", got)
	}
	in.Update(tea.KeyPressMsg{Code: tea.KeyEnd})
	in.Update(tea.KeyPressMsg{Code: 'w', Mod: tea.ModCtrl})
	if got := in.Value(); got != "xgo test " {
		t.Fatalf("after ctrl+w: %q", got)
	}
	// Pasted newlines cannot end the line; pasted escapes show escaped.
	in.Update(tea.PasteMsg{Content: "a\nb\x1b[2J"})
	if got := in.Value(); got != "xgo test a b\x1b[2J" {
		t.Fatalf("after paste: %q", got)
	}
	if v := in.View(); strings.Contains(v, "\x1b[2J") || !strings.Contains(v, `\x1b[2J`) {
		t.Errorf("view shows the raw escape: %q", v)
	}
}
