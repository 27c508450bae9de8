// Package themes turns a colour palette into every lipgloss style the sluice
// console draws with.
//
// A [Palette] names colours by what they mean (Approve, Deny, Danger), not by
// hue. Built-in palettes (dark, light, high-contrast) are TOML files embedded
// in the binary; a user may add or override one with a file in
// $XDG_CONFIG_HOME/sluice/themes. [New] builds a [Styles] value from a
// palette, grouped by screen, and [Mono] builds one for NO_COLOR that tells
// verdicts apart by text and weight alone.
//
// The package refuses two things. No colour literal appears outside it: other
// packages take colours from a [Styles] or its [Palette], never from
// lipgloss.Color. And it keeps no package-level mutable theme: every call to
// [Load], [Default], [Mono] or [New] returns a fresh [Styles] that the caller
// owns and passes down explicitly.
//
// A theme file is flat TOML with snake_case keys, one per palette colour, each
// a "#rrggbb" string or an ANSI colour number "0" to "255", plus an optional
// boolean "dark". Unknown keys and malformed colours are errors; keys left out
// take the dark theme's value.
package themes
