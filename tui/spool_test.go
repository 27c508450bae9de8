package tui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sluice-dev/sluice/queue"
)

// TestSpoolShown: the console says which spool it watches, in its header
// and, while nothing waits, how an agent reaches it; a filter that hides
// everything says so rather than "nothing waits for you".
func TestSpoolShown(t *testing.T) {
	f := newFixture(t)
	f.m.d.opt.Spool = "~/.local/state/sluice/spool"
	f.update(tea.WindowSizeMsg{Width: 140, Height: 30})
	out := ansi.Strip(f.m.render())
	for _, want := range []string{"spool ~/.local/state/sluice/spool", "nothing waits for you", "watching ~/.local/state/sluice/spool", "sluice run -- CMD", "sluice install claude|codex|gemini"} {
		if !strings.Contains(out, want) {
			t.Errorf("the screen does not say %q:\n%s", want, out)
		}
	}
}

// TestFilterHidesAll: a filter that hides every pending request says so.
func TestFilterHidesAll(t *testing.T) {
	f := newFixture(t)
	r := &queue.Request{ID: "01JD3T6Q6Z8W9X0Y1Z2A3B4C5D", Kind: queue.KindExec, Command: "make test", Cwd: "/tmp"}
	f.update(engineMsg{events: []any{requestPending{req: r, verdict: queue.Verdict{Action: "ask"}, at: time.Now()}}})
	f.m.filter = "nomatch"
	lines := f.m.queueLines(60, 10)
	if len(lines) != 1 || !strings.Contains(ansi.Strip(lines[0]), "nothing matches the filter (1 pending; Esc clears it)") {
		t.Fatalf("got %q", lines)
	}
}
