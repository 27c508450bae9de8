package themes

import (
	"image/color"

	"charm.land/lipgloss/v2"
)

// Styles holds every lipgloss style the console draws with, grouped by
// screen. Build one with New, Load, Default or Mono; the zero value draws
// plain text.
type Styles struct {
	// Palette is the palette the styles were built from.
	Palette Palette

	// App styles the title bar, status bar and errors. Flag is the red
	// "hidden characters" warning flag.
	App struct{ Title, Subtle, Error, Status, Flag lipgloss.Style }
	// Pane styles the boxes around the queue, detail and output panes. The
	// border styles are rounded borders with Padding(0, 1) and no margins.
	Pane struct{ Border, BorderFocused, Title, TitleFocused lipgloss.Style }
	// Queue styles the list of pending and finished requests. Item and
	// Selected have Padding(0, 1). Host is the box a fleet request is on.
	Queue struct{ Item, Selected, Age, Agent, Host, Kind, Countdown, Empty lipgloss.Style }
	// Badge styles the short verdict and status badges, such as " ASK ".
	// Each has Padding(0, 1): render the bare word. Styles.BadgeFor picks
	// one by name.
	Badge struct {
		Allow, Ask, Deny, Running, Done, Failed, Timeout, Killed, Expired, Invalid lipgloss.Style
	}
	// Detail styles the request detail view. Escaped is how an escaped
	// control or bidi character (\x1b, <U+202E>) is shown inside Command.
	Detail struct{ Label, Value, Command, Escaped, Reason, Rule, Category lipgloss.Style }
	// Diff styles a unified diff of a proposed file edit.
	Diff struct{ File, Hunk, Add, Del, Context lipgloss.Style }
	// Help styles the key help line: a key, its description, and the
	// separator between entries.
	Help struct{ Key, Desc, Sep lipgloss.Style }
	// Dialog styles the confirmation dialog. Box is a rounded border with
	// Padding(1, 2) and no margins.
	Dialog struct{ Box, Title, Text, Button, ButtonFocused, Input lipgloss.Style }
}

// New builds every style from p. A colour that is nil or lipgloss.NoColor
// is left unset, so a palette without colours yields styles without any.
func New(p Palette) *Styles {
	s := &Styles{Palette: p}
	base := lipgloss.NewStyle()
	text := fg(base, p.Fg)
	subtle := fg(base, p.FgSubtle)
	muted := fg(base, p.FgMuted)
	accent := fg(base, p.Accent)
	// Verdicts are solid badges; result statuses are coloured words.
	badge := base.Padding(0, 1).Bold(true)
	solid := func(c color.Color) lipgloss.Style { return bg(fg(badge, p.Bg), c) }
	word := func(c color.Color) lipgloss.Style { return fg(badge, c) }

	s.App.Title = accent.Bold(true)
	s.App.Subtle = subtle
	s.App.Error = fg(base, p.Deny).Bold(true)
	s.App.Status = muted
	s.App.Flag = solid(p.Danger)

	s.Pane.Border = borderFg(base.Border(lipgloss.RoundedBorder()).Padding(0, 1), p.Border)
	s.Pane.BorderFocused = borderFg(s.Pane.Border, p.BorderFocused)
	s.Pane.Title = subtle.Bold(true)
	s.Pane.TitleFocused = fg(s.Pane.Title, p.Accent)

	s.Queue.Item = text.Padding(0, 1)
	s.Queue.Selected = bg(s.Queue.Item.Bold(true), p.BgSelected)
	s.Queue.Age = muted
	s.Queue.Agent = subtle
	s.Queue.Host = accent
	s.Queue.Kind = accent
	s.Queue.Countdown = fg(base, p.Warn)
	s.Queue.Empty = muted.Italic(true)

	s.Badge.Allow = solid(p.Approve)
	s.Badge.Ask = solid(p.Warn)
	s.Badge.Deny = solid(p.Deny)
	s.Badge.Running = word(p.Accent)
	s.Badge.Done = word(p.Approve)
	s.Badge.Failed = word(p.Deny)
	s.Badge.Timeout = word(p.Warn)
	s.Badge.Killed = word(p.Danger)
	s.Badge.Expired = word(p.FgMuted)
	s.Badge.Invalid = solid(p.Danger)

	s.Detail.Label = subtle
	s.Detail.Value = text
	s.Detail.Command = text
	s.Detail.Escaped = fg(base, p.Danger).Bold(true).Underline(true)
	s.Detail.Reason = subtle.Italic(true)
	s.Detail.Rule = accent
	s.Detail.Category = fg(base, p.Warn)

	s.Diff.File = text.Bold(true)
	s.Diff.Hunk = fg(base, p.DiffHunk)
	s.Diff.Add = fg(base, p.DiffAdd)
	s.Diff.Del = fg(base, p.DiffDel)
	s.Diff.Context = subtle

	s.Help.Key = subtle.Bold(true)
	s.Help.Desc = muted
	s.Help.Sep = fg(base, p.Border)

	s.Dialog.Box = borderFg(base.Border(lipgloss.RoundedBorder()).Padding(1, 2), p.BorderFocused)
	s.Dialog.Title = accent.Bold(true)
	s.Dialog.Text = text
	s.Dialog.Button = bg(text.Padding(0, 2), p.BgSelected)
	s.Dialog.ButtonFocused = bg(fg(s.Dialog.Button, p.Bg), p.Accent).Bold(true)
	s.Dialog.Input = bg(text.Padding(0, 1), p.BgSelected)
	return s
}

// absent reports whether c means "no colour".
func absent(c color.Color) bool {
	_, none := c.(lipgloss.NoColor)
	return c == nil || none
}

// fg sets c as st's foreground unless c is absent.
func fg(st lipgloss.Style, c color.Color) lipgloss.Style {
	if absent(c) {
		return st
	}
	return st.Foreground(c)
}

// bg sets c as st's background unless c is absent.
func bg(st lipgloss.Style, c color.Color) lipgloss.Style {
	if absent(c) {
		return st
	}
	return st.Background(c)
}

// borderFg sets c as the colour of st's border unless c is absent.
func borderFg(st lipgloss.Style, c color.Color) lipgloss.Style {
	if absent(c) {
		return st
	}
	return st.BorderForeground(c)
}
