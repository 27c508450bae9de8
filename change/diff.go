package change

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
)

// diffContext is the number of unchanged lines around each hunk.
const diffContext = 3

// Diff renders the change as a git-style unified diff (go-udiff), for the
// preview: a "diff --git" line per file, "new file mode" and "deleted file
// mode" where they apply, /dev/null for the missing side, paths relative
// to the request's cwd when they lie under it. Files that do not change are
// left out. Agent text is returned raw; the caller escapes it for display.
func (c *Change) Diff() string {
	var b strings.Builder
	for i := range c.Files {
		writeFileDiff(&b, &c.Files[i], c.cwd)
	}
	return b.String()
}

func writeFileDiff(b *strings.Builder, f *FileChange, cwd string) {
	created, deleted := !f.Exists, f.Delete
	if !created && !deleted && bytes.Equal(f.Old, f.New) {
		return
	}
	label := diffLabel(f.Path, cwd)
	fmt.Fprintf(b, "diff --git %s %s\n", quoteName("a/"+label), quoteName("b/"+label))
	mode := 0o100000 | uint32(f.Mode.Perm())
	if created {
		fmt.Fprintf(b, "new file mode %06o\n", mode)
	}
	if deleted {
		fmt.Fprintf(b, "deleted file mode %06o\n", mode)
	}
	old, nw := string(f.Old), string(f.New)
	if deleted {
		nw = ""
	}
	if old == nw {
		return // an empty file created or deleted: git prints no hunks
	}
	from, to := quoteName("a/"+label), quoteName("b/"+label)
	if created {
		from = "/dev/null"
	}
	if deleted {
		to = "/dev/null"
	}
	// ToUnified only fails on inconsistent edits, and Lines' are not.
	u, err := udiff.ToUnified(from, to, old, udiff.Lines(old, nw), diffContext)
	if err != nil {
		fmt.Fprintf(b, "(diff of %s failed: %v)\n", label, err)
		return
	}
	b.WriteString(u)
}

// diffLabel is the path as the diff names it: relative to cwd when under
// it, else absolute without the leading slash (as git prints it).
func diffLabel(p, cwd string) string {
	if cwd != "" && filepath.IsAbs(cwd) {
		if rel, err := filepath.Rel(filepath.Clean(cwd), p); err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../") {
			return filepath.ToSlash(rel)
		}
	}
	return strings.TrimPrefix(filepath.ToSlash(p), "/")
}

// quoteName quotes a path as git does when it holds a quote, a backslash,
// a control character or a space at an end, so that it parses back.
func quoteName(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c == '"' || c == '\\' {
			return strconv.Quote(s)
		}
	}
	if strings.HasSuffix(s, " ") {
		return strconv.Quote(s)
	}
	return s
}
