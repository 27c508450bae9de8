package tui

import "charm.land/bubbles/v2/key"

// KeyMap is every key the console answers to. Tests press these bindings,
// never literal keys.
type KeyMap struct {
	Approve, Deny, Edit, ApproveRule, Kill key.Binding
	// ApproveRun allows a connect request's host for the rest of the
	// asking run.
	ApproveRun key.Binding
	// GoAhead lets a run that waits for its turn behind another in the
	// same project start now.
	GoAhead                           key.Binding
	Undo, Force, Trust, Mark          key.Binding
	ApproveUnconfined                 key.Binding
	Up, Down, Tab, Filter, Help, Quit key.Binding
	ScrollUp, ScrollDown, Top, Bottom key.Binding
	Follow                            key.Binding
	// WebDevices lists the browsers paired with the web approver, to
	// revoke one.
	WebDevices         key.Binding
	NextHunk, PrevHunk key.Binding
	Yes, No, Submit    key.Binding
}

// DefaultKeyMap is protocol section 7's keys.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Approve:     key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "approve")),
		Deny:        key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "deny")),
		Edit:        key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "edit+approve")),
		ApproveRule: key.NewBinding(key.WithKeys("A"), key.WithHelp("A", "approve+rule")),
		ApproveRun:  key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "a host for its run")),
		Kill:        key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "kill")),
		GoAhead:     key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "let a waiting run go ahead")),
		Undo:        key.NewBinding(key.WithKeys("u"), key.WithHelp("u", "undo a run's changes")),
		Trust:       key.NewBinding(key.WithKeys("T"), key.WithHelp("T", "approve+trust for the session")),
		Mark:        key.NewBinding(key.WithKeys("space"), key.WithHelp("space", "mark for a batch")),
		Force:       key.NewBinding(key.WithKeys("F"), key.WithHelp("F", "force")),
		// Deliberately a shifted letter, away from a: it asks first.
		ApproveUnconfined: key.NewBinding(key.WithKeys("U"), key.WithHelp("U", "approve unconfined (asks)")),
		Up:                key.NewBinding(key.WithKeys("k", "up"), key.WithHelp("↑/k", "up")),
		Down:              key.NewBinding(key.WithKeys("j", "down"), key.WithHelp("↓/j", "down")),
		Tab:               key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "switch pane")),
		Filter:            key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Help:              key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:              key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		ScrollUp:          key.NewBinding(key.WithKeys("pgup", "ctrl+u"), key.WithHelp("pgup", "scroll up")),
		ScrollDown:        key.NewBinding(key.WithKeys("pgdown", "ctrl+d"), key.WithHelp("pgdn", "scroll down")),
		Top:               key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("home/g", "top")),
		Bottom:            key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("end/G", "bottom")),
		Follow:            key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "follow output")),
		WebDevices:        key.NewBinding(key.WithKeys("W"), key.WithHelp("W", "web devices")),
		NextHunk:          key.NewBinding(key.WithKeys("]"), key.WithHelp("]", "next hunk")),
		PrevHunk:          key.NewBinding(key.WithKeys("["), key.WithHelp("[", "prev hunk")),
		Yes:               key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "yes")),
		No:                key.NewBinding(key.WithKeys("n", "esc"), key.WithHelp("esc", "no")),
		Submit:            key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "confirm")),
	}
}

// ShortHelp is the help bar.
func (k KeyMap) ShortHelp() []key.Binding {
	// Shorter words than ? shows, so that 80 columns hold them all.
	short := func(b key.Binding, word string) key.Binding {
		b.SetHelp(b.Help().Key, word)
		return b
	}
	return []key.Binding{short(k.Approve, "approve"), short(k.Deny, "deny"), short(k.Edit, "edit"), short(k.ApproveRule, "rule"),
		short(k.Trust, "trust"), short(k.Kill, "kill"), short(k.Tab, "pane"), short(k.Help, "help"), short(k.Quit, "quit")}
}

// FullHelp is what ? shows.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Approve, k.Deny, k.Edit, k.ApproveRule, k.ApproveRun, k.Trust, k.Mark, k.Kill, k.GoAhead, k.ApproveUnconfined, k.Undo},
		{k.Up, k.Down, k.Tab, k.Filter},
		{k.ScrollUp, k.ScrollDown, k.Top, k.Bottom, k.Follow, k.NextHunk, k.PrevHunk},
		{k.WebDevices, k.Help, k.Quit},
	}
}
