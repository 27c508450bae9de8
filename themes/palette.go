package themes

import "image/color"

// Palette is a theme's set of semantic colours. Styles take every colour
// from it; nothing else in sluice names a colour.
type Palette struct {
	// Name is the theme's name: "dark", "mono", or a user file's basename.
	Name string
	// Dark reports whether the palette is meant for a dark terminal
	// background. It is false for the mono palette, which assumes nothing.
	Dark bool

	// Fg is the colour of ordinary text.
	Fg color.Color
	// FgSubtle is for secondary text: labels, context lines, agent names.
	FgSubtle color.Color
	// FgMuted is for the least important text: ages, help descriptions.
	FgMuted color.Color
	// Bg is the colour of text drawn on a coloured badge or button. Sluice
	// never paints the whole screen with it.
	Bg color.Color
	// BgSelected is the background of the selected queue item and inputs.
	BgSelected color.Color
	// Border is the colour of an unfocused pane border.
	Border color.Color
	// BorderFocused is the colour of the focused pane's and dialogs' border.
	BorderFocused color.Color
	// Accent marks titles, rule names and the focused button.
	Accent color.Color
	// Approve marks allow verdicts and successful results.
	Approve color.Color
	// Deny marks deny verdicts and failed results.
	Deny color.Color
	// Warn marks ask verdicts, pending requests and countdowns.
	Warn color.Color
	// Danger marks destructive commands and hidden or escaped characters.
	Danger color.Color
	// DiffAdd is the colour of added lines in a diff.
	DiffAdd color.Color
	// DiffDel is the colour of deleted lines in a diff.
	DiffDel color.Color
	// DiffHunk is the colour of a diff's hunk headers.
	DiffHunk color.Color
}

// slot ties one theme-file key to its value in a themeFile and its field in
// a Palette.
type slot struct {
	key string
	src *string
	dst *color.Color
}

// slots lists every colour key of a theme file, in the order the built-in
// files use, pairing f's values with p's fields.
func slots(f *themeFile, p *Palette) []slot {
	return []slot{
		{"fg", f.Fg, &p.Fg},
		{"fg_subtle", f.FgSubtle, &p.FgSubtle},
		{"fg_muted", f.FgMuted, &p.FgMuted},
		{"bg", f.Bg, &p.Bg},
		{"bg_selected", f.BgSelected, &p.BgSelected},
		{"border", f.Border, &p.Border},
		{"border_focused", f.BorderFocused, &p.BorderFocused},
		{"accent", f.Accent, &p.Accent},
		{"approve", f.Approve, &p.Approve},
		{"deny", f.Deny, &p.Deny},
		{"warn", f.Warn, &p.Warn},
		{"danger", f.Danger, &p.Danger},
		{"diff_add", f.DiffAdd, &p.DiffAdd},
		{"diff_del", f.DiffDel, &p.DiffDel},
		{"diff_hunk", f.DiffHunk, &p.DiffHunk},
	}
}
