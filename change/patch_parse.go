package change

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

var hunkHeader = lazyRegexp(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@`)

// parsePatch parses a unified diff as git diff and diff -u write it: one or
// more files, each with ---/+++ headers (a/ b/ prefixes or plain paths,
// /dev/null for created and deleted files, diff -u timestamps) and hunks.
// Text outside files (a commit message, "Only in" lines) is skipped. A git
// file header with no hunks creates or deletes an empty file. Renames,
// copies, mode changes and binary patches are refused.
func parsePatch(text string) ([]*filePatch, error) {
	lines := splitLines(text)
	var out []*filePatch
	var git *filePatch // a "diff --git" header not yet followed by ---/+++
	// flushGit keeps a git header that had no ---/+++: the creation or
	// deletion of an empty file.
	flushGit := func() {
		if git != nil && (git.oldName == "" || git.newName == "") {
			out = append(out, git)
		}
		git = nil
	}
	for i := 0; i < len(lines); {
		l := strings.TrimRight(lines[i], "\r\n")
		switch {
		case strings.HasPrefix(l, "diff --git "):
			flushGit()
			name, err := parseGitLine(strings.TrimPrefix(l, "diff --git "))
			if err != nil {
				return nil, fmt.Errorf("exec: patch: line %d: %w", i+1, err)
			}
			git = &filePatch{oldName: name, newName: name}
			i++
		case git != nil && isGitExtended(l):
			if err := gitExtended(git, l); err != nil {
				return nil, fmt.Errorf("exec: patch: line %d: %w", i+1, err)
			}
			i++
		case strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ "):
			fp, err := fileHeader(l, strings.TrimRight(lines[i+1], "\r\n"))
			if err != nil {
				return nil, fmt.Errorf("exec: patch: line %d: %w", i+1, err)
			}
			if git != nil {
				fp.mode = git.mode
				git = nil
			}
			i += 2
			for i < len(lines) && strings.HasPrefix(lines[i], "@@ ") {
				h, next, err := parseHunk(lines, i)
				if err != nil {
					return nil, fmt.Errorf("exec: patch: %s: hunk %d: %w", fp.name(), len(fp.hunks)+1, err)
				}
				fp.hunks = append(fp.hunks, h)
				i = next
			}
			if len(fp.hunks) == 0 {
				return nil, fmt.Errorf("exec: patch: %s: no hunks after the ---/+++ header", fp.name())
			}
			if i < len(lines) && isHunkBody(lines, i) {
				return nil, fmt.Errorf("exec: patch: %s: hunk %d: line %d: more lines than its header counts", fp.name(), len(fp.hunks), i+1)
			}
			out = append(out, fp)
		case strings.HasPrefix(l, "@@ "):
			return nil, fmt.Errorf("exec: patch: line %d: hunk without a ---/+++ file header", i+1)
		default:
			i++
		}
	}
	flushGit()
	if len(out) == 0 {
		return nil, fmt.Errorf("exec: patch: no file changes found (want a unified diff with ---/+++ headers)")
	}
	return out, nil
}

// isHunkBody reports whether line i looks like a hunk line, not the start
// of the next file or prose.
func isHunkBody(lines []string, i int) bool {
	l := lines[i]
	if l == "-- \n" {
		return false // git format-patch's signature separator
	}
	if strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ ") {
		return false
	}
	return l != "" && strings.ContainsRune(" -+\\", rune(l[0]))
}

func isGitExtended(l string) bool {
	for _, p := range []string{"new file mode ", "deleted file mode ", "old mode ", "new mode ", "index ",
		"similarity index ", "dissimilarity index ", "rename from ", "rename to ", "copy from ", "copy to ",
		"Binary files ", "GIT binary patch"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

// regularMode is the mode on a git "new file mode" or "deleted file mode"
// line (what), which must be a regular file's: only those can be
// created or deleted (done).
func regularMode(fp *filePatch, l, what, done string) (os.FileMode, error) {
	m, err := strconv.ParseUint(strings.TrimPrefix(l, what+" "), 8, 32)
	if err != nil {
		return 0, fmt.Errorf("bad %q", l)
	}
	if m&^0o777 != 0o100000 {
		return 0, fmt.Errorf("%s: %s %o: only regular files can be %s (no symlinks or submodules)", fp.name(), what, m, done)
	}
	return os.FileMode(m), nil
}

func gitExtended(fp *filePatch, l string) error {
	switch {
	case strings.HasPrefix(l, "new file mode "):
		m, err := regularMode(fp, l, "new file mode", "created")
		if err != nil {
			return err
		}
		fp.oldName = ""
		fp.mode = m & keptModeBits.Perm()
	case strings.HasPrefix(l, "deleted file mode "):
		if _, err := regularMode(fp, l, "deleted file mode", "deleted"); err != nil {
			return err
		}
		fp.newName = ""
	case strings.HasPrefix(l, "old mode "), strings.HasPrefix(l, "new mode "):
		return fmt.Errorf("%s: mode changes are not supported", fp.name())
	case strings.HasPrefix(l, "rename "), strings.HasPrefix(l, "copy "), strings.HasPrefix(l, "similarity "),
		strings.HasPrefix(l, "dissimilarity "):
		return fmt.Errorf("%s: renames and copies are not supported; send a delete and a create", fp.name())
	case strings.HasPrefix(l, "Binary files "), strings.HasPrefix(l, "GIT binary patch"):
		return fmt.Errorf("%s: binary patches are not supported; use a write request", fp.name())
	}
	return nil
}

// parseGitLine returns the path of "a/P b/P" (either side may be quoted).
func parseGitLine(s string) (string, error) {
	if strings.HasPrefix(s, `"`) || strings.HasSuffix(s, `"`) {
		a, rest, err := cutName(s)
		if err != nil {
			return "", err
		}
		b, rest, err := cutName(strings.TrimPrefix(rest, " "))
		if err != nil || rest != "" {
			return "", fmt.Errorf("cannot read the paths of diff --git %s", s)
		}
		return gitPair(a, b, s)
	}
	if len(s)%2 == 0 {
		return "", fmt.Errorf("cannot read the paths of diff --git %s", s)
	}
	half := len(s) / 2
	return gitPair(s[:half], s[half+1:], s)
}

func gitPair(a, b, s string) (string, error) {
	a, b = strings.TrimPrefix(a, "a/"), strings.TrimPrefix(b, "b/")
	if a != b || a == "" {
		return "", fmt.Errorf("cannot read the paths of diff --git %s (renames are not supported)", s)
	}
	return a, nil
}

// cutName reads one path, C-quoted as git quotes it or plain up to a space.
func cutName(s string) (name, rest string, err error) {
	if !strings.HasPrefix(s, `"`) {
		name, rest, _ = strings.Cut(s, " ")
		return name, rest, nil
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			name, err := unquoteC(s[:i+1])
			return name, s[i+1:], err
		}
	}
	return "", "", fmt.Errorf("unterminated quoted path %s", s)
}

// unquoteC undoes git's C-style path quoting (\t, \n, \", \\, \ooo).
func unquoteC(q string) (string, error) {
	s, err := strconv.Unquote(q)
	if err != nil {
		return "", fmt.Errorf("bad quoted path %s", q)
	}
	return s, nil
}

// headerName reads the path of a ---/+++ line: quoted, or plain up to a tab
// (diff -u puts a timestamp after it). "" means /dev/null.
func headerName(s string) (string, error) {
	var name string
	if strings.HasPrefix(s, `"`) {
		n, _, err := cutName(s)
		if err != nil {
			return "", err
		}
		name = n
	} else {
		name, _, _ = strings.Cut(s, "\t")
		name = strings.TrimRight(name, " ")
	}
	if name == "/dev/null" {
		return "", nil
	}
	if name == "" {
		return "", fmt.Errorf("empty path in file header")
	}
	return name, nil
}

func fileHeader(minus, plus string) (*filePatch, error) {
	a, err := headerName(strings.TrimPrefix(minus, "--- "))
	if err != nil {
		return nil, err
	}
	b, err := headerName(strings.TrimPrefix(plus, "+++ "))
	if err != nil {
		return nil, err
	}
	if a == "" && b == "" {
		return nil, fmt.Errorf("both sides of the file header are /dev/null")
	}
	if (a == "" || strings.HasPrefix(a, "a/")) && (b == "" || strings.HasPrefix(b, "b/")) {
		a, b = strings.TrimPrefix(a, "a/"), strings.TrimPrefix(b, "b/")
	}
	return &filePatch{oldName: a, newName: b}, nil
}

// parseHunk reads the hunk whose header is lines[i] and returns the index
// of the line after it. Lines are counted against the header, so a removed
// line that reads "--- x" is still a removed line.
func parseHunk(lines []string, i int) (hunk, int, error) {
	header := strings.TrimRight(lines[i], "\r\n")
	m := hunkHeader().FindStringSubmatch(header)
	if m == nil {
		return hunk{}, 0, fmt.Errorf("line %d: bad hunk header %q", i+1, header)
	}
	var n [4]int
	for k, s := range m[1:] {
		n[k] = 1
		if s == "" {
			continue
		}
		v, err := strconv.Atoi(s)
		if err != nil || v > maxHunkNumber {
			return hunk{}, 0, fmt.Errorf("line %d: number out of range in %q", i+1, header)
		}
		n[k] = v
	}
	h := hunk{header: header[:len(m[0])], oldStart: n[0], oldCount: n[1], newStart: n[2], newCount: n[3]}
	if (h.oldStart == 0 && h.oldCount != 0) || (h.newStart == 0 && h.newCount != 0) {
		return hunk{}, 0, fmt.Errorf("line %d: %q starts at line 0 but is not empty", i+1, header)
	}
	oldLeft, newLeft := h.oldCount, h.newCount
	i++
	for oldLeft > 0 || newLeft > 0 {
		if i >= len(lines) {
			return hunk{}, 0, fmt.Errorf("the patch ends inside the hunk (%d old and %d new lines missing)", oldLeft, newLeft)
		}
		l := lines[i]
		op := byte(' ')
		text := "\n" // an empty line: a blank context line whose space was trimmed
		if l != "\n" {
			op, text = l[0], l[1:]
		}
		switch {
		case op == ' ' && oldLeft > 0 && newLeft > 0:
			oldLeft--
			newLeft--
		case op == '-' && oldLeft > 0:
			oldLeft--
		case op == '+' && newLeft > 0:
			newLeft--
		case op == '\\' && len(h.lines) > 0:
			dropNewline(&h)
			i++
			continue
		default:
			return hunk{}, 0, fmt.Errorf("line %d: %q where the header still expects %d old and %d new lines", i+1, strings.TrimRight(l, "\n"), oldLeft, newLeft)
		}
		h.lines = append(h.lines, hunkLine{op: op, text: text})
		i++
	}
	if i < len(lines) && strings.HasPrefix(lines[i], `\`) && len(h.lines) > 0 {
		dropNewline(&h)
		i++
	}
	return h, i, nil
}

// dropNewline applies "\ No newline at end of file" to the last line.
func dropNewline(h *hunk) {
	last := &h.lines[len(h.lines)-1]
	last.text = strings.TrimSuffix(last.text, "\n")
}
