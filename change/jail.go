package change

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxLinks bounds symlink resolution, as the kernel does (ELOOP).
const maxLinks = 255

// fileJail is the set of directories file changes may touch, each absolute
// and with its own symlinks resolved. An empty fileJail allows every path.
type fileJail []string

func newFileJail(roots []string) (fileJail, error) {
	j := make(fileJail, 0, len(roots))
	for _, r := range roots {
		if r == "" {
			continue
		}
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, fmt.Errorf("exec: jail %q: %w", r, err)
		}
		res, err := resolveSymlinks(abs)
		if err != nil {
			return nil, fmt.Errorf("exec: jail %q: %w", r, err)
		}
		j = append(j, res)
	}
	return j, nil
}

// rootFor returns the jail directory that holds p (already resolved), or
// false if none does. With an empty jail every path is held by "/".
func (j fileJail) rootFor(p string) (string, bool) {
	if len(j) == 0 {
		return string(filepath.Separator), true
	}
	for _, r := range j {
		if within(r, p) {
			return r, true
		}
	}
	return "", false
}

// within reports whether p is dir or lies beneath it (both clean, absolute).
func within(dir, p string) bool {
	if dir == string(filepath.Separator) {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

// resolveSymlinks is filepath.EvalSymlinks for a path whose tail may not
// exist yet: links are followed as far as the path exists, including a
// dangling link whose target would be created. p must be absolute.
func resolveSymlinks(p string) (string, error) {
	p = filepath.Clean(p)
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("path %q is not absolute", p)
	}
	sep := string(filepath.Separator)
	resolved := sep
	rest := strings.Split(strings.TrimPrefix(p, sep), sep)
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, c)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			// Nothing below a missing name exists, so nothing below is a
			// link: the rest resolves lexically.
			return filepath.Join(append([]string{next}, rest...)...), nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			resolved = next
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("%s: too many levels of symbolic links", p)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			resolved = sep
		}
		rest = append(strings.Split(target, sep), rest...)
	}
	return resolved, nil
}

// resolveTarget makes name absolute against cwd, resolves its symlinks and
// checks the result against the jail.
func resolveTarget(j fileJail, cwd, name string) (string, error) {
	if name == "" {
		return "", errors.New("exec: empty path")
	}
	p := name
	if !filepath.IsAbs(p) {
		if cwd == "" || !filepath.IsAbs(cwd) {
			return "", fmt.Errorf("exec: relative path %q needs an absolute cwd", name)
		}
		p = filepath.Join(cwd, p)
	}
	p = filepath.Clean(p)
	res, err := resolveSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("exec: resolve %s: %w", p, err)
	}
	if _, ok := j.rootFor(res); !ok {
		if res != p {
			return "", fmt.Errorf("exec: %s resolves through a symlink to %s, outside the jail (%s)", p, res, strings.Join(j, ", "))
		}
		return "", fmt.Errorf("exec: %s is outside the jail (%s)", p, strings.Join(j, ", "))
	}
	return res, nil
}
