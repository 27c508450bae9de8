package themes

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"charm.land/lipgloss/v2"
)

// eachStyle calls fn with the name and value of every style in s.
func eachStyle(t *testing.T, s *Styles, fn func(name string, st lipgloss.Style)) {
	t.Helper()
	styleType := reflect.TypeFor[lipgloss.Style]()
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		group := v.Field(i)
		if group.Type() == reflect.TypeFor[Palette]() {
			continue
		}
		for j := range group.NumField() {
			f := group.Field(j)
			if f.Type() != styleType {
				t.Fatalf("%s.%s is a %s, not a lipgloss.Style", v.Type().Field(i).Name, group.Type().Field(j).Name, f.Type())
			}
			fn(v.Type().Field(i).Name+"."+group.Type().Field(j).Name, f.Interface().(lipgloss.Style))
		}
	}
}

// writeTheme writes a theme file called name into dir.
func writeTheme(t *testing.T, dir, name, src string) string {
	t.Helper()
	path := filepath.Join(dir, name+".toml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestBuiltinsLoad(t *testing.T) {
	t.Parallel()
	wantDark := map[string]bool{"dark": true, "light": false, "high-contrast": true, "mono": false}
	for _, name := range Names("") {
		s, err := Load(name, "")
		if err != nil {
			t.Fatalf("Load(%q): %v", name, err)
		}
		if got := s.Palette.Name; got != name {
			t.Errorf("Load(%q).Palette.Name = %q", name, got)
		}
		if got, want := s.Palette.Dark, wantDark[name]; got != want {
			t.Errorf("Load(%q).Palette.Dark = %v, want %v", name, got, want)
		}
		eachStyle(t, s, func(field string, st lipgloss.Style) {
			if got := st.GetHorizontalMargins() + st.GetVerticalMargins(); got != 0 {
				t.Errorf("%s: %s has margins %d; pad inside boxes instead", name, field, got)
			}
		})
	}
}

func TestBuiltinFilesSetEveryKey(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"dark", "light", "high-contrast"} {
		src, err := builtin.ReadFile(name + ".toml")
		if err != nil {
			t.Fatal(err)
		}
		p, err := decode(name, name+".toml", src, Palette{})
		if err != nil {
			t.Errorf("%s.toml does not stand alone: %v", name, err)
			continue
		}
		for _, sl := range slots(&themeFile{}, &p) {
			if absent(*sl.dst) {
				t.Errorf("%s.toml: %s is absent", name, sl.key)
			}
		}
	}
}

func TestDefault(t *testing.T) {
	t.Parallel()
	if got := Default(true).Palette.Name; got != "dark" {
		t.Errorf("Default(true) is %q, want dark", got)
	}
	if got := Default(false).Palette.Name; got != "light" {
		t.Errorf("Default(false) is %q, want light", got)
	}
	if a, b := Default(true), Default(true); a == b {
		t.Error("Default returns a shared *Styles; each caller must own its own")
	}
}

func TestUserThemeErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, src, want string }{
		{"unknown key", "fgg = \"#ffffff\"\n", `unknown key "fgg"`},
		{"upper case", `FG = "#ffffff"`, `unknown key "FG"`},
		{"unknown table", "[colors]\nfg = \"#ffffff\"\n", `unknown key "colors"`},
		{"colour name", `fg = "red"`, `key "fg": bad colour "red"`},
		{"short hex", `accent = "#fff"`, `key "accent": bad colour "#fff"`},
		{"bad hex digit", `deny = "#gg0000"`, `key "deny": bad colour "#gg0000"`},
		{"ansi too big", `warn = "256"`, `key "warn": bad colour "256"`},
		{"ansi negative", `warn = "-1"`, `key "warn": bad colour "-1"`},
		{"ansi plus", `warn = "+5"`, `key "warn": bad colour "+5"`},
		{"empty", `bg = ""`, `key "bg": bad colour ""`},
		{"number not string", `fg = 12`, `"fg"`},
		{"dark not bool", `dark = "yes"`, `"dark"`},
		{"not toml", `fg = `, `line 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := writeTheme(t, dir, "mine", tt.src)
			_, err := Load("mine", dir)
			if err == nil {
				t.Fatalf("Load accepted %q", tt.src)
			}
			for _, want := range []string{path, tt.want} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestUserThemeLoadsAndShadows(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTheme(t, dir, "dark", `fg = "#010203"`)
	writeTheme(t, dir, "mine", "dark = false\naccent = \"212\"\n")

	s, err := Load("dark", dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Palette.Fg, lipgloss.Color("#010203"); got != want {
		t.Errorf("user dark.toml: Fg = %v, want %v", got, want)
	}
	s, err = Load("mine", dir)
	if err != nil {
		t.Fatal(err)
	}
	dark := Default(true).Palette
	if got, want := s.Palette.Accent, lipgloss.Color("212"); got != want {
		t.Errorf("mine: Accent = %v, want %v", got, want)
	}
	if got, want := s.Palette.Fg, dark.Fg; got != want {
		t.Errorf("mine: Fg = %v, want the dark theme's %v", got, want)
	}
	if s.Palette.Dark {
		t.Error("mine: Dark = true, want false")
	}
	if got := Names(dir); !slices.Contains(got, "mine") {
		t.Errorf("Names = %v, want it to contain mine", got)
	}
}
