package themes

import "charm.land/lipgloss/v2"

// Mono returns styles without any colour, for NO_COLOR or a terminal that
// cannot show colour. Every colour in its Palette is lipgloss.NoColor{} and
// no style sets a foreground, background or border colour. Verdicts stay
// apart by their text and weight: deny is bold and reversed, ask is bold,
// allow is faint.
func Mono() *Styles {
	var none lipgloss.NoColor
	s := New(Palette{
		Name: "mono",
		Fg:   none, FgSubtle: none, FgMuted: none, Bg: none, BgSelected: none,
		Border: none, BorderFocused: none, Accent: none,
		Approve: none, Deny: none, Warn: none, Danger: none,
		DiffAdd: none, DiffDel: none, DiffHunk: none,
	})
	// What colour told apart in New, weight and reverse video tell apart
	// here. Each style starts from a plain one so no weight leaks across.
	plain := lipgloss.NewStyle()
	badge := plain.Padding(0, 1)

	s.App.Flag = badge.Bold(true).Reverse(true)

	s.Pane.Title = plain
	s.Pane.TitleFocused = plain.Bold(true).Reverse(true)

	s.Queue.Selected = s.Queue.Item.Bold(true).Reverse(true)
	s.Queue.Age = plain.Faint(true)

	s.Badge.Allow = badge.Faint(true)
	s.Badge.Ask = badge.Bold(true)
	s.Badge.Deny = badge.Bold(true).Reverse(true)
	s.Badge.Running = badge.Italic(true)
	s.Badge.Done = badge.Faint(true)
	s.Badge.Failed = badge.Bold(true)
	s.Badge.Timeout = badge.Bold(true)
	s.Badge.Killed = badge.Bold(true).Reverse(true)
	s.Badge.Expired = badge.Faint(true)
	s.Badge.Invalid = badge.Bold(true).Reverse(true)

	s.Detail.Label = plain.Faint(true)
	s.Detail.Escaped = plain.Bold(true).Underline(true).Reverse(true)

	s.Diff.Hunk = plain.Faint(true)
	s.Diff.Add = plain.Bold(true)
	s.Diff.Del = plain.Faint(true)
	s.Diff.Context = plain

	s.Help.Sep = plain.Faint(true)

	s.Dialog.ButtonFocused = s.Dialog.Button.Bold(true).Reverse(true)
	s.Dialog.Input = s.Dialog.Input.Underline(true)
	return s
}
