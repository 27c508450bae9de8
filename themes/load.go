package themes

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// builtin holds the embedded theme files. The mono theme has no file: it has
// no colours to list.
//
//go:embed dark.toml light.toml high-contrast.toml
var builtin embed.FS

// builtinNames lists the built-in themes in the order Names reports them.
var builtinNames = [...]string{"dark", "light", "high-contrast", "mono"}

// Load returns the styles of the theme called name. A file name+".toml" in
// userDir wins over a built-in theme of the same name; userDir may be empty
// or missing. Load fails if the theme file is malformed, or if no theme has
// that name, in which case the error lists the available names.
func Load(name, userDir string) (*Styles, error) {
	if !validName(name) {
		return nil, fmt.Errorf("themes: invalid theme name %q (available: %s)", name, strings.Join(Names(userDir), ", "))
	}
	if userDir != "" {
		path := filepath.Join(userDir, name+".toml")
		src, err := os.ReadFile(path)
		switch {
		case err == nil:
			p, err := parseTheme(name, path, src)
			if err != nil {
				return nil, err
			}
			return New(p), nil
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("themes: %w", err)
		}
	}
	if name == "mono" {
		return Mono(), nil
	}
	src, err := builtin.ReadFile(name + ".toml")
	if err != nil {
		return nil, fmt.Errorf("themes: unknown theme %q (available: %s)", name, strings.Join(Names(userDir), ", "))
	}
	p, err := parseTheme(name, name+".toml", src)
	if err != nil {
		return nil, err
	}
	return New(p), nil
}

// Names lists the themes Load accepts: the built-in ones first, then the
// other .toml files in userDir, sorted. A missing or unreadable userDir adds
// nothing.
func Names(userDir string) []string {
	names := slices.Clone(builtinNames[:])
	if userDir == "" {
		return names
	}
	entries, err := os.ReadDir(userDir)
	if err != nil {
		return names
	}
	var user []string
	for _, e := range entries {
		n, ok := strings.CutSuffix(e.Name(), ".toml")
		if !ok || e.IsDir() || !validName(n) || slices.Contains(builtinNames[:], n) {
			continue
		}
		user = append(user, n)
	}
	slices.Sort(user)
	return append(names, user...)
}

// validName reports whether name can be a theme name: not empty, not hidden,
// and no path separator, so that Load never reads outside userDir.
func validName(name string) bool {
	return name != "" && !strings.HasPrefix(name, ".") && !strings.ContainsAny(name, `/\`)
}

// Default returns the built-in dark theme if dark is true and the built-in
// light theme otherwise, as chosen from the terminal's background colour.
func Default(dark bool) *Styles {
	if dark {
		return New(mustBuiltin("dark"))
	}
	return New(mustBuiltin("light"))
}

// parseTheme decodes a theme file, filling keys it leaves out from the
// built-in dark theme.
func parseTheme(name, file string, src []byte) (Palette, error) {
	return decode(name, file, src, mustBuiltin("dark"))
}

// mustBuiltin decodes an embedded theme file. The built-in dark theme sets
// every key. It panics on error: the embedded files are checked by tests, so
// an error here is a bug in sluice, not in the user's setup.
func mustBuiltin(name string) Palette {
	src, err := builtin.ReadFile(name + ".toml")
	if err != nil {
		panic(err)
	}
	base := Palette{Dark: true}
	if name != "dark" {
		base = mustBuiltin("dark")
	}
	p, err := decode(name, name+".toml", src, base)
	if err != nil {
		panic(err)
	}
	return p
}
