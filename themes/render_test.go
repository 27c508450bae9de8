package themes

import (
	"fmt"
	"image/color"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"charm.land/lipgloss/v2"
)

func TestMonoSetsNoColour(t *testing.T) {
	t.Parallel()
	s := Mono()
	for _, sl := range slots(&themeFile{}, &s.Palette) {
		if got := *sl.dst; got != (lipgloss.NoColor{}) {
			t.Errorf("mono palette %s = %v, want NoColor", sl.key, got)
		}
	}
	eachStyle(t, s, func(name string, st lipgloss.Style) {
		colours := map[string]any{
			"foreground":       st.GetForeground(),
			"background":       st.GetBackground(),
			"underline colour": st.GetUnderlineColor(),
			"border top":       st.GetBorderTopForeground(),
			"border right":     st.GetBorderRightForeground(),
			"border bottom":    st.GetBorderBottomForeground(),
			"border left":      st.GetBorderLeftForeground(),
			"border top bg":    st.GetBorderTopBackground(),
			"border right bg":  st.GetBorderRightBackground(),
			"border bottom bg": st.GetBorderBottomBackground(),
			"border left bg":   st.GetBorderLeftBackground(),
		}
		for what, c := range colours {
			if c != nil && c != (lipgloss.NoColor{}) {
				t.Errorf("mono %s sets %s %v", name, what, c)
			}
		}
	})
}

// sgr matches an SGR escape sequence and captures its parameters.
var sgr = regexp.MustCompile("\x1b\\[([0-9;:]*)m")

func TestMonoRendersNoColour(t *testing.T) {
	t.Parallel()
	eachStyle(t, Mono(), func(name string, st lipgloss.Style) {
		out := st.Render("x")
		for _, m := range sgr.FindAllStringSubmatch(out, -1) {
			for p := range strings.SplitSeq(m[1], ";") {
				code := strings.SplitN(p, ":", 2)[0]
				if isColourSGR(code) {
					t.Errorf("mono %s renders colour SGR %q in %q", name, m[0], out)
				}
			}
		}
	})
}

// isColourSGR reports whether an SGR parameter sets or resets a colour.
func isColourSGR(code string) bool {
	var n int
	if _, err := fmt.Sscan(code, &n); err != nil {
		return false
	}
	return n >= 30 && n <= 49 || n >= 90 && n <= 107 || n == 58 || n == 59
}

func TestMonoVerdictsDiffer(t *testing.T) {
	t.Parallel()
	s := Mono()
	// The same word in each, so only weight can tell them apart.
	allow, ask, deny := s.Badge.Allow.Render("X"), s.Badge.Ask.Render("X"), s.Badge.Deny.Render("X")
	if allow == ask || ask == deny || allow == deny {
		t.Errorf("mono badges look alike: allow %q, ask %q, deny %q", allow, ask, deny)
	}
	if got := s.Queue.Selected.Render("x"); got == s.Queue.Item.Render("x") {
		t.Errorf("mono selected item looks like an item: %q", got)
	}
}

func TestBadgeFor(t *testing.T) {
	t.Parallel()
	s := Default(true)
	badges := map[string]lipgloss.Style{
		"allow": s.Badge.Allow, "ask": s.Badge.Ask, "deny": s.Badge.Deny,
		"running": s.Badge.Running, "done": s.Badge.Done, "failed": s.Badge.Failed,
		"timeout": s.Badge.Timeout, "killed": s.Badge.Killed,
		"expired": s.Badge.Expired, "invalid": s.Badge.Invalid,
		"interrupted": s.Badge.Failed, "denied": s.Badge.Deny, "decided": s.Badge.Done,
		"": s.Badge.Ask, "bogus": s.Badge.Ask,
	}
	var seen []string
	for action, want := range badges {
		if got, want := s.BadgeFor(action).Render("X"), want.Render("X"); got != want {
			t.Errorf("BadgeFor(%q) renders %q, want %q", action, got, want)
		}
	}
	// Every badge must look different, or the mapping test proves nothing.
	v := reflect.ValueOf(s.Badge)
	for i := range v.NumField() {
		out := v.Field(i).Interface().(lipgloss.Style).Render("X")
		if slices.Contains(seen, out) {
			t.Errorf("dark Badge.%s looks like another badge: %q", v.Type().Field(i).Name, out)
		}
		seen = append(seen, out)
	}
}

func TestHighContrastDiffers(t *testing.T) {
	t.Parallel()
	hc, err := Load("high-contrast", "")
	if err != nil {
		t.Fatal(err)
	}
	dark := Default(true).Palette
	if hc.Palette.Fg == dark.Fg {
		t.Errorf("high-contrast Fg = dark Fg = %v", dark.Fg)
	}
	a, b := slots(&themeFile{}, &hc.Palette), slots(&themeFile{}, &dark)
	same := 0
	for i := range a {
		if *a[i].dst == *b[i].dst {
			same++
		}
	}
	if same > len(a)/4 {
		t.Errorf("high-contrast shares %d of %d colours with dark", same, len(a))
	}
}

func TestNewSetsEveryStyle(t *testing.T) {
	t.Parallel()
	eachStyle(t, Default(true), func(name string, st lipgloss.Style) {
		if reflect.DeepEqual(st, lipgloss.NewStyle()) {
			t.Errorf("dark %s is an empty style", name)
		}
	})
}

// contrast is the WCAG 2 contrast ratio of two colours.
func contrast(a, b color.Color) float64 {
	lum := func(c color.Color) float64 {
		r, g, bl, _ := c.RGBA()
		ch := func(v uint32) float64 {
			x := float64(v) / 0xffff
			if x <= 0.03928 {
				return x / 12.92
			}
			return math.Pow((x+0.055)/1.055, 2.4)
		}
		return 0.2126*ch(r) + 0.7152*ch(g) + 0.0722*ch(bl)
	}
	la, lb := lum(a), lum(b)
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

// TestTextContrast: every colour text is written in, labels and help
// included, reads at WCAG AA (4.5:1) on the background its theme is for.
func TestTextContrast(t *testing.T) {
	for _, name := range []string{"dark", "light", "high-contrast"} {
		p := mustBuiltin(name)
		bg := p.Bg // the terminal background the theme is for
		for what, c := range map[string]color.Color{"fg": p.Fg, "fg_subtle": p.FgSubtle, "fg_muted": p.FgMuted} {
			if r := contrast(c, bg); r < 4.5 {
				t.Errorf("%s: %s has contrast %.2f:1 on its background, want 4.5:1", name, what, r)
			}
		}
	}
}
