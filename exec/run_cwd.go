package exec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// resolveCwd returns the directory a request runs in, with symlinks
// resolved (so the jail check and the chdir see the same path), or why it
// cannot run there. An empty cwd means the current directory.
func resolveCwd(cwd string, jail []string) (string, error) {
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("exec: current directory: %w", err)
		}
		cwd = wd
	}
	if !filepath.IsAbs(cwd) {
		return "", fmt.Errorf("exec: cwd %q is not an absolute path", cwd)
	}
	real, err := filepath.EvalSymlinks(cwd)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("exec: cwd %s does not exist", cwd)
	}
	if err != nil {
		return "", fmt.Errorf("exec: cwd: %w", err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("exec: cwd: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("exec: cwd %s is not a directory", cwd)
	}
	if len(jail) == 0 {
		return real, nil
	}
	for _, j := range jail {
		root, err := filepath.EvalSymlinks(j)
		if err != nil || !filepath.IsAbs(root) {
			continue
		}
		if cwdWithin(real, root) {
			return real, nil
		}
	}
	return "", fmt.Errorf("exec: cwd %s is outside the jail (%s)", cwd, strings.Join(jail, ", "))
}

// cwdWithin reports whether path p lies in or under dir; both are clean and
// absolute.
func cwdWithin(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return false
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)))
}
