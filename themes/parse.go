package themes

import (
	"errors"
	"fmt"
	"image/color"
	"slices"
	"strconv"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/BurntSushi/toml"
)

// themeFile is the shape of a theme file. A nil field is a key the file
// leaves out.
type themeFile struct {
	Dark          *bool   `toml:"dark"`
	Fg            *string `toml:"fg"`
	FgSubtle      *string `toml:"fg_subtle"`
	FgMuted       *string `toml:"fg_muted"`
	Bg            *string `toml:"bg"`
	BgSelected    *string `toml:"bg_selected"`
	Border        *string `toml:"border"`
	BorderFocused *string `toml:"border_focused"`
	Accent        *string `toml:"accent"`
	Approve       *string `toml:"approve"`
	Deny          *string `toml:"deny"`
	Warn          *string `toml:"warn"`
	Danger        *string `toml:"danger"`
	DiffAdd       *string `toml:"diff_add"`
	DiffDel       *string `toml:"diff_del"`
	DiffHunk      *string `toml:"diff_hunk"`
}

// colourRule says what a colour value may be, for error messages.
const colourRule = `a colour is "#rrggbb" or an ANSI colour number "0" to "255"`

// decode parses the theme file src, named file in errors, into a palette
// called name. Keys src leaves out keep base's value; a colour still unset
// afterwards is an error.
func decode(name, file string, src []byte, base Palette) (Palette, error) {
	var f themeFile
	md, err := toml.Decode(string(src), &f)
	if err != nil {
		if pe, ok := errors.AsType[toml.ParseError](err); ok {
			return Palette{}, fmt.Errorf("themes: %s: line %d: %s", file, pe.Position.Line, pe.Message)
		}
		// A type mismatch, such as fg = 12 or dark = "yes".
		return Palette{}, fmt.Errorf("themes: %s: %s (dark is true or false; %s)", file, strings.TrimPrefix(err.Error(), "toml: "), colourRule)
	}
	p := base
	p.Name = name
	s := slots(&f, &p)
	keys := allowed(s)
	unknown := func(k toml.Key) error {
		return fmt.Errorf("themes: %s: unknown key %q (allowed: %s)", file, k.String(), strings.Join(keys, ", "))
	}
	// The toml package matches keys to fields case-insensitively, so "FG"
	// would decode into fg: check the spelling of every key, too.
	for _, k := range md.Keys() {
		if len(k) > 0 && !slices.Contains(keys, k[0]) {
			return Palette{}, unknown(k)
		}
	}
	if und := md.Undecoded(); len(und) > 0 {
		return Palette{}, unknown(und[0])
	}
	if f.Dark != nil {
		p.Dark = *f.Dark
	}
	for _, sl := range s {
		if sl.src == nil {
			if *sl.dst == nil {
				return Palette{}, fmt.Errorf("themes: %s: missing key %q", file, sl.key)
			}
			continue
		}
		c, err := parseColour(*sl.src)
		if err != nil {
			return Palette{}, fmt.Errorf("themes: %s: key %q: %w", file, sl.key, err)
		}
		*sl.dst = c
	}
	return p, nil
}

// parseColour turns a theme file's colour string into a colour. It is
// stricter than lipgloss.Color, which maps anything it cannot read to
// NoColor.
func parseColour(s string) (color.Color, error) {
	if strings.HasPrefix(s, "#") {
		if len(s) != 7 || strings.Trim(s[1:], "0123456789abcdefABCDEF") != "" {
			return nil, fmt.Errorf("bad colour %q: %s", s, colourRule)
		}
		return lipgloss.Color(s), nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || len(s) > 3 || n > 255 || strings.Trim(s, "0123456789") != "" {
		return nil, fmt.Errorf("bad colour %q: %s", s, colourRule)
	}
	return lipgloss.Color(strconv.Itoa(n)), nil
}

// allowed lists the keys a theme file may set.
func allowed(s []slot) []string {
	keys := []string{"dark"}
	for _, sl := range s {
		keys = append(keys, sl.key)
	}
	return keys
}
